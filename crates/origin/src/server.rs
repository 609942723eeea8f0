//! HTTP/1.1 plumbing of the origin: accept loop with a connection cap, routing, response heads,
//! graceful shutdown.
//!
//! Routes: `GET /metrics` (Prometheus) and `GET /healthz` are the origin's own (a file of that
//! name in the root is shadowed); every other GET or HEAD names a file under the root
//! (`served_path`: 403 for a path that tries to leave it, 404 for nothing there), answered with
//! its content type, `Accept-Ranges: bytes`, `Last-Modified`, and 200, 206 or 416
//! (`byte_range`); its body is a [`DeliveryBody`] in the request's delivery mode
//! (`delivery_choice`, 400 naming the bad query key). Other methods get 405.
//!
//! Memory bounds per connection: hyper buffers at most [`WRITE_BUFFER_BYTES`] of response before
//! it stops polling the body, the body holds at most one frame; a client that sends no complete
//! request head within the header timeout is dropped; beyond `max_connections` new connections
//! are closed at once. So a stalled client costs at most ~2 × 64 KiB of user memory plus its
//! kernel socket buffers.
//!
//! Shutdown: when the future passed to [`serve`] resolves (SIGTERM / Ctrl-C in the binary), the
//! listener closes, open connections finish their current response (up to `drain`), then
//! `serve` returns.

use std::convert::Infallible;
use std::fs::File;
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT_RANGES, ALLOW, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, IF_RANGE, LAST_MODIFIED, RANGE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tracing::{debug, info, warn};

use crate::byte_range::{answer_range, RangeAnswer};
use crate::content_type::content_type_of;
use crate::cwnd_clamp::ClampControl;
use crate::delivery_body::{BoxError, ConnectionContext, DeliveryBody, FRAME_BYTES};
use crate::delivery_choice::DeliveryRules;
use crate::metrics::Metrics;
use crate::served_path::{PathRefused, ServedRoot};
use crate::socket_control::SocketHandle;

/// hyper's write buffer bound (its minimum is 8 KiB): one frame.
pub const WRITE_BUFFER_BYTES: usize = FRAME_BYTES as usize;

pub type OriginBody = BoxBody<Bytes, BoxError>;

/// Everything a request needs.
pub struct Origin {
    pub root: ServedRoot,
    pub rules: DeliveryRules,
    pub clamp: Arc<ClampControl>,
    pub metrics: Arc<Metrics>,
    pub max_connections: u64,
    /// Drop a connection that has not sent a complete request head in this long.
    pub header_timeout: Duration,
    /// How long open responses may run on after shutdown begins.
    pub drain: Duration,
    /// Congestion control set on every accepted socket (None: the system default).
    pub congestion_control: Option<String>,
    /// SO_SNDBUF for every accepted socket (None: kernel autotuning up to tcp_wmem[2]); bounds
    /// the kernel memory a stalled client pins, as nginx's `sndbuf`.
    pub send_buffer_bytes: Option<usize>,
}

impl Origin {
    pub fn new(root: ServedRoot, rules: DeliveryRules, clamp: ClampControl) -> Origin {
        let metrics = Arc::new(Metrics::default());
        metrics.bpf_clamp_loaded.store(clamp.is_bpf() as u64, Ordering::Relaxed);
        Origin {
            root,
            rules,
            clamp: Arc::new(clamp),
            metrics,
            max_connections: 4096,
            header_timeout: Duration::from_secs(30),
            drain: Duration::from_secs(10),
            congestion_control: None,
            send_buffer_bytes: None,
        }
    }
}

/// Decrements the open-connection gauge when a connection ends.
struct OpenConnection(Arc<Metrics>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serve until `shutdown` resolves. `listener` is bound by the caller (tests bind port 0).
pub async fn serve(origin: Arc<Origin>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => { warn!(error = %e, "accept failed"); tokio::time::sleep(Duration::from_millis(10)).await; continue; }
                };
                let m = &origin.metrics;
                if m.connections_open.load(Ordering::Relaxed) >= origin.max_connections {
                    Metrics::bump(&m.connections_refused);
                    debug!(peer = %peer, "connection cap reached; closed");
                    drop(stream);
                    continue;
                }
                m.connections_open.fetch_add(1, Ordering::Relaxed);
                Metrics::bump(&m.connections_accepted);
                let open = OpenConnection(m.clone());
                let _ = stream.set_nodelay(true);
                let socket = SocketHandle { fd: stream.as_raw_fd() };
                if let Some(cc) = &origin.congestion_control {
                    if socket.set_congestion_control(cc).is_err() {
                        Metrics::bump(&m.socket_option_errors);
                    }
                }
                if let Some(bytes) = origin.send_buffer_bytes {
                    if socket.set_send_buffer(bytes).is_err() {
                        Metrics::bump(&m.socket_option_errors);
                    }
                }
                let conn_ctx = Arc::new(ConnectionContext::new(socket, origin.clamp.clone(), m.clone()));
                let origin2 = origin.clone();
                let service = service_fn(move |req| {
                    let origin = origin2.clone();
                    let conn_ctx = conn_ctx.clone();
                    async move { Ok::<_, Infallible>(route(&origin, req, peer, conn_ctx)) }
                });
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(origin.header_timeout)
                    .max_buf_size(WRITE_BUFFER_BYTES)
                    .writev(true)
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move { let _ = conn.await; drop(open); });
            }
            _ = &mut shutdown => {
                info!("shutting down: no new connections, finishing open responses");
                break;
            }
        }
    }
    drop(listener);
    if tokio::time::timeout(origin.drain, graceful.shutdown()).await.is_err() {
        warn!(drain_s = origin.drain.as_secs_f64(), "open responses did not finish in time; closing them");
    }
}

fn empty() -> OriginBody {
    Empty::new().map_err(|never: Infallible| match never {}).boxed()
}

fn plain(metrics: &Metrics, status: StatusCode, text: String) -> Response<OriginBody> {
    metrics.count_response(status.as_u16());
    let mut r = Response::new(Full::new(Bytes::from(text + "\n")).map_err(|never: Infallible| match never {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

fn route(origin: &Origin, req: Request<Incoming>, peer: SocketAddr, conn: Arc<ConnectionContext>) -> Response<OriginBody> {
    let m = &origin.metrics;
    let path = req.uri().path();
    if path == "/metrics" || path == "/healthz" {
        let text = if path == "/metrics" { origin.metrics.render() } else { "ok\n".to_string() };
        let mut r = Response::new(Full::new(Bytes::from(text)).map_err(|never: Infallible| match never {}).boxed());
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
        m.count_response(200);
        return r;
    }
    let head_only = match *req.method() {
        Method::GET => false,
        Method::HEAD => true,
        ref other => {
            let mut r = plain(m, StatusCode::METHOD_NOT_ALLOWED, format!("method {other} not allowed"));
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
    };
    let file_path = match origin.root.resolve(path) {
        Ok(p) => p,
        Err(PathRefused::NotFound) => return plain(m, StatusCode::NOT_FOUND, "not found".into()),
        Err(e @ PathRefused::Forbidden(_)) => {
            Metrics::bump(&m.paths_refused);
            warn!(peer = %peer, path = %req.uri().path(), reason = %e, "request refused");
            return plain(m, StatusCode::FORBIDDEN, e.to_string());
        }
    };
    let plan = match origin.rules.plan(path, req.uri().query()) {
        Ok(p) => p,
        Err(e) => return plain(m, StatusCode::BAD_REQUEST, e),
    };
    let (file, length, modified) = match File::open(&file_path).and_then(|f| f.metadata().map(|md| (f, md))) {
        Ok((f, md)) if md.is_file() => (f, md.len(), md.modified().ok()),
        _ => return plain(m, StatusCode::NOT_FOUND, "not found".into()),
    };
    // If-Range's validator is not evaluated; RFC 9110 §13.1.5 then says to send the whole body.
    let range_header =
        if req.headers().contains_key(IF_RANGE) { None } else { req.headers().get(RANGE).map(|v| v.to_str().unwrap_or("<not text>")) };
    let (status, first, last) = match answer_range(range_header, length) {
        RangeAnswer::Whole => (StatusCode::OK, 0, length.checked_sub(1)),
        RangeAnswer::Partial { first, last } => (StatusCode::PARTIAL_CONTENT, first, Some(last)),
        RangeAnswer::Unsatisfiable => {
            let mut r = plain(m, StatusCode::RANGE_NOT_SATISFIABLE, format!("range not satisfiable: {}", range_header.unwrap_or("")));
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{length}")) {
                r.headers_mut().insert(CONTENT_RANGE, v);
            }
            return r;
        }
    };
    let end = last.map_or(0, |l| l + 1);
    let body = if head_only || end == first {
        empty()
    } else {
        m.count_mode(plan.mode.label());
        DeliveryBody::new(Arc::new(file), first, end, plan, conn).boxed()
    };
    m.count_response(status.as_u16());
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type_of(&file_path)));
    h.insert(CONTENT_LENGTH, HeaderValue::from(end - first));
    h.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {first}-{}/{length}", end - 1)) {
            h.insert(CONTENT_RANGE, v);
        }
    }
    if let Some(t) = modified {
        if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(t)) {
            h.insert(LAST_MODIFIED, v);
        }
    }
    r
}
