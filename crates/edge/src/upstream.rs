//! The edge's HTTP/1.1 client towards the live source (the backhaul side).
//!
//! One TCP connection per fetch, which is what ETHLE asks for: held segments are prefetched over
//! up to x *parallel* connections, and each new connection starts from slow start, which is what
//! the BBR STARTUP model predicts (§IV). The edge owns the socket so it can read the kernel's
//! TCP_INFO on it (`getsockopt(TCP_INFO)`, Linux `tcp_get_info`): after the response headers have
//! arrived, `tcpi_rtt` (the smoothed RTT, µs) has samples from the handshake and the request, and
//! the source's sending MSS (see [`source_send_mss`]: not `tcpi_rcv_mss`, which after a small
//! first reply is still Linux's 536-byte start value or that reply's size). The paper measured
//! the RTT with a patched tcpdump on SEQ/ACK timestamps; TCP_INFO gives the same quantity from the
//! kernel without capturing.
//!
//! Small requests (playlists, MPDs: [`UpstreamClient::get_small`]) go over a few keep-alive
//! connections instead ([`SmallRequestPool`], HTTP/1.1 persistent connections, RFC 9112 §9.3): on
//! a 302 ms backhaul a new connection costs one RTT of handshake before the request, which
//! every playlist reload after the first is spared (docs/edge_demo.md). Segments never use the pool: each segment fetch has
//! its own new connection, the model's premise. TCP_INFO is read on whichever connection carried
//! the request, so the stream's first backhaul sample still comes from the connection that
//! carried its first playlist. A reused connection the source has closed meanwhile fails before
//! any response byte; the request (GET/HEAD, idempotent, RFC 9110 §9.2.2) is then sent once more
//! on a new connection.
//!
//! A new stream's first segment fetches would each wait one backhaul RTT for their handshake
//! after its first playlist has arrived; [`UpstreamClient::preconnect`] opens a few connections
//! (handshake only, no request) when the stream's first playlist request arrives, while the
//! playlist is fetched, and [`UpstreamClient::send`] takes one of those before connecting anew. Each still carries exactly one fetch and starts it from
//! the initial window (no data has crossed it), so the model's premise holds; one not used within
//! `PRECONNECTED_MAX_AGE` is closed unused (sources close connections that send no request).
//!
//! Deadlines: connect + response headers within `header_timeout`; then each body chunk within
//! `body_idle_timeout` (a slow or stalled source ends the fetch as a transient error).

use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use thiserror::Error;
use tokio::net::TcpStream;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum UpstreamError {
    #[error("upstream connect failed: {0}")]
    Connect(String),
    #[error("upstream timed out {0}")]
    Timeout(&'static str),
    #[error("upstream HTTP error: {0}")]
    Http(String),
    #[error("upstream body truncated: got {got} of {expected} bytes")]
    Truncated { got: u64, expected: u64 },
    #[error("upstream object larger than {limit} bytes")]
    TooLarge { limit: u64 },
}

/// `--upstream http://host:port/prefix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamBase {
    /// host:port, as in the Host header.
    pub authority: String,
    /// Path prefix without a trailing '/' ("" for the root).
    pub prefix: String,
}

impl UpstreamBase {
    pub fn parse(url: &str) -> Result<UpstreamBase, String> {
        let uri: Uri = url.parse().map_err(|e| format!("--upstream: {url:?} is not a URL ({e})"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("--upstream: only http:// sources are supported, got {url:?}"));
        }
        let host = uri.host().ok_or_else(|| format!("--upstream: {url:?} has no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        Ok(UpstreamBase { authority: format!("{host}:{port}"), prefix: uri.path().trim_end_matches('/').to_string() })
    }

    /// The source's URL for an edge path (the 301 target).
    pub fn url_for(&self, path_and_query: &str) -> String {
        format!("http://{}{}{}", self.authority, self.prefix, path_and_query)
    }
}

/// What TCP_INFO said about the upstream connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackhaulSample {
    pub rtt: Duration,
    pub mss_bytes: u64,
}

/// Which kind of connection carried a request (the cold-start timeline in the edge's log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionKind {
    /// Opened for this request: one backhaul RTT of handshake before it.
    New,
    /// Opened ahead by [`UpstreamClient::preconnect`] (handshake done, nothing sent before).
    Preconnected,
    /// A keep-alive connection of the small-request pool that carried earlier requests.
    Reused,
}

impl ConnectionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::New => "new",
            ConnectionKind::Preconnected => "preconnected",
            ConnectionKind::Reused => "reused",
        }
    }
}

/// A response whose headers have arrived.
pub struct UpstreamResponse {
    pub connection: ConnectionKind,
    pub status: StatusCode,
    pub content_length: Option<u64>,
    pub content_type: Option<String>,
    pub content_range: Option<String>,
    pub backhaul: Option<BackhaulSample>,
    pub body: Incoming,
}

/// Idle keep-alive connections kept for small requests (a handful of streams' playlists).
const SMALL_POOL_IDLE_MAX: usize = 4;
/// An idle connection older than this is closed rather than reused: sources close idle
/// connections after a while (nginx `keepalive_timeout` 75 s) and a reused dead one costs a retry.
const SMALL_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A standby small-request connection idle this long is replaced by a new one (before the
/// pool's own 30-s limit and any source's idle timeout).
const STANDBY_REFRESH: Duration = Duration::from_secs(20);
/// How often the standby task looks at the pool.
const STANDBY_CHECK: Duration = Duration::from_secs(2);

/// Longest a segment fetch waits for a connection still being opened: a handshake on the
/// longest backhaul here (334 ms) is done well within it; one that is not lost its SYN (Linux
/// retransmits it after 1 s) and a new connection is no slower.
const PRECONNECT_WAIT_MAX: Duration = Duration::from_secs(1);

/// Most connections opened ahead of segment fetches and waiting for one.
const PRECONNECTED_MAX: usize = 8;
/// A preconnected socket older than this is not used (hyper's server closes a connection that
/// sends no request within 30 s; a few RTTs is all start-up needs).
const PRECONNECTED_MAX_AGE: Duration = Duration::from_secs(5);

/// One open HTTP/1.1 connection to the source and a descriptor to read its TCP_INFO.
struct UpstreamConnection {
    sender: SendRequest<Empty<Bytes>>,
    info_fd: Option<OwnedFd>,
    idle_since: Instant,
    /// False once the source said `Connection: close`.
    reusable: bool,
}

/// Keep-alive connections for small requests (playlists, MPDs, HEADs); never for segments.
#[derive(Default)]
pub struct SmallRequestPool {
    idle: Mutex<Vec<UpstreamConnection>>,
    opened: std::sync::atomic::AtomicU64,
    reused: std::sync::atomic::AtomicU64,
}

impl SmallRequestPool {
    fn take(&self) -> Option<UpstreamConnection> {
        let mut idle = self.idle.lock().unwrap();
        while let Some(c) = idle.pop() {
            if !c.sender.is_closed() && c.idle_since.elapsed() < SMALL_POOL_IDLE_TIMEOUT {
                return Some(c);
            }
        }
        None
    }

    fn put(&self, mut c: UpstreamConnection) {
        if !c.reusable || c.sender.is_closed() {
            return;
        }
        c.idle_since = Instant::now();
        let mut idle = self.idle.lock().unwrap();
        idle.retain(|c| !c.sender.is_closed() && c.idle_since.elapsed() < SMALL_POOL_IDLE_TIMEOUT);
        if idle.len() < SMALL_POOL_IDLE_MAX {
            idle.push(c);
        }
    }

    /// Whether an open idle connection younger than `max_idle` is waiting.
    fn has_fresh(&self, max_idle: Duration) -> bool {
        self.idle.lock().unwrap().iter().any(|c| !c.sender.is_closed() && c.idle_since.elapsed() < max_idle)
    }

    /// (connections opened for small requests, small requests sent on a reused connection).
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.opened.load(Relaxed), self.reused.load(Relaxed))
    }
}

impl std::fmt::Debug for SmallRequestPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmallRequestPool").field("idle", &self.idle.lock().map(|i| i.len()).unwrap_or(0)).finish()
    }
}

/// New connections (handshake done, nothing sent) waiting for one segment fetch each, and how
/// many are still being opened: a fetch that finds none ready waits for one being opened (its
/// handshake is already under way) rather than starting another, unless earlier fetches already
/// wait for all of them.
#[derive(Default)]
pub struct Preconnected {
    state: Mutex<PreconnectState>,
    arrived: tokio::sync::Notify,
    used: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct PreconnectState {
    ready: Vec<UpstreamConnection>,
    /// Connections being opened.
    pending: usize,
    /// Fetches waiting for one of those.
    waiting: usize,
}

/// A fetch counted in `PreconnectState::waiting` until it has a connection or gives up.
struct WaitingForPreconnect<'a> {
    preconnected: &'a Preconnected,
    counted: bool,
}

impl Drop for WaitingForPreconnect<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.preconnected.state.lock().unwrap().waiting -= 1;
        }
    }
}

impl Preconnected {
    /// A ready connection, or the next one to finish opening if one is being opened that no
    /// earlier fetch waits for, within `max_wait`; `None`: open a new one.
    async fn take(&self, max_wait: Duration) -> Option<UpstreamConnection> {
        let mut me = WaitingForPreconnect { preconnected: self, counted: false };
        let deadline = tokio::time::Instant::now() + max_wait;
        loop {
            // Registered for `notify_waiters` from here on, so an arrival after the look below
            // still wakes this fetch.
            let arrived = self.arrived.notified();
            {
                let mut s = self.state.lock().unwrap();
                while let Some(c) = s.ready.pop() {
                    if !c.sender.is_closed() && c.idle_since.elapsed() < PRECONNECTED_MAX_AGE {
                        return Some(c);
                    }
                }
                let others_waiting = s.waiting - usize::from(me.counted);
                if s.pending <= others_waiting {
                    return None;
                }
                if !me.counted {
                    s.waiting += 1;
                    me.counted = true;
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return None; // a handshake this slow lost its SYN: dialing anew is no slower
            }
        }
    }

    /// Segment fetches that went over a preconnected socket so far.
    pub fn used(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Preconnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (ready, pending) = self.state.lock().map(|s| (s.ready.len(), s.pending)).unwrap_or((0, 0));
        f.debug_struct("Preconnected").field("ready", &ready).field("pending", &pending).finish()
    }
}

#[derive(Clone, Debug)]
pub struct UpstreamClient {
    pub base: UpstreamBase,
    pub header_timeout: Duration,
    pub body_idle_timeout: Duration,
    pub small_pool: Arc<SmallRequestPool>,
    pub preconnected: Arc<Preconnected>,
}

impl UpstreamClient {
    pub fn new(base: UpstreamBase, header_timeout: Duration, body_idle_timeout: Duration) -> UpstreamClient {
        UpstreamClient { base, header_timeout, body_idle_timeout, small_pool: Arc::default(), preconnected: Arc::default() }
    }

    /// Send one request on a new connection (a preconnected one if any is waiting) and wait for
    /// the response headers.
    pub async fn send(&self, method: Method, path_and_query: &str, range: Option<&str>) -> Result<UpstreamResponse, UpstreamError> {
        tokio::time::timeout(self.header_timeout, async {
            if let Some(mut c) = self.preconnected.take(PRECONNECT_WAIT_MAX).await {
                if let Ok(mut r) = self.request(&mut c, method.clone(), path_and_query, range, true).await {
                    self.preconnected.used.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    r.connection = ConnectionKind::Preconnected;
                    return Ok(r);
                }
                // Closed by the source while waiting: a new connection instead.
            }
            let mut c = self.connect().await?;
            self.request(&mut c, method, path_and_query, range, true).await
        })
        .await
        .map_err(|_| UpstreamError::Timeout("waiting for response headers"))?
    }

    /// Open `count` connections in the background for the next segment fetches (handshake only).
    pub fn preconnect(&self, count: usize) {
        for _ in 0..count {
            self.preconnected.state.lock().unwrap().pending += 1;
            let client = self.clone();
            tokio::spawn(async move {
                let opened = tokio::time::timeout(client.header_timeout, client.connect()).await;
                {
                    let mut s = client.preconnected.state.lock().unwrap();
                    s.pending -= 1;
                    if let Ok(Ok(c)) = opened {
                        if s.ready.len() < PRECONNECTED_MAX {
                            s.ready.push(c);
                        }
                    }
                }
                client.preconnected.arrived.notify_waiters();
            });
        }
    }

    /// Keep one idle keep-alive connection to the source open for small requests, opening a new
    /// one whenever none younger than `STANDBY_REFRESH` is idle (sources close connections that
    /// send nothing for a while: nginx `client_header_timeout` 60 s). A new stream's first
    /// playlist then costs one backhaul RTT, not two (no handshake first), as a player's request
    /// on a connection its browser opened ahead. The task runs until aborted.
    pub fn spawn_standby(&self) -> tokio::task::JoinHandle<()> {
        let client = self.clone();
        tokio::spawn(async move {
            loop {
                if !client.small_pool.has_fresh(STANDBY_REFRESH) {
                    if let Ok(Ok(c)) = tokio::time::timeout(client.header_timeout, client.connect()).await {
                        client.small_pool.opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        client.small_pool.put(c);
                    }
                }
                tokio::time::sleep(STANDBY_CHECK).await;
            }
        })
    }

    async fn connect(&self) -> Result<UpstreamConnection, UpstreamError> {
        let stream =
            TcpStream::connect(&self.base.authority).await.map_err(|e| UpstreamError::Connect(format!("{}: {e}", self.base.authority)))?;
        let _ = stream.set_nodelay(true);
        // A second descriptor for the same socket, so TCP_INFO can be read while hyper owns it.
        let info_fd = OwnedFd::dup(stream.as_raw_fd());
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| UpstreamError::Http(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(UpstreamConnection { sender, info_fd, idle_since: Instant::now(), reusable: true })
    }

    async fn request(
        &self,
        c: &mut UpstreamConnection,
        method: Method,
        path_and_query: &str,
        range: Option<&str>,
        close: bool,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base.prefix, path_and_query))
            .header(hyper::header::HOST, &self.base.authority);
        if close {
            request = request.header(hyper::header::CONNECTION, "close");
        }
        if let Some(r) = range {
            request = request.header(hyper::header::RANGE, r);
        }
        let request = request.body(Empty::<Bytes>::new()).map_err(|e| UpstreamError::Http(e.to_string()))?;
        c.sender.ready().await.map_err(|e| UpstreamError::Http(e.to_string()))?;
        let response = c.sender.send_request(request).await.map_err(|e| UpstreamError::Http(e.to_string()))?;
        let backhaul = c.info_fd.as_ref().and_then(|fd| tcp_info(fd.0));
        let header = |name: hyper::header::HeaderName| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let source_closes = header(hyper::header::CONNECTION).is_some_and(|v| v.to_ascii_lowercase().contains("close"));
        // The source will close after this response: never hand the connection out again.
        c.reusable &= !source_closes;
        Ok(UpstreamResponse {
            connection: ConnectionKind::New,
            status: response.status(),
            content_length: header(hyper::header::CONTENT_LENGTH).and_then(|v| v.parse().ok()),
            content_type: header(hyper::header::CONTENT_TYPE),
            content_range: header(hyper::header::CONTENT_RANGE),
            backhaul,
            body: response.into_body(),
        })
    }

    /// A small request on a pooled keep-alive connection (a new one if none is idle), up to the
    /// response headers; the connection goes back to the pool once the caller has read the body.
    async fn send_small(&self, method: Method, path_and_query: &str) -> Result<(UpstreamResponse, UpstreamConnection), UpstreamError> {
        use std::sync::atomic::Ordering::Relaxed;
        tokio::time::timeout(self.header_timeout, async {
            if let Some(mut c) = self.small_pool.take() {
                if let Ok(mut r) = self.request(&mut c, method.clone(), path_and_query, None, false).await {
                    self.small_pool.reused.fetch_add(1, Relaxed);
                    r.connection = ConnectionKind::Reused;
                    return Ok((r, c));
                }
                // Closed by the source while idle: once more on a new connection.
            }
            let mut c = self.connect().await?;
            self.small_pool.opened.fetch_add(1, Relaxed);
            let r = self.request(&mut c, method, path_and_query, None, false).await?;
            Ok((r, c))
        })
        .await
        .map_err(|_| UpstreamError::Timeout("waiting for response headers"))?
    }

    /// Next body chunk under the idle deadline; `Ok(None)` at the end.
    pub async fn next_chunk(&self, body: &mut Incoming) -> Result<Option<Bytes>, UpstreamError> {
        loop {
            let frame = tokio::time::timeout(self.body_idle_timeout, body.frame())
                .await
                .map_err(|_| UpstreamError::Timeout("waiting for body bytes"))?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(UpstreamError::Http(e.to_string())),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
    }

    /// GET a whole small object (a playlist, an MPD) up to `limit` bytes, on a pooled keep-alive
    /// connection.
    pub async fn get_small(&self, path_and_query: &str, limit: u64) -> Result<(UpstreamResponse, Bytes), UpstreamError> {
        let (mut response, connection) = self.send_small(Method::GET, path_and_query).await?;
        if response.content_length.is_some_and(|n| n > limit) {
            return Err(UpstreamError::TooLarge { limit });
        }
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut response.body).await? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > limit {
                return Err(UpstreamError::TooLarge { limit });
            }
        }
        if let Some(expected) = response.content_length {
            if body.len() as u64 != expected {
                return Err(UpstreamError::Truncated { got: body.len() as u64, expected });
            }
        }
        // Only a connection whose response was read to its end can carry the next request.
        self.small_pool.put(connection);
        Ok((response, Bytes::from(body)))
    }
}

/// A dup'ed descriptor closed on drop.
struct OwnedFd(i32);

impl OwnedFd {
    fn dup(fd: i32) -> Option<OwnedFd> {
        // SAFETY: dup on a valid open descriptor owned by the TcpStream above.
        let d = unsafe { libc::dup(fd) };
        (d >= 0).then_some(OwnedFd(d))
    }
}

impl Drop for OwnedFd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor (from dup) and close it once.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// Linux `TCPI_OPT_TIMESTAMPS` (include/uapi/linux/tcp.h); libc does not export it for Linux.
const TCPI_OPT_TIMESTAMPS: u8 = 1;
/// Bytes the timestamp option (10, padded to 12) takes from every segment's payload.
const TIMESTAMP_OPTION_BYTES: u32 = 12;

/// The MSS the source sends with, from the edge's (receiving) socket's TCP_INFO.
///
/// Linux: `tcpi_rcv_mss` is the receiver's *estimate* (`tcp_initialize_rcv_mss` starts it at
/// ≤ 536 bytes, `tcp_measure_rcv_mss` raises it only as larger segments arrive), so right after
/// a small playlist reply it reads 536 or that reply's size. The source's MSS is bounded by what
/// the edge announced in its SYN (`tcpi_advmss`, no options deducted) and, on a symmetric path,
/// by the source's own announced MSS, which is what limits the edge's sending size
/// (`tcpi_snd_mss`, options already deducted). Both sides carry the same options (timestamps
/// are negotiated for the connection), so the source's MSS is
/// `min(advmss − options, snd_mss)`; a segment actually seen larger (`rcv_mss`) wins (asymmetric
/// path). 0 fields (not connected) fall back to 1448 (Ethernet with timestamps).
pub fn source_send_mss(rcv_mss: u32, snd_mss: u32, advmss: u32, options: u8) -> u64 {
    let overhead = if options & TCPI_OPT_TIMESTAMPS != 0 { TIMESTAMP_OPTION_BYTES } else { 0 };
    let bound = match (advmss.checked_sub(overhead).filter(|m| *m > 0), snd_mss) {
        (Some(a), 0) => a,
        (None, 0) => return if rcv_mss > 0 { rcv_mss as u64 } else { 1448 },
        (Some(a), s) => a.min(s),
        (None, s) => s,
    };
    bound.max(rcv_mss) as u64
}

/// TCP_INFO's smoothed RTT and the source's sending MSS for a connected TCP socket.
fn tcp_info(fd: i32) -> Option<BackhaulSample> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc =
        unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut libc::tcp_info as *mut libc::c_void, &mut len) };
    if rc != 0 || info.tcpi_rtt == 0 {
        return None;
    }
    Some(BackhaulSample {
        rtt: Duration::from_micros(info.tcpi_rtt as u64),
        mss_bytes: source_send_mss(info.tcpi_rcv_mss, info.tcpi_snd_mss, info.tcpi_advmss, info.tcpi_options),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_url_gives_authority_and_prefix() {
        let b = UpstreamBase::parse("http://10.0.0.2:8080/live/").unwrap();
        assert_eq!(b.authority, "10.0.0.2:8080");
        assert_eq!(b.prefix, "/live");
        assert_eq!(b.url_for("/hd/s.m3u8"), "http://10.0.0.2:8080/live/hd/s.m3u8");
        assert_eq!(UpstreamBase::parse("http://origin").unwrap().authority, "origin:80");
    }

    #[test]
    fn source_mss_after_a_small_first_reply_is_the_full_ethernet_segment_not_the_536_start_value() {
        // Ethernet path, timestamps on, the first reply was a 582-byte playlist (the demo's case).
        assert_eq!(source_send_mss(582, 1448, 1460, TCPI_OPT_TIMESTAMPS), 1448);
        assert_eq!(source_send_mss(536, 1448, 1460, TCPI_OPT_TIMESTAMPS), 1448);
        // Without timestamps the whole announced MSS is payload.
        assert_eq!(source_send_mss(536, 1460, 1460, 0), 1460);
    }

    #[test]
    fn source_mss_is_capped_by_the_smaller_side_and_raised_by_a_larger_segment_seen() {
        // The source announced 1400 (a tunnel on its side): the edge's snd_mss shows it.
        assert_eq!(source_send_mss(536, 1388, 1460, TCPI_OPT_TIMESTAMPS), 1388);
        // The edge's own MTU is smaller: its advmss bounds what the source may send.
        assert_eq!(source_send_mss(536, 1448, 1240, TCPI_OPT_TIMESTAMPS), 1228);
        // Asymmetric path: a segment larger than the bound was actually received.
        assert_eq!(source_send_mss(1448, 1388, 1460, TCPI_OPT_TIMESTAMPS), 1448);
        // Not connected yet: nothing known.
        assert_eq!(source_send_mss(0, 0, 0, 0), 1448);
    }

    #[tokio::test]
    async fn source_mss_read_on_a_loopback_connection_after_a_tiny_reply_exceeds_536() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(b"#EXTM3U\n").await.unwrap();
            s
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 8];
        c.read_exact(&mut buf).await.unwrap();
        let sample = tcp_info(c.as_raw_fd()).expect("TCP_INFO on a connected socket");
        // Loopback's MTU is 65536: the source may send far more than Linux's 536-byte start value.
        assert!(sample.mss_bytes > 536, "{sample:?}");
        drop(server.await.unwrap());
    }

    #[tokio::test]
    async fn a_fetch_waits_for_a_connection_still_being_opened_instead_of_opening_another() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = UpstreamBase::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let client = UpstreamClient::new(base, Duration::from_secs(5), Duration::from_secs(5));
        client.preconnected.state.lock().unwrap().pending = 1; // one handshake under way
        let waiter = {
            let c = client.clone();
            tokio::spawn(async move { c.preconnected.take(Duration::from_secs(5)).await.is_some() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "gave up on the connection being opened");
        // A second fetch: the one being opened is already waited for, so it opens its own.
        assert!(client.preconnected.take(Duration::from_secs(5)).await.is_none());
        let c = client.connect().await.unwrap();
        {
            let mut s = client.preconnected.state.lock().unwrap();
            s.pending = 0;
            s.ready.push(c);
        }
        client.preconnected.arrived.notify_waiters();
        assert!(waiter.await.unwrap(), "the waiting fetch did not get the connection that opened");
        assert_eq!(client.preconnected.state.lock().unwrap().waiting, 0);
    }

    #[tokio::test]
    async fn a_fetch_waiting_for_a_connection_that_fails_to_open_opens_its_own() {
        let base = UpstreamBase::parse("http://127.0.0.1:9").unwrap();
        let client = UpstreamClient::new(base, Duration::from_secs(5), Duration::from_secs(5));
        client.preconnected.state.lock().unwrap().pending = 1;
        let waiter = {
            let c = client.clone();
            tokio::spawn(async move { c.preconnected.take(Duration::from_secs(5)).await.is_some() })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.preconnected.state.lock().unwrap().pending = 0; // the handshake failed
        client.preconnected.arrived.notify_waiters();
        assert!(!waiter.await.unwrap());
        assert_eq!(client.preconnected.state.lock().unwrap().waiting, 0);
    }

    #[tokio::test]
    async fn a_fetch_stops_waiting_for_a_handshake_that_takes_longer_than_its_bound() {
        let base = UpstreamBase::parse("http://127.0.0.1:9").unwrap();
        let client = UpstreamClient::new(base, Duration::from_secs(5), Duration::from_secs(5));
        client.preconnected.state.lock().unwrap().pending = 1; // never completes
        let t0 = Instant::now();
        assert!(client.preconnected.take(Duration::from_millis(100)).await.is_none());
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(100) && waited < Duration::from_secs(2), "{waited:?}");
        assert_eq!(client.preconnected.state.lock().unwrap().waiting, 0);
    }

    #[test]
    fn bad_upstream_urls_are_refused_naming_the_option() {
        for bad in ["https://x/", "ftp://x", "not a url", "/just/a/path"] {
            let e = UpstreamBase::parse(bad).unwrap_err();
            assert!(e.starts_with("--upstream:"), "{e}");
        }
    }
}
