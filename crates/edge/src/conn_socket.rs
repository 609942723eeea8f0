//! A receiver connection's socket, shared by hyper's connection task and the fetch task, so the
//! fetch task can write a segment's chunks to every waiting receiver itself.
//!
//! Why: the coalescing goal is that every waiter gets its first byte within 5 ms of the edge's
//! first byte of the segment (nginx's cache lock polls every 500 ms). With the body handed to
//! hyper, a chunk landing woke 200 connection tasks that the runtime ran one after another on
//! its workers, each writing *all* the chunks it found (the whole segment, for the late ones)
//! before the next waiter wrote its first byte: on this 2-core machine 420–600 of 600 waiters
//! were within 5 ms (docs/dev/open_items.md, issue 14). Writing from the fetch task puts each
//! chunk on every waiting socket in chunk order, one `write` per socket, with no task wake in
//! between.
//!
//! How: hyper reads and writes through [`SharedIo`] as through the plain `TcpStream`. A streaming
//! response whose body has not started yet (`server::InFlightBody`) asks for the direct path
//! ([`ConnSocket::await_head_flush`]); when hyper has flushed the response head (its
//! `poll_flush` reaches the socket with nothing buffered) the connection registers with the
//! in-flight fetch (`InFlight::register_direct`) if that fetch has no body bytes yet. From then
//! on the fetch task writes each chunk to the socket ([`ConnSocket::write_direct`]). Hyper is
//! still handed the same body, chunk by chunk, once each chunk is on the wire, so its
//! Content-Length accounting, keep-alive and error handling are unchanged; the bytes it then
//! writes are already on the wire and are skipped. A direct write that would block (a receiver
//! reading slower than the source sends) or fails hands the connection back to hyper, which
//! writes the rest with ordinary back-pressure (and sees the error itself).
//!
//! Bookkeeping: `wire` counts the bytes put on the socket (by either side), `hyper_pos` the
//! bytes hyper has written or had skipped; `hyper_pos <= wire` always, and the bytes hyper
//! presents in `[hyper_pos, wire)` are exactly those the fetch task wrote there, because direct
//! writes happen only between the head's flush and the body's end (hyper has nothing else to
//! write then) and hyper is handed the same chunks in the same order. Only bodies with a known
//! length go direct (chunked framing would differ from the raw chunks).
//!
//! First-byte time (`ethle_reader_first_byte_lag_seconds`): for a direct reader, when the fetch
//! task's first `write` of body bytes to its socket returned; for a reader served by hyper (a
//! late joiner, a cached copy is not measured), at the first socket write after its first chunk
//! was handed to hyper.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::in_flight::InFlight;
use crate::metrics::Metrics;

/// Where the current streaming response of the connection stands.
#[derive(Default)]
enum Direct {
    /// Hyper writes everything (no streaming response, or one that did not go direct).
    #[default]
    Off,
    /// The body waits for its first chunk; register with this fetch once hyper flushed the head.
    AwaitingHeadFlush(Arc<InFlight>),
    /// The fetch task writes the body; `body_sent` bytes of it are on the wire.
    On { body_sent: u64 },
    /// The direct path stopped after `body_sent` bytes: hyper writes the rest.
    HandedBack { body_sent: u64 },
}

#[derive(Default)]
struct State {
    direct: Direct,
    /// Bytes put on the socket, by hyper or by the fetch task.
    wire: u64,
    /// Bytes hyper has written or had skipped (already on the wire).
    hyper_pos: u64,
    /// The body's waker (woken when the direct path ends or hands back).
    body_waker: Option<Waker>,
    /// A hyper-served reader's first chunk was handed over when the edge had it since this
    /// instant: the next socket write records the lag.
    first_byte_probe: Option<Instant>,
}

/// How far the body may be handed to hyper (see [`ConnSocket::body_progress`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyProgress {
    /// Hyper writes the body itself: hand it every chunk there is.
    Hyper,
    /// Hand hyper only what the fetch task already put on the wire: this many body bytes.
    OnWire(u64),
}

pub struct ConnSocket {
    stream: TcpStream,
    state: Mutex<State>,
    metrics: Arc<Metrics>,
}

impl ConnSocket {
    pub fn new(stream: TcpStream, metrics: Arc<Metrics>) -> Arc<ConnSocket> {
        Arc::new(ConnSocket { stream, state: Mutex::new(State::default()), metrics })
    }

    /// The body of a new streaming response (with a known length, nothing received yet) asks
    /// for the direct path; it is taken at hyper's next flush if `fetch` still has no bytes.
    pub fn await_head_flush(&self, fetch: Arc<InFlight>, waker: &Waker) {
        let mut s = self.state.lock().unwrap();
        s.direct = Direct::AwaitingHeadFlush(fetch);
        s.body_waker = Some(waker.clone());
    }

    /// How much of the body hyper may be handed now; stores `waker` to be woken when that
    /// changes other than by a chunk landing (hand-back, end of the direct path).
    pub fn body_progress(&self, waker: &Waker) -> BodyProgress {
        let mut s = self.state.lock().unwrap();
        match s.direct {
            Direct::AwaitingHeadFlush(_) => {
                s.body_waker = Some(waker.clone());
                BodyProgress::OnWire(0)
            }
            Direct::On { body_sent } => {
                s.body_waker = Some(waker.clone());
                BodyProgress::OnWire(body_sent)
            }
            Direct::Off | Direct::HandedBack { .. } => BodyProgress::Hyper,
        }
    }

    /// The body ended (hyper has been handed all of it, or an error): the next response starts
    /// afresh.
    pub fn body_done(&self) {
        let mut s = self.state.lock().unwrap();
        s.direct = Direct::Off;
        s.body_waker = None;
        s.first_byte_probe = None;
    }

    /// A hyper-served reader was handed its first chunk; the edge had it since `edge_first`.
    pub fn probe_first_byte(&self, edge_first: Instant) {
        let mut s = self.state.lock().unwrap();
        if !matches!(s.direct, Direct::HandedBack { body_sent } if body_sent > 0) {
            s.first_byte_probe = Some(edge_first); // (a direct write already recorded it)
        }
    }

    /// Wake the body (the fetch ended): it finishes the response through hyper.
    pub fn wake_body(&self) {
        let waker = self.state.lock().unwrap().body_waker.take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Write `chunk` (the next body bytes) to the socket from the fetch task. `edge_first` is
    /// when the edge got the fetch's first body byte. A write that would block or fails hands
    /// the rest of the body back to hyper.
    pub fn write_direct(&self, chunk: &[u8], edge_first: Instant) {
        let mut s = self.state.lock().unwrap();
        let Direct::On { body_sent } = s.direct else {
            return;
        };
        let mut written = 0;
        let mut handed_back = false;
        while !handed_back && written < chunk.len() {
            match self.stream.try_write(&chunk[written..]) {
                Ok(n) if n > 0 => written += n,
                Ok(_) => handed_back = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => handed_back = true, // WouldBlock: a slow reader; other errors: hyper sees them
            }
        }
        s.wire += written as u64;
        if written > 0 && body_sent == 0 {
            self.metrics.reader_first_byte_lag.observe(edge_first.elapsed());
        }
        let body_sent = body_sent + written as u64;
        if handed_back {
            Metrics::bump(&self.metrics.direct_handbacks);
            s.direct = Direct::HandedBack { body_sent };
            if let Some(w) = s.body_waker.take() {
                w.wake();
            }
        } else {
            s.direct = Direct::On { body_sent };
        }
    }

    /// Hyper flushed everything it buffered: a body waiting for the direct path registers now.
    fn on_hyper_flushed(self: &Arc<Self>) {
        let mut s = self.state.lock().unwrap();
        let Direct::AwaitingHeadFlush(fetch) = std::mem::take(&mut s.direct) else {
            return;
        };
        // Lock order: connection, then fetch (the fetch task never holds its lock while writing).
        if s.hyper_pos == s.wire && fetch.register_direct(self.clone()) {
            Metrics::bump(&self.metrics.direct_readers);
            s.direct = Direct::On { body_sent: 0 };
        } else if let Some(w) = s.body_waker.take() {
            w.wake();
        }
    }

    fn record_probe(&self, s: &mut State) {
        if let Some(edge_first) = s.first_byte_probe.take() {
            self.metrics.reader_first_byte_lag.observe(edge_first.elapsed());
        }
    }
}

/// Hyper's view of the connection: reads and writes go to the shared socket; writes of bytes
/// the fetch task already put on the wire are skipped.
pub struct SharedIo(pub Arc<ConnSocket>);

impl SharedIo {
    /// One write of hyper's `offered` bytes: skipped if the fetch task already put them on the
    /// wire, else written with `try_write` once the socket is writable.
    fn write_from_hyper(
        &self,
        cx: &mut Context<'_>,
        offered: usize,
        try_write: impl Fn(&TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let conn = &self.0;
        let mut s = conn.state.lock().unwrap();
        if let Some(n) = SharedIo::skip(&mut s, offered) {
            return Poll::Ready(Ok(n));
        }
        loop {
            ready!(conn.stream.poll_write_ready(cx))?;
            match try_write(&conn.stream) {
                Ok(n) => {
                    s.wire += n as u64;
                    s.hyper_pos += n as u64;
                    if n > 0 {
                        conn.record_probe(&mut s);
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Skip what is already on the wire; `Some(n)` when the whole call was skipped bytes.
    fn skip(s: &mut State, offered: usize) -> Option<usize> {
        let behind = s.wire - s.hyper_pos;
        if behind == 0 || offered == 0 {
            return None;
        }
        let n = behind.min(offered as u64);
        s.hyper_pos += n;
        Some(n as usize)
    }
}

impl AsyncRead for SharedIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let stream = &self.0.stream;
        loop {
            ready!(stream.poll_read_ready(cx))?;
            match stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.write_from_hyper(cx, buf.len(), |stream| stream.try_write(buf))
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let offered: usize = bufs.iter().map(|b| b.len()).sum();
        self.write_from_hyper(cx, offered, |stream| stream.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Hyper calls this only once its buffer is empty: a waiting body's head is on the wire.
        self.0.on_hyper_flushed();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // SAFETY: shutdown(2) on the descriptor the TcpStream owns; it stays open until drop.
        let rc = unsafe { libc::shutdown(self.0.stream.as_raw_fd(), libc::SHUT_WR) };
        if rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Ready(Err(io::Error::last_os_error()))
        }
    }
}
