//! Segments through the edge: cache, then the coalescing lock, then one upstream fetch.
//!
//! `get` serves a receiver: a cache hit, or a read of the open fetch of the same segment (a
//! coalesced wait), or — for the first asker — a new fetch that everyone after it reads. `prefetch`
//! starts a fetch nobody waits for yet (the held segments); `size_of` does the same and returns
//! the segment's size from the fetch's head (a new stream's bitrate, with no extra request).
//! Fetches run in their own task, so a receiver that goes away does not cancel a download others
//! (or the cache) need. Each fetch logs "segment fetch started" and "upstream first byte" (with
//! the kind of connection it rode) for the start-up timeline.
//!
//! The fetch task retries (up to `retries` more times) while nothing has been handed to readers:
//! connect errors, timeouts before the head, 5xx. After the head, a failure (reset, truncation
//! against Content-Length, a body stalled past the idle deadline) ends every reader's body with an
//! error; the segment is not cached, and the next request fetches it afresh. Complete bodies are
//! cached *before* the lock is released, so a request arriving between the two still finds them.
//! A status other than 200/206 is passed to the readers as is and not cached.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::Method;
use tracing::{debug, info, warn};

use crate::coalescing_lock::{CoalescingLock, LockOutcome, Locked, WritePermit};
use crate::in_flight::{End, Head, InFlight};
use crate::metrics::Metrics;
use crate::segment_cache::{CachedObject, SegmentCache, SegmentKey, StreamPosition};
use crate::upstream::{UpstreamClient, UpstreamError};

/// What a receiver gets for a segment request.
pub enum Served {
    Cached(CachedObject),
    /// Read `body` from chunk 0 on; `head` is the source's.
    Streaming {
        head: Head,
        body: Arc<InFlight>,
    },
    /// No copy could be had: the status to answer (502/504) and why.
    Failed {
        status: u16,
        reason: String,
    },
}

pub struct SegmentFetcher {
    client: UpstreamClient,
    lock: Mutex<CoalescingLock<SegmentKey, Arc<InFlight>>>,
    cache: Mutex<SegmentCache>,
    metrics: Arc<Metrics>,
    max_object_bytes: u64,
    retries: u32,
}

/// Ends the fetch as `Dangling` if the fetch task is dropped before it released the permit.
struct PermitGuard {
    fetcher: Arc<SegmentFetcher>,
    key: SegmentKey,
    permit: Option<WritePermit>,
    body: Arc<InFlight>,
}

impl PermitGuard {
    fn release(mut self, outcome: LockOutcome, end: End) {
        if let Some(p) = self.permit.take() {
            self.fetcher.lock.lock().unwrap().release(&self.key, p, outcome);
        }
        self.body.finish(end);
    }
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            self.fetcher.lock.lock().unwrap().permit_dropped(&self.key, p);
            self.body.finish(End::Failed { outcome: LockOutcome::Dangling, reason: "fetch task ended without a result".into() });
        }
    }
}

impl SegmentFetcher {
    pub fn new(client: UpstreamClient, cache_bytes: u64, max_object_bytes: u64, retries: u32, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(SegmentFetcher {
            client,
            lock: Mutex::new(CoalescingLock::new()),
            cache: Mutex::new(SegmentCache::new(cache_bytes)),
            metrics,
            max_object_bytes,
            retries,
        })
    }

    pub fn cache_used_bytes(&self) -> u64 {
        self.cache.lock().unwrap().used_bytes()
    }

    pub fn evict_left_window(&self, stream: &str, first_in_window: u64) {
        let mut cache = self.cache.lock().unwrap();
        cache.evict_left_window(stream, first_in_window);
        self.publish_cache_gauges(&cache);
    }

    fn publish_cache_gauges(&self, cache: &SegmentCache) {
        use std::sync::atomic::Ordering::Relaxed;
        self.metrics.cache_bytes.store(cache.used_bytes(), Relaxed);
        self.metrics.cache_evictions.store(cache.evictions(), Relaxed);
    }

    /// Whether `key` is cached or being fetched.
    pub fn has_or_fetching(&self, key: &SegmentKey) -> bool {
        // Lock order everywhere: coalescing lock, then cache.
        let lock = self.lock.lock().unwrap();
        lock.is_open(key) || self.cache.lock().unwrap().get(key).is_some()
    }

    /// Serve a receiver's request for `key`.
    pub async fn get(self: &Arc<Self>, key: &SegmentKey, position: Option<StreamPosition>) -> Served {
        let mut last_reason = String::from("no attempt");
        for _ in 0..=self.retries + 1 {
            let body = match self.acquire(key, position.clone()) {
                Acquired::Cached(o) => return Served::Cached(o),
                Acquired::Reading(b) => b,
            };
            match body.head().await {
                Ok(head) => return Served::Streaming { head, body },
                Err(End::Failed { outcome, reason }) if outcome.worth_retrying() => last_reason = reason,
                Err(End::Failed { reason, .. }) => return Served::Failed { status: 502, reason },
                Err(End::Complete) => return Served::Failed { status: 502, reason: "fetch ended without a response".into() },
            }
        }
        let status = if last_reason.contains("timed out") { 504 } else { 502 };
        Served::Failed { status, reason: last_reason }
    }

    /// Start fetching `key` if it is neither cached nor being fetched; true if a fetch started.
    pub fn prefetch(self: &Arc<Self>, key: &SegmentKey, position: Option<StreamPosition>) -> bool {
        matches!(self.watch(key, position), Watched::Started(_))
    }

    /// The size of `key` in bytes: the cached copy's, or the Content-Length of the open fetch's
    /// head (a fetch is started, as a prefetch, if none is open), or, without one, the bytes of
    /// the complete body. `None` if the fetch fails or the source answers other than 200.
    /// A new stream's bitrate comes from this (the segment is needed anyway, so no extra request
    /// and no extra backhaul round trip, where a HEAD would cost one).
    pub async fn size_of(self: &Arc<Self>, key: &SegmentKey, position: Option<StreamPosition>) -> Option<u64> {
        let body = match self.watch(key, position) {
            Watched::Cached(o) => return (o.status == 200).then_some(o.body.len() as u64),
            Watched::Started(b) | Watched::Open(b) => b,
        };
        let head = body.head().await.ok()?;
        if head.status != 200 {
            return None;
        }
        if let Some(n) = head.content_length {
            return Some(n);
        }
        let mut next = 0;
        while let Some(chunk) = body.next_chunk(&mut next).await {
            chunk.ok()?;
        }
        Some(body.received_bytes())
    }

    /// The cached copy of `key`, or its open fetch, starting one (not counted as a receiver's)
    /// if there is neither.
    fn watch(self: &Arc<Self>, key: &SegmentKey, position: Option<StreamPosition>) -> Watched {
        let mut lock = self.lock.lock().unwrap();
        if let Some(o) = self.cache.lock().unwrap().get(key) {
            return Watched::Cached(o.clone());
        }
        let body = Arc::new(InFlight::default());
        match lock.acquire(key, || body.clone()) {
            Locked::Write(permit) => {
                drop(lock);
                Metrics::bump(&self.metrics.prefetches);
                self.spawn_fetch(key.clone(), permit, body.clone(), position);
                Watched::Started(body)
            }
            Locked::Read { lock: read, shared } => {
                // Not a receiver: do not count as a waiter.
                lock.wait_timed_out(key, read);
                Watched::Open(shared)
            }
        }
    }

    fn acquire(self: &Arc<Self>, key: &SegmentKey, position: Option<StreamPosition>) -> Acquired {
        if let Some(o) = self.cache.lock().unwrap().get(key) {
            Metrics::bump(&self.metrics.cache_hits);
            return Acquired::Cached(o.clone());
        }
        let mut lock = self.lock.lock().unwrap();
        // A fetch may have completed between the cache look-up and taking the lock.
        if let Some(o) = self.cache.lock().unwrap().get(key) {
            Metrics::bump(&self.metrics.cache_hits);
            return Acquired::Cached(o.clone());
        }
        let fresh = Arc::new(InFlight::default());
        match lock.acquire(key, || fresh.clone()) {
            Locked::Write(permit) => {
                drop(lock);
                Metrics::bump(&self.metrics.cache_misses);
                self.spawn_fetch(key.clone(), permit, fresh.clone(), position);
                Acquired::Reading(fresh)
            }
            Locked::Read { shared, .. } => {
                Metrics::bump(&self.metrics.coalesced_waits);
                Acquired::Reading(shared)
            }
        }
    }

    fn spawn_fetch(self: &Arc<Self>, key: SegmentKey, permit: WritePermit, body: Arc<InFlight>, position: Option<StreamPosition>) {
        let guard = PermitGuard { fetcher: self.clone(), key, permit: Some(permit), body };
        let fetcher = self.clone();
        tokio::spawn(async move { fetcher.fetch(guard, position).await });
    }

    async fn fetch(&self, guard: PermitGuard, position: Option<StreamPosition>) {
        let key = guard.key.clone();
        let mut last_error = UpstreamError::Http("no attempt".into());
        for attempt in 0..=self.retries {
            Metrics::bump(&self.metrics.upstream_fetches);
            // The cold-start timeline (bench/ethle_real.py) reads these two lines.
            info!(segment = %key.path_and_query, attempt, "segment fetch started");
            let mut response = match self.client.send(Method::GET, &key.path_and_query, key.range.as_deref()).await {
                Ok(r) if r.status.is_server_error() => {
                    last_error = UpstreamError::Http(format!("status {}", r.status.as_u16()));
                    Metrics::bump(&self.metrics.upstream_errors);
                    warn!(segment = %key.path_and_query, attempt, status = r.status.as_u16(), "upstream 5xx");
                    continue;
                }
                Ok(r) => r,
                Err(e) => {
                    Metrics::bump(&self.metrics.upstream_errors);
                    warn!(segment = %key.path_and_query, attempt, error = %e, "upstream fetch failed before the head");
                    last_error = e;
                    continue;
                }
            };
            let status = response.status.as_u16();
            let head = Head {
                status,
                content_type: response.content_type.clone(),
                content_range: response.content_range.clone(),
                content_length: response.content_length,
            };
            if response.content_length.is_some_and(|n| n > self.max_object_bytes) {
                let e = UpstreamError::TooLarge { limit: self.max_object_bytes };
                warn!(segment = %key.path_and_query, error = %e, "segment refused");
                guard.release(LockOutcome::GiveUp, End::Failed { outcome: LockOutcome::GiveUp, reason: e.to_string() });
                return;
            }
            guard.body.set_head(head.clone());
            let connection = response.connection.as_str();
            let result = self.stream_body(&guard.body, &mut response.body, response.content_length, &key, connection).await;
            match result {
                Ok(()) if status == 200 || status == 206 => {
                    let object = CachedObject {
                        status,
                        content_type: head.content_type,
                        content_range: head.content_range,
                        body: guard.body.body(),
                    };
                    {
                        let mut cache = self.cache.lock().unwrap();
                        cache.insert(key.clone(), object, position);
                        self.publish_cache_gauges(&cache);
                    }
                    debug!(segment = %key.path_and_query, bytes = guard.body.received_bytes(), "segment fetched");
                    guard.release(LockOutcome::Done, End::Complete);
                }
                Ok(()) => guard.release(LockOutcome::GiveUp, End::Complete),
                Err(e) => {
                    Metrics::bump(&self.metrics.upstream_errors);
                    warn!(segment = %key.path_and_query, error = %e, "upstream body failed; readers get an error");
                    guard.release(LockOutcome::TransientError, End::Failed { outcome: LockOutcome::TransientError, reason: e.to_string() });
                }
            }
            return;
        }
        let outcome = LockOutcome::TransientError;
        guard.release(outcome, End::Failed { outcome, reason: last_error.to_string() });
    }

    async fn stream_body(
        &self,
        into: &InFlight,
        body: &mut hyper::body::Incoming,
        expected: Option<u64>,
        key: &SegmentKey,
        connection: &str,
    ) -> Result<(), UpstreamError> {
        let mut got = 0u64;
        while let Some(chunk) = self.client.next_chunk(body).await? {
            if got == 0 {
                info!(segment = %key.path_and_query, connection, "upstream first byte");
            }
            got += chunk.len() as u64;
            if got > self.max_object_bytes || expected.is_some_and(|n| got > n) {
                return Err(UpstreamError::TooLarge { limit: expected.unwrap_or(self.max_object_bytes) });
            }
            into.push(chunk);
        }
        match expected {
            Some(n) if n != got => Err(UpstreamError::Truncated { got, expected: n }),
            _ => Ok(()),
        }
    }
}

enum Watched {
    Cached(CachedObject),
    /// A fetch this call started.
    Started(Arc<InFlight>),
    /// A fetch that was already open.
    Open(Arc<InFlight>),
}

enum Acquired {
    Cached(CachedObject),
    Reading(Arc<InFlight>),
}

/// Bytes of a response body for a receiver, from the cache or the open fetch.
pub fn cached_body(o: &CachedObject) -> Bytes {
    o.body.clone()
}
