//! HTTP/1.1 plumbing of the origin: accept loop with a connection cap, one task per connection
//! reading request heads (`request_head`), routing, response heads, graceful shutdown.
//!
//! Routes: `GET /metrics` (Prometheus) and `GET /healthz` are the origin's own (a file of that
//! name in the root is shadowed); every other GET or HEAD names a file under the root
//! (`served_path`: 403 for a path that tries to leave it, 404 for nothing there), answered with
//! its content type, `Accept-Ranges: bytes`, `Last-Modified`, and 200, 206 or 416
//! (`byte_range`); its body is a [`DeliveryBody`] in the request's delivery mode
//! (`delivery_choice`, 400 naming the bad query key), which sendfile(2)s the file. Other methods
//! get 405. Keep-alive and pipelining per RFC 9112 §9.3.
//!
//! Why not hyper (the first version used it): hyper owns the socket and takes a body only as
//! bytes in user memory, so every body byte was `pread` into a buffer and copied again into the
//! socket; nginx `sendfile`s. With its own HTTP/1.1 head path the origin hands the file to the
//! kernel (bench/origin_vs_nginx.py). The response head goes out with MSG_MORE so it leaves in the
//! same segment as the body's first bytes, as nginx's `tcp_nopush`.
//!
//! Memory bounds per connection: the request head buffer (at most 8 KiB) and the task; no body
//! bytes are held in user memory; a client that sends no complete request head within the header
//! timeout (also while idle between requests) is dropped; beyond `max_connections` new
//! connections are closed at once.
//!
//! Shutdown: when the future passed to [`serve`] resolves (SIGTERM / Ctrl-C in the binary), the
//! listener closes, idle connections close, busy ones finish their current response (up to
//! `drain`), then `serve` returns.

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::byte_range::{answer_range, RangeAnswer};
use crate::content_type::content_type_of;
use crate::cwnd_clamp::ClampControl;
use crate::delivery_body::{ConnectionContext, DeliveryBody};
use crate::delivery_choice::DeliveryRules;
use crate::metrics::Metrics;
use crate::request_head::{HeadError, RequestHead, RequestReader};
use crate::served_path::{PathRefused, ServedRoot};
use crate::socket_control::SocketHandle;

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
    let (stopping_tx, stopping) = watch::channel(false);
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
                let (origin, stopping) = (origin.clone(), stopping.clone());
                tokio::spawn(async move {
                    serve_connection(&origin, stream, peer, conn_ctx, stopping).await;
                    drop(open);
                });
            }
            _ = &mut shutdown => {
                info!("shutting down: no new connections, finishing open responses");
                break;
            }
        }
    }
    drop(listener);
    let _ = stopping_tx.send(true);
    let deadline = Instant::now() + origin.drain;
    while origin.metrics.connections_open.load(Ordering::Relaxed) > 0 {
        if Instant::now() >= deadline {
            warn!(drain_s = origin.drain.as_secs_f64(), "open responses did not finish in time; closing them");
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One connection: request after request until the client closes, asks to close, goes idle past
/// the header timeout, or the origin stops.
async fn serve_connection(
    origin: &Origin,
    mut stream: TcpStream,
    peer: SocketAddr,
    conn: Arc<ConnectionContext>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut reader = RequestReader::default();
    loop {
        let read = tokio::select! {
            r = tokio::time::timeout(origin.header_timeout, reader.next(&mut stream)) => r,
            _ = stopping.wait_for(|s| *s) => return,
        };
        let head = match read {
            Ok(Ok(h)) => h,
            Ok(Err(HeadError::Refuse(status, why))) => {
                debug!(peer = %peer, status, reason = %why, "request head refused");
                let mut reply = plain(&origin.metrics, status, why);
                reply.keep_alive = false;
                let _ = stream.write_all(&reply.head_bytes(None)).await;
                let _ = stream.write_all(&reply.text).await;
                return;
            }
            Ok(Err(_)) | Err(_) => return,
        };
        let mut reply = route(origin, &head, peer, &conn);
        reply.keep_alive = head.keep_alive && !*stopping.borrow();
        let head_bytes = reply.head_bytes(Some(&head));
        let sent = match reply.body.take() {
            Some(mut body) => {
                let cork = body.corked() && conn.socket.set_cork(true).is_ok();
                let sent = match send_with_more(&stream, &head_bytes).await {
                    Ok(()) => body.send(&stream).await,
                    Err(e) => Err(e),
                };
                if cork {
                    let _ = conn.socket.set_cork(false);
                }
                sent
            }
            None => {
                let mut whole = head_bytes;
                whole.extend_from_slice(&reply.text);
                stream.write_all(&whole).await
            }
        };
        if let Err(e) = sent {
            debug!(peer = %peer, error = %e, "response cut short");
            return;
        }
        if !reply.keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Write `bytes` whole with MSG_MORE: the kernel holds a partial segment for the body that follows.
async fn send_with_more(stream: &TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        done += stream
            .async_io(Interest::WRITABLE, || {
                // SAFETY: `rest` is a live slice; the kernel reads at most its length.
                let rc = unsafe {
                    libc::send(stream.as_raw_fd(), rest.as_ptr() as *const libc::c_void, rest.len(), libc::MSG_MORE | libc::MSG_NOSIGNAL)
                };
                if rc < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(rc as usize)
                }
            })
            .await?;
    }
    Ok(())
}

/// One answer: status, header fields, and either a short text body or a file body.
struct Reply {
    status: u16,
    fields: Vec<(&'static str, String)>,
    content_length: u64,
    text: Vec<u8>,
    body: Option<DeliveryBody>,
    keep_alive: bool,
}

impl Reply {
    fn new(status: u16) -> Reply {
        Reply { status, fields: Vec::new(), content_length: 0, text: Vec::new(), body: None, keep_alive: true }
    }

    fn field(&mut self, name: &'static str, value: impl Into<String>) {
        self.fields.push((name, value.into()));
    }

    /// The status line and header block, with Date, Content-Length and Connection.
    fn head_bytes(&self, request: Option<&RequestHead>) -> Vec<u8> {
        let mut out = String::with_capacity(256);
        out.push_str("HTTP/1.1 ");
        out.push_str(&self.status.to_string());
        out.push(' ');
        out.push_str(reason_phrase(self.status));
        out.push_str("\r\nServer: tcpvideo-origin\r\nDate: ");
        out.push_str(&httpdate::fmt_http_date(SystemTime::now()));
        for (name, value) in &self.fields {
            out.push_str("\r\n");
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
        }
        out.push_str("\r\nContent-Length: ");
        out.push_str(&self.content_length.to_string());
        if !self.keep_alive {
            out.push_str("\r\nConnection: close");
        } else if request.is_some_and(|r| r.http10_keep_alive) {
            out.push_str("\r\nConnection: keep-alive");
        }
        out.push_str("\r\n\r\n");
        out.into_bytes()
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

fn plain(metrics: &Metrics, status: u16, text: String) -> Reply {
    metrics.count_response(status);
    let mut r = Reply::new(status);
    r.field("Content-Type", "text/plain; charset=utf-8");
    r.text = (text + "\n").into_bytes();
    r.content_length = r.text.len() as u64;
    r
}

fn route(origin: &Origin, req: &RequestHead, peer: SocketAddr, conn: &Arc<ConnectionContext>) -> Reply {
    let m = &origin.metrics;
    let path = req.path.as_str();
    let head_only = match req.method.as_str() {
        "GET" => false,
        "HEAD" => true,
        other => {
            let mut r = plain(m, 405, format!("method {other} not allowed"));
            r.field("Allow", "GET, HEAD");
            return r;
        }
    };
    if path == "/metrics" || path == "/healthz" {
        let text = if path == "/metrics" { origin.metrics.render() } else { "ok\n".to_string() };
        let mut r = Reply::new(200);
        r.field("Content-Type", "text/plain; version=0.0.4");
        r.content_length = text.len() as u64;
        if !head_only {
            r.text = text.into_bytes();
        }
        m.count_response(200);
        return r;
    }
    let served = match origin.root.open(path) {
        Ok(f) => f,
        Err(PathRefused::NotFound) => return plain(m, 404, "not found".into()),
        Err(e @ PathRefused::Forbidden(_)) => {
            Metrics::bump(&m.paths_refused);
            warn!(peer = %peer, path = %path, reason = %e, "request refused");
            return plain(m, 403, e.to_string());
        }
    };
    let plan = match origin.rules.plan(path, req.query.as_deref()) {
        Ok(p) => p,
        Err(e) => return plain(m, 400, e),
    };
    let length = served.length;
    // If-Range's validator is not evaluated; RFC 9110 §13.1.5 then says to send the whole body.
    let range_header = if req.has_if_range { None } else { req.range.as_deref() };
    let (status, first, last) = match answer_range(range_header, length) {
        RangeAnswer::Whole => (200, 0, length.checked_sub(1)),
        RangeAnswer::Partial { first, last } => (206, first, Some(last)),
        RangeAnswer::Unsatisfiable => {
            let mut r = plain(m, 416, format!("range not satisfiable: {}", range_header.unwrap_or("")));
            r.field("Content-Range", format!("bytes */{length}"));
            return r;
        }
    };
    let end = last.map_or(0, |l| l + 1);
    let mut r = Reply::new(status);
    if !(head_only || end == first) {
        m.count_mode(plan.mode.label());
        r.body = Some(DeliveryBody::new(Arc::new(served.file), first, end, plan, conn.clone()));
    }
    m.count_response(status);
    r.content_length = end - first;
    r.field("Content-Type", content_type_of(std::path::Path::new(&served.name)));
    r.field("Accept-Ranges", "bytes");
    if status == 206 {
        r.field("Content-Range", format!("bytes {first}-{}/{length}", end - 1));
    }
    if let Some(t) = served.modified {
        r.field("Last-Modified", httpdate::fmt_http_date(t));
    }
    r
}
