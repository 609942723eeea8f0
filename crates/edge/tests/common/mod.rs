//! Test doubles for the edge: a scripted live source (an HLS origin on loopback that can fail in
//! named ways) and a raw HTTP/1.1 receiver that records when its first body byte arrived and
//! whether the body was complete. Both keep their own bookkeeping (fetch counts, timestamps).
//! The source keeps a connection open for the next request unless the request says
//! `Connection: close` or a fault ended it, and logs which connection carried each request.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use tcpvideo_edge::upstream::UpstreamBase;
use tcpvideo_edge::{serve, Edge, EdgeConfig};

/// A way for the source to answer one request for a segment.
#[derive(Clone, Debug)]
pub enum Fault {
    Status500,
    /// Send nothing for this long (the edge's header deadline should fire).
    HangBeforeHeaders(Duration),
    /// Send the head and half the body, then pause this long before the rest.
    StallMidBody(Duration),
    /// Announce the full Content-Length, send `bytes`, close cleanly.
    Truncate(usize),
    /// Send `bytes` of the body, then reset the connection (RST).
    ResetAfter(usize),
}

/// A live number-template MPD, ffmpeg-dash-shaped: 15 Mbit/s, 2-s segments.
pub const LIVE_MPD: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic" minimumUpdatePeriod="PT2S" availabilityStartTime="2026-11-24T02:00:00Z" publishTime="2026-11-24T02:01:00Z" timeShiftBufferDepth="PT12S" minBufferTime="PT4S">
  <Period id="0" start="PT0S">
    <AdaptationSet id="0" contentType="video" segmentAlignment="true">
      <Representation id="0" mimeType="video/mp4" codecs="avc1.640028" bandwidth="15000000" width="1920" height="1080">
        <SegmentTemplate timescale="1000" duration="2000" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1"/>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>"#;

pub struct SourceState {
    /// Sequence number of the newest segment the source lists.
    pub newest: AtomicU64,
    pub window: u64,
    pub segment_bytes: usize,
    /// Pause between the response head and the body of every segment (to pile up receivers).
    pub body_delay: Mutex<Duration>,
    /// When set, segment bodies wait after the head until the test opens this gate.
    pub body_gate: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    pub fetches: Mutex<HashMap<String, u32>>,
    pub faults: Mutex<HashMap<String, VecDeque<Fault>>>,
    /// When the source wrote the first body byte of each path (last time).
    pub first_body_write: Mutex<HashMap<String, Instant>>,
    /// Extra tags in the media playlist header (e.g. EXT-X-BITRATE goes on segments instead).
    pub bitrate_kbps: u64,
    /// TCP connections accepted so far, and when each was accepted.
    pub connections: AtomicU64,
    pub accepted_at: Mutex<Vec<Instant>>,
    /// Pause before answering a HEAD (a backhaul round trip for the bitrate probe).
    pub head_delay: Mutex<Duration>,
    /// A backhaul round trip to emulate on loopback (zero: none). A connection counts as open
    /// one RTT after it was accepted (its handshake), and each response head is written one RTT
    /// after its request could have been sent: max(request seen, accepted + RTT) + RTT. Bodies
    /// then flow at loopback speed, so first-byte times count RTTs as a real path would.
    pub rtt: Mutex<Duration>,
    /// Every request in arrival order.
    pub requests: Mutex<Vec<SourceRequest>>,
}

/// One request as the source saw it.
#[derive(Clone, Debug)]
pub struct SourceRequest {
    /// Which accepted connection (0, 1, ...) carried it.
    pub connection: u64,
    pub method: String,
    pub path: String,
    pub at: Instant,
}

pub struct Source {
    pub addr: SocketAddr,
    pub state: Arc<SourceState>,
}

/// The content of segment `n`: deterministic, different for every n and every offset.
pub fn segment_body(n: u64, len: usize) -> Vec<u8> {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

impl Source {
    pub async fn start(newest: u64, segment_bytes: usize, bitrate_kbps: u64) -> Source {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(SourceState {
            newest: AtomicU64::new(newest),
            window: 6,
            segment_bytes,
            body_delay: Mutex::new(Duration::ZERO),
            body_gate: Mutex::new(None),
            fetches: Mutex::new(HashMap::new()),
            faults: Mutex::new(HashMap::new()),
            first_body_write: Mutex::new(HashMap::new()),
            bitrate_kbps,
            connections: AtomicU64::new(0),
            accepted_at: Mutex::new(Vec::new()),
            head_delay: Mutex::new(Duration::ZERO),
            rtt: Mutex::new(Duration::ZERO),
            requests: Mutex::new(Vec::new()),
        });
        let s = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let s = s.clone();
                let connection = {
                    let mut accepted = s.accepted_at.lock().unwrap();
                    accepted.push(Instant::now());
                    s.connections.fetch_add(1, Ordering::SeqCst)
                };
                tokio::spawn(async move { s.serve_connection(stream, connection).await });
            }
        });
        Source { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn fetches(&self, path: &str) -> u32 {
        self.state.fetches.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    pub fn inject(&self, path: &str, faults: &[Fault]) {
        self.state.faults.lock().unwrap().entry(path.to_string()).or_default().extend(faults.iter().cloned());
    }

    pub fn media_playlist(&self) -> String {
        self.state.media_playlist()
    }

    /// The requests for `path`, in arrival order.
    pub fn requests_for(&self, path: &str) -> Vec<SourceRequest> {
        self.state.requests.lock().unwrap().iter().filter(|r| r.path == path).cloned().collect()
    }
}

impl SourceState {
    fn media_playlist(&self) -> String {
        let newest = self.newest.load(Ordering::SeqCst);
        let first = newest.saturating_sub(self.window - 1);
        let mut p = format!("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:{first}\n");
        for n in first..=newest {
            if self.bitrate_kbps > 0 {
                p.push_str(&format!("#EXT-X-BITRATE:{}\n", self.bitrate_kbps));
            }
            p.push_str(&format!("#EXTINF:2.000,\nseg{n}.ts\n"));
        }
        p
    }

    /// Answer requests on one connection until one asks to close or a fault ends it.
    async fn serve_connection(self: Arc<Self>, mut stream: TcpStream, connection: u64) {
        while let Some(keep_open) = self.clone().answer(&mut stream, connection).await {
            if !keep_open {
                return;
            }
        }
    }

    /// One request: `Some(true)` if the connection may carry another, `None` at EOF.
    async fn answer(self: Arc<Self>, stream: &mut TcpStream, connection: u64) -> Option<bool> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1];
        // Byte by byte: the next request on a keep-alive connection must stay unread.
        while !buf.ends_with(b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => buf.push(chunk[0]),
            }
        }
        let request_seen = Instant::now();
        let request = String::from_utf8_lossy(&buf).to_string();
        let close = request.to_ascii_lowercase().contains("\r\nconnection: close");
        let mut parts = request.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        self.requests.lock().unwrap().push(SourceRequest { connection, method: method.clone(), path: path.clone(), at: Instant::now() });
        *self.fetches.lock().unwrap().entry(path.clone()).or_default() += 1;
        let fault = self.faults.lock().unwrap().get_mut(&path).and_then(|q| q.pop_front());
        let (body, content_type) = if path == "/live/stream.m3u8" {
            (self.media_playlist().into_bytes(), "application/vnd.apple.mpegurl")
        } else if path == "/live/stream.mpd" {
            (LIVE_MPD.as_bytes().to_vec(), "application/dash+xml")
        } else if path == "/live/master.m3u8" {
            (b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=15000000,RESOLUTION=3840x2160\nstream.m3u8\n".to_vec(), "application/vnd.apple.mpegurl")
        } else if path == "/bad/stream.m3u8" {
            (b"<html>not a playlist</html>\n".to_vec(), "text/html")
        } else if path == "/bad/stream.mpd" {
            (b"<MPD type=\"dynamic\"><Period><unclosed></MPD>\n".to_vec(), "application/dash+xml")
        } else if path == "/huge/stream.m3u8" {
            let mut p = String::from("#EXTM3U\n#EXT-X-TARGETDURATION:2\n");
            while p.len() < 3 << 20 {
                p.push_str("#EXTINF:2.000,\nsegment-with-a-long-name.ts\n");
            }
            (p.into_bytes(), "application/vnd.apple.mpegurl")
        } else if let Some(n) = path.strip_prefix("/live/chunk-0-").and_then(|r| r.strip_suffix(".m4s")).and_then(|n| n.parse::<u64>().ok())
        {
            (segment_body(n, self.segment_bytes), "video/mp4")
        } else if let Some(n) = path.strip_prefix("/live/seg").and_then(|r| r.strip_suffix(".ts")).and_then(|n| n.parse::<u64>().ok()) {
            (segment_body(n, self.segment_bytes), "video/mp2t")
        } else {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            return Some(false);
        };
        match fault {
            Some(Fault::Status500) => {
                let _ = stream.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                return Some(false);
            }
            Some(Fault::HangBeforeHeaders(d)) => {
                tokio::time::sleep(d).await;
                return Some(false);
            }
            _ => {}
        }
        let rtt = *self.rtt.lock().unwrap();
        if !rtt.is_zero() {
            let accepted = self.accepted_at.lock().unwrap()[connection as usize];
            let could_send = request_seen.max(accepted + rtt);
            tokio::time::sleep_until(tokio::time::Instant::from_std(could_send + rtt)).await;
        }
        let head_delay = *self.head_delay.lock().unwrap();
        if method == "HEAD" && !head_delay.is_zero() {
            tokio::time::sleep(head_delay).await;
        }
        let connection_header = if close { "close" } else { "keep-alive" };
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection_header}\r\n\r\n",
            body.len()
        );
        if stream.write_all(head.as_bytes()).await.is_err() {
            return Some(false);
        }
        if method == "HEAD" {
            return Some(!close);
        }
        let delay = *self.body_delay.lock().unwrap();
        if !delay.is_zero() && path.ends_with(".ts") {
            tokio::time::sleep(delay).await;
        }
        let gate = self.body_gate.lock().unwrap().clone();
        if let (Some(gate), true) = (gate, path.ends_with(".ts")) {
            let _ = gate.acquire().await;
        }
        self.first_body_write.lock().unwrap().insert(path.clone(), Instant::now());
        match fault {
            Some(Fault::StallMidBody(d)) => {
                let _ = stream.write_all(&body[..body.len() / 2]).await;
                tokio::time::sleep(d).await;
                let _ = stream.write_all(&body[body.len() / 2..]).await;
                Some(false)
            }
            Some(Fault::Truncate(n)) => {
                let _ = stream.write_all(&body[..n.min(body.len())]).await;
                let _ = stream.shutdown().await;
                Some(false)
            }
            Some(Fault::ResetAfter(n)) => {
                let _ = stream.write_all(&body[..n.min(body.len())]).await;
                let _ = stream.flush().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                #[allow(deprecated)] // zero linger does not block: it is how a reset is sent
                let _ = stream.set_linger(Some(Duration::ZERO));
                Some(false)
            }
            _ => Some(stream.write_all(&body).await.is_ok() && !close),
        }
    }
}

/// A receiver's view of one response.
#[derive(Debug)]
pub struct Received {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body matched the announced Content-Length.
    pub complete: bool,
    pub first_body_byte_at: Option<Instant>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }
}

/// GET `target` (origin-form or absolute-form) with extra headers, on a new connection.
pub async fn get(edge: SocketAddr, target: &str, headers: &[(&str, &str)]) -> Received {
    let mut stream = TcpStream::connect(edge).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let mut req = format!("GET {target} HTTP/1.1\r\nHost: {edge}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut first_body_byte_at = None;
    let mut header_end = None;
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if header_end.is_none() {
            header_end = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
        }
        if let Some(h) = header_end {
            if first_body_byte_at.is_none() && buf.len() > h {
                first_body_byte_at = Some(Instant::now());
            }
        }
    }
    let Some(h) = header_end else {
        return Received { status: 0, headers: vec![], body: vec![], complete: false, first_body_byte_at: None };
    };
    let head = String::from_utf8_lossy(&buf[..h]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))).collect();
    let body = buf[h..].to_vec();
    let announced = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse::<usize>().ok());
    let complete = announced.is_some_and(|n| n == body.len());
    Received { status, headers, body, complete, first_body_byte_at }
}

pub struct RunningEdge {
    pub addr: SocketAddr,
    pub edge: Arc<Edge>,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<()>,
}

fn test_config(source: &Source, addr: SocketAddr, tune: impl FnOnce(&mut EdgeConfig)) -> EdgeConfig {
    let mut config = EdgeConfig::new(UpstreamBase::parse(&source.url()).unwrap(), addr);
    config.playlist_ttl = Duration::ZERO;
    config.header_timeout = Duration::from_millis(500);
    config.body_idle_timeout = Duration::from_millis(300);
    // An Ethernet backhaul's MSS, not loopback's 65 483 bytes (the tests' x follow from it).
    config.backhaul_mss_override = Some(1448);
    // Tests count the source's connections; the one that wants the standby turns it on.
    config.standby_connection = false;
    tune(&mut config);
    config
}

pub async fn start_edge(source: &Source, tune: impl FnOnce(&mut EdgeConfig)) -> RunningEdge {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let edge = Edge::new(test_config(source, addr, tune));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(edge.clone(), listener, async move {
        let _ = rx.await;
    }));
    RunningEdge { addr, edge, stop: Some(tx), task }
}

/// The edge on a runtime of its own (two worker threads, as `tcpvideo-edge` runs it on this
/// 2-core machine), so the test's receivers and source, on the test's runtime, do not queue
/// behind the edge's tasks or the edge's behind theirs; they still share the CPUs.
pub async fn start_edge_on_own_runtime(source: &Source, tune: impl FnOnce(&mut EdgeConfig)) -> RunningEdge {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let edge = Edge::new(test_config(source, addr, tune));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let served = edge.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            serve(served, listener, async move {
                let _ = rx.await;
            })
            .await;
        });
        let _ = done_tx.send(());
    });
    let task = tokio::spawn(async move {
        let _ = done_rx.await;
    });
    RunningEdge { addr, edge, stop: Some(tx), task }
}
