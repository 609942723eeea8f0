//! HTTP/1.1 plumbing of the edge: accept loop, routing, response bodies, graceful shutdown.
//!
//! Routes: `GET /metrics` (Prometheus), `GET|PUT|DELETE /ethle/context/receivers/<id>` (the RNIS
//! stand-in, `receiver_context`), `GET /healthz`; every other GET/HEAD is a path in the
//! upstream's namespace (`request_path` refuses the rest with 400 and one log line): `.m3u8` goes
//! through the playlist logic (`edge`), anything else through the segment fetcher.
//!
//! A segment still downloading is streamed to each receiver as its bytes arrive, with the
//! source's Content-Length; if the download breaks, the receiver's body ends with an error (the
//! connection is cut short), never with a shorter body presented as whole.
//!
//! Shutdown: on the future passed to [`serve`] (SIGTERM / Ctrl-C in the binary) the listener
//! closes, open connections finish their current response (up to 10 s), then `serve` returns.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::conn_socket::{BodyProgress, ConnSocket, SharedIo};
use crate::edge::{Edge, PlaylistAnswer, Receiver, PLAYLIST_DEADLINE};
use crate::in_flight::InFlight;
use crate::metrics::Metrics;
use crate::receiver_context::{parse_context, parse_kbps, CONTEXT_PREFIX, RAN_HEADER, RECEIVER_HEADER};
use crate::request_path::{check_request, query_value, EdgePath};
use crate::segment_cache::SegmentKey;
use crate::segment_fetcher::Served;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type EdgeBody = BoxBody<Bytes, BoxError>;

/// A receiver's body read from the in-flight fetch. A body that starts before the fetch has
/// any bytes goes direct (`conn_socket`): the fetch task writes each chunk to the socket and this
/// body hands hyper only chunks already on the wire (hyper skips writing them), waking once at
/// the end. Otherwise (a late joiner, a hand-back) the connection task itself is woken when a
/// chunk lands and hyper writes it. An error aborts the response either way.
struct InFlightBody {
    body: Arc<InFlight>,
    /// Chunks handed to hyper so far, and their bytes.
    next: usize,
    handed_bytes: u64,
    conn: Arc<ConnSocket>,
    /// Whether the direct path was considered (once, at the first poll).
    started: bool,
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>,
}

impl InFlightBody {
    fn new(body: Arc<InFlight>, conn: Arc<ConnSocket>) -> InFlightBody {
        InFlightBody { body, next: 0, handed_bytes: 0, conn, started: false, wait: None }
    }

    fn hand(&mut self, item: Option<Result<Bytes, String>>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &item {
            Some(Ok(chunk)) => {
                if self.next == 1 && self.handed_bytes == 0 {
                    if let Some(edge_first) = self.body.first_chunk_at() {
                        self.conn.probe_first_byte(edge_first);
                    }
                }
                self.handed_bytes += chunk.len() as u64;
            }
            _ => self.conn.body_done(),
        }
        Poll::Ready(item.map(|r| r.map(Frame::data).map_err(BoxError::from)))
    }
}

impl Drop for InFlightBody {
    fn drop(&mut self) {
        // A receiver gone mid-body: the fetch task stops writing to its socket.
        self.conn.body_done();
    }
}

impl Body for InFlightBody {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if !this.started {
            this.started = true;
            if this.body.body_not_started() {
                // Hyper flushes the head when this returns Pending; the connection then registers.
                this.conn.await_head_flush(this.body.clone(), cx.waker());
                return Poll::Pending;
            }
        }
        loop {
            if let BodyProgress::OnWire(on_wire) = this.conn.body_progress(cx.waker()) {
                // Direct: hand over what the fetch task wrote; woken at hand-back or the end.
                let mut next = this.next;
                return match this.body.try_next_chunk(&mut next) {
                    Some(Some(Ok(c))) if this.handed_bytes + c.len() as u64 > on_wire => Poll::Pending,
                    Some(item) => {
                        this.next = next;
                        this.hand(item)
                    }
                    None => Poll::Pending,
                };
            }
            if this.wait.is_none() {
                // Subscribe before looking, so a chunk landing in between still wakes us.
                let mut rx = this.body.subscribe();
                if let Some(item) = this.body.try_next_chunk(&mut this.next) {
                    return this.hand(item);
                }
                this.wait = Some(Box::pin(async move {
                    let _ = rx.changed().await;
                }));
            }
            match this.wait.as_mut().map(|w| w.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => this.wait = None,
                _ => return Poll::Pending,
            }
        }
    }
}

fn full(bytes: impl Into<Bytes>) -> EdgeBody {
    Full::new(bytes.into()).map_err(|never: Infallible| match never {}).boxed()
}

fn plain(status: u16, text: String) -> Response<EdgeBody> {
    let mut r = Response::new(full(text + "\n"));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Serve until `shutdown` resolves. `listener` is bound by the caller (tests bind port 0).
pub async fn serve(edge: Arc<Edge>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let standby = edge.config.standby_connection.then(|| edge.client.spawn_standby());
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => { warn!(error = %e, "accept failed"); tokio::time::sleep(Duration::from_millis(10)).await; continue; }
                };
                let _ = stream.set_nodelay(true);
                let edge = edge.clone();
                let socket = ConnSocket::new(stream, edge.metrics.clone());
                let io = SharedIo(socket.clone());
                let service = service_fn(move |req| {
                    let (edge, socket) = (edge.clone(), socket.clone());
                    async move { Ok::<_, Infallible>(route(edge, req, peer, socket).await) }
                });
                let conn = http1::Builder::new().serve_connection(TokioIo::new(io), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move { let _ = conn.await; });
            }
            _ = &mut shutdown => {
                info!("shutting down: no new connections, finishing open responses");
                break;
            }
        }
    }
    drop(listener);
    if let Some(task) = standby {
        task.abort();
    }
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown()).await.is_err() {
        warn!("open connections did not finish within 10 s; closing them");
    }
}

async fn route(edge: Arc<Edge>, req: Request<Incoming>, peer: SocketAddr, socket: Arc<ConnSocket>) -> Response<EdgeBody> {
    let path = req.uri().path().to_string();
    if path == "/metrics" {
        let mut r = Response::new(full(edge.metrics_text()));
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
        return r;
    }
    if path == "/healthz" {
        return plain(200, "ok".into());
    }
    if let Some(id) = path.strip_prefix(CONTEXT_PREFIX) {
        return context_api(&edge, id.to_string(), req).await;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(405, format!("method {} not allowed", req.method()));
    }
    let listen = edge.config.listen.to_string();
    let authority = req.uri().authority().map(|a| a.as_str().to_string());
    let edge_path = match check_request(authority.as_deref(), &path, req.uri().query(), &[&listen, &edge.config.upstream.authority]) {
        Ok(p) => p,
        Err(e) => {
            Metrics::bump(&edge.metrics.requests_rejected);
            warn!(peer = %peer, error = %e, "request refused");
            return plain(400, e.to_string());
        }
    };
    let receiver = match receiver_of(&edge, &req, peer) {
        Ok(r) => r,
        Err(e) => {
            Metrics::bump(&edge.metrics.requests_rejected);
            warn!(peer = %peer, error = %e, "request refused");
            return plain(400, e);
        }
    };
    let head_only = req.method() == Method::HEAD;
    if edge_path.path.ends_with(".m3u8") {
        return match tokio::time::timeout(PLAYLIST_DEADLINE, edge.playlist(&edge_path, &receiver)).await {
            Ok(answer) => playlist_response(answer, head_only),
            Err(_) => plain(504, "playlist deadline passed".into()),
        };
    }
    if edge_path.path.ends_with(".mpd") {
        return match tokio::time::timeout(PLAYLIST_DEADLINE, crate::dash_stream::answer_mpd(&edge, &edge_path, &receiver)).await {
            Ok(answer) => playlist_response(answer, head_only),
            Err(_) => plain(504, "MPD deadline passed".into()),
        };
    }
    let range = req.headers().get(hyper::header::RANGE).and_then(|v| v.to_str().ok()).map(str::to_string);
    segment_response(&edge, &edge_path, range, &receiver, head_only, socket).await
}

fn receiver_of(edge: &Edge, req: &Request<Incoming>, peer: SocketAddr) -> Result<Receiver, String> {
    let query = req.uri().query();
    let id = req
        .headers()
        .get(RECEIVER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| query_value(query, "receiver").map(str::to_string))
        .unwrap_or_else(|| peer.ip().to_string());
    let ran = if let Some(v) = req.headers().get(RAN_HEADER) {
        Some(parse_kbps("X-Ran-Throughput-Kbps", v.to_str().unwrap_or("<not text>"))?)
    } else if let Some(v) = query_value(query, "ran_kbps") {
        Some(parse_kbps("ran_kbps", v)?)
    } else {
        edge.context.get(&id).or(edge.config.default_ran)
    };
    Ok(Receiver { id, ran })
}

async fn context_api(edge: &Edge, id: String, req: Request<Incoming>) -> Response<EdgeBody> {
    if id.is_empty() || id.contains('/') {
        return plain(400, "receiver id: one path segment expected".into());
    }
    match *req.method() {
        Method::GET => match edge.context.get(&id) {
            Some(b) => plain(200, format!("{{\"ran_throughput_kbps\": {}}}", b.bits_per_sec / 1000)),
            None => plain(404, format!("no context for receiver {id:?}")),
        },
        Method::DELETE => {
            let existed = edge.context.forget(&id);
            plain(if existed { 204 } else { 404 }, String::new())
        }
        Method::PUT | Method::POST => {
            let body = match http_body_util::Limited::new(req.into_body(), 4096).collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => return plain(400, "context body: over 4096 bytes or unreadable".into()),
            };
            match parse_context(&body) {
                Ok(c) => {
                    edge.context.set(&id, tcpvideo_model::units::Bandwidth::from_bps(c.ran_throughput_kbps.saturating_mul(1000)));
                    plain(204, String::new())
                }
                Err(e) => plain(400, e),
            }
        }
        ref m => plain(405, format!("method {m} not allowed on the context API")),
    }
}

fn playlist_response(answer: PlaylistAnswer, head_only: bool) -> Response<EdgeBody> {
    match answer {
        PlaylistAnswer::Body { bytes, content_type } => {
            let len = bytes.len();
            let mut r = Response::new(if head_only { full(Bytes::new()) } else { full(bytes) });
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(len));
            r.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        PlaylistAnswer::Redirect { location } => {
            let mut r = plain(301, format!("moved to the source: {location}"));
            if let Ok(v) = HeaderValue::from_str(&location) {
                r.headers_mut().insert(LOCATION, v);
            }
            r
        }
        PlaylistAnswer::Error { status, reason } => plain(status, reason),
    }
}

async fn segment_response(
    edge: &Arc<Edge>,
    path: &EdgePath,
    range: Option<String>,
    receiver: &Receiver,
    head_only: bool,
    socket: Arc<ConnSocket>,
) -> Response<EdgeBody> {
    let key = SegmentKey { path_and_query: path.path_and_query(), range };
    let position = edge.position_of(path);
    let first = position.as_ref().is_some_and(|p| edge.note_segment_request(p, receiver, &key.path_and_query));
    let served = edge.fetcher.get(&key, position.clone()).await;
    if first {
        // The first body byte leaves now (cached, or the fetch has bytes) or with the fetch's
        // first byte ("upstream first byte" in the log), whichever is later.
        let from = match &served {
            Served::Cached(_) => "cache",
            Served::Streaming { body, .. } if body.body_not_started() => "fetch, before its first byte",
            Served::Streaming { .. } => "fetch, bytes on hand",
            Served::Failed { .. } => "failed",
        };
        info!(receiver = %receiver.id, segment = %key.path_and_query, from, "first segment answered");
    }
    match &position {
        Some(p) => edge.after_segment_request(p, receiver),
        None => {
            crate::dash_stream::after_segment_request(edge, path, receiver);
        }
    }
    let (status, content_type, content_range, length, body) = match served {
        Served::Failed { status, reason } => {
            warn!(segment = %key.path_and_query, status, reason = %reason, "segment not served");
            return plain(status, reason);
        }
        Served::Cached(o) => {
            let len = o.body.len() as u64;
            (o.status, o.content_type, o.content_range, Some(len), full(o.body))
        }
        Served::Streaming { head, body } if head.content_length.is_some() => {
            // Known length: the body may go direct (the raw chunks are the whole framing).
            let body = InFlightBody::new(body, socket).boxed();
            (head.status, head.content_type, head.content_range, head.content_length, body)
        }
        Served::Streaming { head, body } => {
            let mut body = InFlightBody::new(body, socket);
            body.started = true; // chunked framing: hyper writes every byte
            let body = body.boxed();
            (head.status, head.content_type, head.content_range, head.content_length, body)
        }
    };
    let mut r = Response::new(if head_only { full(Bytes::new()) } else { body });
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let h = r.headers_mut();
    if let Some(t) = content_type.and_then(|t| HeaderValue::from_str(&t).ok()) {
        h.insert(CONTENT_TYPE, t);
    }
    if let Some(c) = content_range.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(CONTENT_RANGE, c);
    }
    if let Some(n) = length {
        h.insert(CONTENT_LENGTH, HeaderValue::from(n));
    }
    r
}
