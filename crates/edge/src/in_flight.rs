//! One upstream fetch in progress, shared by every receiver that asked for the segment.
//!
//! The writer (the task that fetches) sets the response head, appends body chunks as they arrive
//! from the backhaul and ends the fetch; readers wait on a `tokio::sync::watch` version counter
//! that the writer bumps on every change, so each reader wakes the moment a chunk lands (no
//! polling). Every reader gets the whole body from its first byte, in order, however late it
//! joined. A fetch that fails after bytes were handed out ends readers' bodies with an error, so a
//! receiver sees a broken response, never a short one passed off as complete.
//!
//! Readers that registered before the first body byte (`register_direct`, see `conn_socket`)
//! are not woken per chunk: the writer puts each chunk on their sockets itself, in chunk order,
//! and wakes them once when the fetch ends.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::watch;

use crate::coalescing_lock::LockOutcome;
use crate::conn_socket::ConnSocket;

/// Bytes written to each direct reader per round: a 16 KiB copy is a few µs, so 200 readers
/// all have their first bytes within about a millisecond of the chunk landing.
const DIRECT_WRITE_SLICE_BYTES: usize = 16 * 1024;

/// The response head as the source sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_range: Option<String>,
    pub content_length: Option<u64>,
}

/// How the fetch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    Complete,
    Failed { outcome: LockOutcome, reason: String },
}

#[derive(Default)]
struct State {
    head: Option<Head>,
    chunks: Vec<Bytes>,
    received_bytes: u64,
    first_chunk_at: Option<Instant>,
    end: Option<End>,
    /// Connections the writer writes each chunk to itself (registered before the first chunk).
    direct: Vec<Arc<ConnSocket>>,
}

pub struct InFlight {
    state: Mutex<State>,
    version: watch::Sender<u64>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight { state: Mutex::new(State::default()), version: watch::channel(0).0 }
    }
}

impl InFlight {
    fn update(&self, f: impl FnOnce(&mut State)) {
        {
            let mut s = self.state.lock().unwrap();
            if s.end.is_some() {
                return; // an ended fetch never changes again
            }
            f(&mut s);
        }
        self.version.send_modify(|v| *v += 1);
    }

    pub fn set_head(&self, head: Head) {
        self.update(|s| s.head = Some(head));
    }

    pub fn push(&self, chunk: Bytes) {
        let (direct, first) = {
            let mut s = self.state.lock().unwrap();
            if s.end.is_some() {
                return; // an ended fetch never changes again
            }
            s.received_bytes += chunk.len() as u64;
            let first = *s.first_chunk_at.get_or_insert_with(Instant::now);
            s.chunks.push(chunk.clone());
            (s.direct.clone(), first)
        };
        // Outside the lock, before the per-chunk wake of the other readers: round-robin over
        // the registered readers, one slice each per round, so the last reader's first byte
        // waits for 199 slice copies, not for 199 whole chunks (up to 64 KiB+ each).
        for slice in chunk.chunks(DIRECT_WRITE_SLICE_BYTES) {
            for conn in &direct {
                conn.write_direct(slice, first);
            }
        }
        self.version.send_modify(|v| *v += 1);
    }

    pub fn finish(&self, end: End) {
        let mut direct = Vec::new();
        self.update(|s| {
            s.end = Some(end);
            direct = std::mem::take(&mut s.direct);
        });
        for conn in &direct {
            conn.wake_body();
        }
    }

    /// Take over writing the body to `conn` if no body byte has arrived yet (and the fetch is
    /// still open); false otherwise (the reader is served by its own connection task).
    pub fn register_direct(&self, conn: Arc<ConnSocket>) -> bool {
        let mut s = self.state.lock().unwrap();
        if !s.chunks.is_empty() || s.end.is_some() {
            return false;
        }
        s.direct.push(conn);
        true
    }

    /// Whether a reader may still register for direct writes.
    pub fn body_not_started(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.chunks.is_empty() && s.end.is_none()
    }

    pub fn received_bytes(&self) -> u64 {
        self.state.lock().unwrap().received_bytes
    }

    /// When the first body byte reached the edge.
    pub fn first_chunk_at(&self) -> Option<Instant> {
        self.state.lock().unwrap().first_chunk_at
    }

    /// The whole body so far, as one buffer (for the cache, once complete).
    pub fn body(&self) -> Bytes {
        let s = self.state.lock().unwrap();
        let mut all = Vec::with_capacity(s.received_bytes as usize);
        for c in &s.chunks {
            all.extend_from_slice(c);
        }
        Bytes::from(all)
    }

    /// Wait for the response head; `Err` with how the fetch ended if it ended without one.
    pub async fn head(&self) -> Result<Head, End> {
        let mut rx = self.version.subscribe();
        loop {
            {
                let s = self.state.lock().unwrap();
                if let Some(h) = &s.head {
                    return Ok(h.clone());
                }
                if let Some(e) = &s.end {
                    return Err(e.clone());
                }
            }
            if rx.changed().await.is_err() {
                return Err(End::Failed { outcome: LockOutcome::Dangling, reason: "fetch vanished".into() });
            }
        }
    }

    /// A version receiver: `changed()` resolves at the next change after this call.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Without waiting: `None` if nothing new yet, else what `next_chunk` would return.
    pub fn try_next_chunk(&self, next_index: &mut usize) -> Option<Option<Result<Bytes, String>>> {
        let s = self.state.lock().unwrap();
        if let Some(c) = s.chunks.get(*next_index) {
            *next_index += 1;
            return Some(Some(Ok(c.clone())));
        }
        match &s.end {
            Some(End::Complete) => Some(None),
            Some(End::Failed { reason, .. }) => Some(Some(Err(reason.clone()))),
            None => None,
        }
    }

    /// The next chunk after `*next_index`: `None` at a complete end, `Some(Err)` on failure.
    pub async fn next_chunk(&self, next_index: &mut usize) -> Option<Result<Bytes, String>> {
        let mut rx = self.version.subscribe();
        loop {
            {
                let s = self.state.lock().unwrap();
                if let Some(c) = s.chunks.get(*next_index) {
                    *next_index += 1;
                    return Some(Ok(c.clone()));
                }
                match &s.end {
                    Some(End::Complete) => return None,
                    Some(End::Failed { reason, .. }) => return Some(Err(reason.clone())),
                    None => {}
                }
            }
            if rx.changed().await.is_err() {
                return Some(Err("fetch vanished".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn head() -> Head {
        Head { status: 200, content_type: None, content_range: None, content_length: Some(6) }
    }

    #[tokio::test]
    async fn a_late_reader_gets_every_chunk_from_the_start_in_order() {
        let f = Arc::new(InFlight::default());
        f.set_head(head());
        f.push(Bytes::from_static(b"abc"));
        f.push(Bytes::from_static(b"def"));
        f.finish(End::Complete);
        let mut i = 0;
        let mut got = Vec::new();
        while let Some(c) = f.next_chunk(&mut i).await {
            got.extend_from_slice(&c.unwrap());
        }
        assert_eq!(got, b"abcdef");
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_when_a_chunk_arrives() {
        let f = Arc::new(InFlight::default());
        let reader = {
            let f = f.clone();
            tokio::spawn(async move {
                let mut i = 0;
                f.next_chunk(&mut i).await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!reader.is_finished());
        f.push(Bytes::from_static(b"x"));
        let got = tokio::time::timeout(Duration::from_secs(1), reader).await.unwrap().unwrap();
        assert_eq!(got, Some(Ok(Bytes::from_static(b"x"))));
    }

    #[tokio::test]
    async fn a_failure_after_some_bytes_ends_readers_with_an_error_not_a_short_body() {
        let f = InFlight::default();
        f.set_head(head());
        f.push(Bytes::from_static(b"abc"));
        f.finish(End::Failed { outcome: LockOutcome::TransientError, reason: "reset".into() });
        let mut i = 0;
        assert!(f.next_chunk(&mut i).await.unwrap().is_ok());
        assert_eq!(f.next_chunk(&mut i).await, Some(Err("reset".to_string())));
    }

    #[tokio::test]
    async fn nothing_changes_after_the_end() {
        let f = InFlight::default();
        f.finish(End::Failed { outcome: LockOutcome::GiveUp, reason: "404".into() });
        f.set_head(head());
        f.push(Bytes::from_static(b"late"));
        assert!(f.head().await.is_err());
        assert_eq!(f.received_bytes(), 0);
    }
}
