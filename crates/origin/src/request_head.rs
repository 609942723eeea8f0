//! One HTTP/1.1 request head read off a connection: what the origin needs of it, and whether the
//! connection may carry another request after the answer.
//!
//! Sources: RFC 9112 (HTTP/1.1 message syntax) §2–§3 (request line, absolute-form targets
//! §3.2.2), §6.3 (message body length: a `Transfer-Encoding` request body cannot be delimited
//! here, so such a connection is closed after its answer), §9.3 (persistence: HTTP/1.1 keeps the
//! connection unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`). Parsing is
//! `httparse` (the parser hyper uses).
//!
//! Bounds: a head larger than [`MAX_HEAD_BYTES`] or with more than [`MAX_HEADERS`] fields is
//! refused (431, then close); a request body (GET/HEAD carry none in practice) is read and
//! dropped up to [`MAX_DISCARDED_BODY_BYTES`], beyond that the connection closes after the answer.
//! Pipelined requests stay in the buffer for the next read.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Largest request head accepted (nginx's `large_client_header_buffers` default is 8 KiB).
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Most header fields accepted.
pub const MAX_HEADERS: usize = 64;
/// Largest request body read and dropped to keep the connection.
pub const MAX_DISCARDED_BODY_BYTES: u64 = 64 * 1024;

/// The parts of a request the routes use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// The path of the target, still percent-encoded (`served_path` decodes it).
    pub path: String,
    pub query: Option<String>,
    /// `Range`'s value; `<not text>` when it is not visible ASCII.
    pub range: Option<String>,
    pub has_if_range: bool,
    /// May the connection carry another request after this one is answered.
    pub keep_alive: bool,
    /// HTTP/1.0 client that asked for keep-alive: the answer must say `Connection: keep-alive`.
    pub http10_keep_alive: bool,
}

/// Why no request could be read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// The peer closed (cleanly between requests, or mid-head).
    Closed,
    /// Answer with this status and close.
    Refuse(u16, String),
    Io(std::io::ErrorKind),
}

/// Reads request heads off one connection; holds bytes read past the current head.
pub struct RequestReader {
    buf: Vec<u8>,
}

impl Default for RequestReader {
    fn default() -> Self {
        RequestReader { buf: Vec::with_capacity(1024) }
    }
}

impl RequestReader {
    /// Read until one complete head is buffered, parse it and drop it (and its body) from the
    /// buffer.
    pub async fn next(&mut self, stream: &mut TcpStream) -> Result<RequestHead, HeadError> {
        loop {
            if !self.buf.is_empty() {
                if let Some((head, consumed, body_bytes)) = parse(&self.buf)? {
                    self.buf.drain(..consumed);
                    return self.discard_body(stream, head, body_bytes).await;
                }
                if self.buf.len() >= MAX_HEAD_BYTES {
                    return Err(HeadError::Refuse(431, format!("request head larger than {MAX_HEAD_BYTES} bytes")));
                }
            }
            let room = MAX_HEAD_BYTES - self.buf.len();
            let mut chunk = [0u8; 2048];
            let want = room.min(chunk.len());
            match stream.read(&mut chunk[..want]).await {
                Ok(0) => return Err(HeadError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(HeadError::Io(e.kind())),
            }
        }
    }

    async fn discard_body(&mut self, stream: &mut TcpStream, mut head: RequestHead, body: BodyLength) -> Result<RequestHead, HeadError> {
        let mut left = match body {
            BodyLength::None => return Ok(head),
            BodyLength::Undelimited => {
                head.keep_alive = false;
                return Ok(head);
            }
            BodyLength::Bytes(n) if n > MAX_DISCARDED_BODY_BYTES => {
                head.keep_alive = false;
                return Ok(head);
            }
            BodyLength::Bytes(n) => n,
        };
        let buffered = (self.buf.len() as u64).min(left);
        self.buf.drain(..buffered as usize);
        left -= buffered;
        let mut sink = [0u8; 4096];
        while left > 0 {
            let want = (left as usize).min(sink.len());
            match stream.read(&mut sink[..want]).await {
                Ok(0) => return Err(HeadError::Closed),
                Ok(n) => left -= n as u64,
                Err(e) => return Err(HeadError::Io(e.kind())),
            }
        }
        Ok(head)
    }
}

enum BodyLength {
    None,
    Bytes(u64),
    Undelimited,
}

/// Parse one head at the start of `bytes`: the head, its length in bytes and its body's length;
/// `Ok(None)` if the head is not complete yet.
fn parse(bytes: &[u8]) -> Result<Option<(RequestHead, usize, BodyLength)>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let consumed = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::Refuse(431, format!("more than {MAX_HEADERS} header fields"))),
        Err(e) => return Err(HeadError::Refuse(400, format!("malformed request head: {e}"))),
    };
    let method = req.method.unwrap_or_default().to_string();
    let target = req.path.unwrap_or_default();
    let http11 = req.version == Some(1);
    let path_and_query = origin_form(target).ok_or_else(|| HeadError::Refuse(400, format!("request target {target:?} is not a path")))?;
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (path_and_query.to_string(), None),
    };
    let mut head = RequestHead { method, path, query, range: None, has_if_range: false, keep_alive: http11, http10_keep_alive: false };
    let mut body = BodyLength::None;
    for f in req.headers.iter() {
        let name = f.name;
        if name.eq_ignore_ascii_case("range") {
            head.range = Some(std::str::from_utf8(f.value).ok().filter(|v| v.is_ascii()).unwrap_or("<not text>").to_string());
        } else if name.eq_ignore_ascii_case("if-range") {
            head.has_if_range = true;
        } else if name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(f.value).to_ascii_lowercase();
            if v.split(',').any(|t| t.trim() == "close") {
                head.keep_alive = false;
            } else if !http11 && v.split(',').any(|t| t.trim() == "keep-alive") {
                head.keep_alive = true;
                head.http10_keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            body = BodyLength::Undelimited;
        } else if name.eq_ignore_ascii_case("content-length") && !matches!(body, BodyLength::Undelimited) {
            let n = std::str::from_utf8(f.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| HeadError::Refuse(400, "Content-Length is not a number".to_string()))?;
            if let BodyLength::Bytes(before) = body {
                if before != n {
                    return Err(HeadError::Refuse(400, "conflicting Content-Length fields".to_string()));
                }
            }
            body = if n == 0 { BodyLength::None } else { BodyLength::Bytes(n) };
        }
    }
    if matches!(body, BodyLength::Undelimited) {
        head.keep_alive = false;
    }
    Ok(Some((head, consumed, body)))
}

/// The origin-form (`/path?query`) of a request target; absolute-form targets
/// (`http://host/path`) lose their scheme and authority (RFC 9112 §3.2.2). `*` and authority-form
/// are not paths.
fn origin_form(target: &str) -> Option<&str> {
    if target.starts_with('/') {
        return Some(target);
    }
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &target[7..]
    } else if lower.starts_with("https://") {
        &target[8..]
    } else {
        return None;
    };
    // A query straight after the authority (`http://host?q`) is dropped with it: rare, harmless.
    Some(rest.find('/').filter(|&i| rest.find('?').is_none_or(|q| i < q)).map_or("/", |i| &rest[i..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> RequestHead {
        parse(text.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn http11_keeps_the_connection_unless_it_says_close() {
        assert!(head("GET /a HTTP/1.1\r\nHost: x\r\n\r\n").keep_alive);
        assert!(!head("GET /a HTTP/1.1\r\nConnection: Close\r\n\r\n").keep_alive);
    }

    #[test]
    fn http10_keeps_the_connection_only_when_asked() {
        assert!(!head("GET /a HTTP/1.0\r\n\r\n").keep_alive);
        let h = head("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert!(h.keep_alive && h.http10_keep_alive);
    }

    #[test]
    fn an_absolute_form_target_is_reduced_to_its_path_and_query() {
        let h = head("GET http://origin:8080/live/a.ts?mode=bulk HTTP/1.1\r\n\r\n");
        assert_eq!((h.path.as_str(), h.query.as_deref()), ("/live/a.ts", Some("mode=bulk")));
        assert_eq!(head("GET http://origin HTTP/1.1\r\n\r\n").path, "/");
    }

    #[test]
    fn a_star_target_and_garbage_are_refused_with_400() {
        assert!(matches!(parse(b"OPTIONS * HTTP/1.1\r\n\r\n"), Err(HeadError::Refuse(400, _))));
        assert!(matches!(parse(b"GET /a HTTP/9\r\n\r\n"), Err(HeadError::Refuse(400, _))));
    }

    #[test]
    fn a_partial_head_asks_for_more_bytes_and_reports_what_it_consumed_when_complete() {
        assert!(parse(b"GET /a HTTP/1.1\r\nHost").unwrap().is_none());
        let (_, consumed, _) = parse(b"GET /a HTTP/1.1\r\n\r\nGET /b").unwrap().unwrap();
        assert_eq!(consumed, 19);
    }

    #[test]
    fn a_chunked_request_body_closes_the_connection_after_the_answer() {
        assert!(!head("GET /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").keep_alive);
    }

    #[test]
    fn conflicting_content_lengths_are_refused() {
        assert!(matches!(parse(b"GET /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), Err(HeadError::Refuse(400, _))));
    }

    #[test]
    fn range_and_if_range_are_picked_up_case_insensitively() {
        let h = head("GET /a HTTP/1.1\r\nrange: bytes=0-9\r\nIF-RANGE: x\r\n\r\n");
        assert_eq!(h.range.as_deref(), Some("bytes=0-9"));
        assert!(h.has_if_range);
    }
}
