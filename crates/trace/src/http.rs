//! HTTP/1.x message boundaries on a reassembled TCP byte stream (RFC 9112): request lines and
//! status lines, header blocks, bodies framed by Content-Length or chunked transfer coding
//! (§7.1), or delimited by connection close. Each request/response pair becomes one
//! transaction; for video delivery a response is one *segment* and the time from its first to
//! its last byte is an *on period* of the on-off pattern (seed 004, seed 000's download flows).
//! Bodies are handed to the FLV parser (HTTP-FLV, the usual live format of crowdsourced
//! platforms), so packets of an HTTP-FLV response are attributed to I/P/audio frames, for
//! downloads (GET response bodies) and uploads (POST/PUT request bodies) alike.

use std::collections::VecDeque;

use crate::flv::{FlvParser, FrameIndex};

/// One message head seen on the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    Request { method: String, path: String },
    Response { status: u16 },
}

/// What happened on the stream while feeding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpEvent {
    /// A message head completed at time `t`; `t_first` is when its first byte was sent.
    Head { head: Head, t_first: u64, t: u64 },
    /// A message body ended at time `t` after `body_bytes` bytes (of the chunked/identity body).
    End { t: u64, body_bytes: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Head,
    Identity(u64),
    UntilClose,
    ChunkSize,
    ChunkData(u64),
    ChunkCrlf(u8),
    Trailer,
}

/// Incremental HTTP/1.x parser for one direction.
#[derive(Clone, Debug)]
pub struct HttpParser {
    st: St,
    buf: Vec<u8>,
    t_first: u64,
    body_bytes: u64,
    /// The stream could not be parsed further (not HTTP after all, or a head over 32 KiB).
    pub lost: bool,
    /// Response side: for each request still awaiting its final response, in order, whether it
    /// was a HEAD. A response to HEAD has no body whatever its Content-Length says (RFC 9112
    /// §6.3); the caller, which sees the requests, queues them here ([`HttpParser::expect_response`]).
    awaiting: VecDeque<bool>,
    pub messages: u64,
    flv: Option<FlvParser>,
    /// Stream offset where the current chunk-size line began.
    chunk_line_at: u64,
}

impl Default for HttpParser {
    fn default() -> Self {
        HttpParser {
            st: St::Head,
            buf: Vec::new(),
            t_first: 0,
            body_bytes: 0,
            lost: false,
            awaiting: VecDeque::new(),
            messages: 0,
            flv: None,
            chunk_line_at: 0,
        }
    }
}

const MAX_HEAD: usize = 32 * 1024;

impl HttpParser {
    /// Response side: a request was sent whose final response is still to come; `is_head` when
    /// its method was HEAD (its response then carries no body).
    pub fn expect_response(&mut self, is_head: bool) {
        self.awaiting.push_back(is_head);
    }

    /// Feed in-order stream bytes at stream offset `off` sent at `now`; events go to `ev`.
    pub fn feed(&mut self, mut off: u64, mut d: &[u8], now: u64, idx: &mut FrameIndex, ev: &mut Vec<HttpEvent>) {
        while !d.is_empty() && !self.lost {
            match self.st {
                St::Head => {
                    if self.buf.is_empty() {
                        self.t_first = now;
                        idx.mark(off, crate::flv::FrameType::Meta);
                        // Skip stray CRLFs between messages (RFC 9112 §2.2).
                        if d[0] == b'\r' || d[0] == b'\n' {
                            d = &d[1..];
                            off += 1;
                            continue;
                        }
                    }
                    // Look for the end of the head in buf + d.
                    let start = self.buf.len().saturating_sub(3);
                    let take = d.len().min(MAX_HEAD + 4 - self.buf.len());
                    self.buf.extend_from_slice(&d[..take]);
                    if let Some(p) = find_crlfcrlf(&self.buf[start..]) {
                        let end = start + p + 4;
                        let used = end - (self.buf.len() - take);
                        let head = std::mem::take(&mut self.buf);
                        let (h, mut body) = match parse_head(&head[..end]) {
                            Some(x) => x,
                            None => {
                                self.lost = true;
                                return;
                            }
                        };
                        // A final response answers the oldest waiting request (1xx do not).
                        if matches!(h, Head::Response { status } if status >= 200) && self.awaiting.pop_front() == Some(true) {
                            body = Body::None;
                        }
                        self.messages += 1;
                        ev.push(HttpEvent::Head { head: h, t_first: self.t_first, t: now });
                        self.buf = head;
                        self.buf.clear();
                        d = &d[used..];
                        off += used as u64;
                        self.body_bytes = 0;
                        self.flv = Some(FlvParser::new(true));
                        self.st = match body {
                            Body::None | Body::Length(0) => {
                                ev.push(HttpEvent::End { t: now, body_bytes: 0 });
                                St::Head
                            }
                            Body::Length(n) => St::Identity(n),
                            Body::Chunked => St::ChunkSize,
                            Body::UntilClose => St::UntilClose,
                        };
                    } else {
                        if self.buf.len() > MAX_HEAD {
                            self.lost = true;
                        }
                        return;
                    }
                }
                St::Identity(left) => {
                    let n = (left.min(d.len() as u64)) as usize;
                    self.body(off, &d[..n], now, idx);
                    d = &d[n..];
                    off += n as u64;
                    if left == n as u64 {
                        ev.push(HttpEvent::End { t: now, body_bytes: self.body_bytes });
                        self.st = St::Head;
                    } else {
                        self.st = St::Identity(left - n as u64);
                    }
                }
                St::UntilClose => {
                    self.body(off, d, now, idx);
                    return;
                }
                St::ChunkSize => {
                    // Chunk-size line: hex digits, optional extensions, CRLF.
                    if self.buf.is_empty() {
                        self.chunk_line_at = off;
                    }
                    let nl = d.iter().position(|&b| b == b'\n');
                    let n = nl.map(|p| p + 1).unwrap_or(d.len());
                    if self.buf.len() + n > 1024 {
                        self.lost = true;
                        return;
                    }
                    self.buf.extend_from_slice(&d[..n]);
                    d = &d[n..];
                    off += n as u64;
                    if nl.is_some() {
                        let line = std::str::from_utf8(&self.buf).unwrap_or("");
                        let hex = line.split([';', '\r', '\n']).next().unwrap_or("").trim();
                        let size = match u64::from_str_radix(hex, 16) {
                            Ok(s) => s,
                            Err(_) => {
                                self.lost = true;
                                return;
                            }
                        };
                        self.buf.clear();
                        if size > 0 {
                            // A tag that begins this chunk's data owns the chunk-size line too
                            // (RFC 9112 §7.1: the line frames the chunk that follows it).
                            idx.chunk_start = Some((self.chunk_line_at, off));
                        }
                        self.st = if size == 0 { St::Trailer } else { St::ChunkData(size) };
                    }
                }
                St::ChunkData(left) => {
                    let n = (left.min(d.len() as u64)) as usize;
                    self.body(off, &d[..n], now, idx);
                    d = &d[n..];
                    off += n as u64;
                    self.st = if left == n as u64 { St::ChunkCrlf(2) } else { St::ChunkData(left - n as u64) };
                }
                St::ChunkCrlf(k) => {
                    d = &d[1..];
                    off += 1;
                    self.st = if k == 1 { St::ChunkSize } else { St::ChunkCrlf(k - 1) };
                }
                St::Trailer => {
                    // Trailer fields end with an empty line; we only need to find it.
                    let nl = d.iter().position(|&b| b == b'\n');
                    let n = nl.map(|p| p + 1).unwrap_or(d.len());
                    self.buf.extend_from_slice(&d[..n]);
                    d = &d[n..];
                    off += n as u64;
                    if nl.is_some() {
                        let empty = self.buf == b"\r\n" || self.buf == b"\n";
                        self.buf.clear();
                        if empty {
                            ev.push(HttpEvent::End { t: now, body_bytes: self.body_bytes });
                            self.st = St::Head;
                        }
                    }
                    if self.buf.len() > MAX_HEAD {
                        self.lost = true;
                    }
                }
            }
        }
    }

    fn body(&mut self, off: u64, d: &[u8], now: u64, idx: &mut FrameIndex) {
        let first = self.body_bytes == 0;
        self.body_bytes += d.len() as u64;
        if let Some(f) = &mut self.flv {
            if !f.lost {
                f.feed(off, d, now, idx);
            }
            if first && f.lost {
                // Not FLV: the head was `Meta`, but a non-video body (HTML, JSON, a playlist,
                // ...) is `Unknown` (issue 12: it was labelled "meta").
                idx.mark(off, crate::flv::FrameType::Unknown);
            }
        }
    }

    /// The flow ended: close a body delimited by connection close.
    pub fn finish(&mut self, t: u64, ev: &mut Vec<HttpEvent>) {
        if self.st == St::UntilClose {
            ev.push(HttpEvent::End { t, body_bytes: self.body_bytes });
            self.st = St::Head;
        }
    }
}

fn find_crlfcrlf(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n")
}

fn parse_head(h: &[u8]) -> Option<(Head, Body)> {
    let text = std::str::from_utf8(h).ok()?;
    let mut lines = text.split("\r\n");
    let first = lines.next()?;
    let mut cl: Option<u64> = None;
    let mut chunked = false;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else { continue };
        let k = k.trim();
        if k.eq_ignore_ascii_case("content-length") {
            cl = v.trim().parse().ok();
        } else if k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    if let Some(rest) = first.strip_prefix("HTTP/") {
        let status: u16 = rest.split(' ').nth(1)?.parse().ok()?;
        let body = if (100..200).contains(&status) || status == 204 || status == 304 {
            Body::None
        } else if chunked {
            Body::Chunked
        } else if let Some(n) = cl {
            Body::Length(n)
        } else {
            Body::UntilClose
        };
        return Some((Head::Response { status }, body));
    }
    let mut parts = first.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    if !parts.next()?.starts_with("HTTP/1") || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let body = if chunked { Body::Chunked } else { cl.map(Body::Length).unwrap_or(Body::None) };
    Some((Head::Request { method: method.to_string(), path: target.to_string() }, body))
}

/// Does the stream start like an HTTP request?
pub fn looks_like_request(d: &[u8]) -> bool {
    const M: [&[u8]; 8] = [b"GET ", b"POST ", b"PUT ", b"HEAD ", b"OPTIONS ", b"DELETE ", b"PATCH ", b"CONNECT "];
    M.iter().any(|m| d.starts_with(m))
}

/// Channel key from a request target: the path without query and leading slash; for segment files of HLS/DASH
/// (names ending .ts/.m4s/.aac/.mp4 that contain digits) the directory, so every segment of
/// one live channel maps to the same key.
pub fn channel_from_path(target: &str) -> String {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let path = if let Some(p) = path.strip_prefix("http://").or_else(|| path.strip_prefix("https://")) {
        p.find('/').map(|i| &p[i..]).unwrap_or("/")
    } else {
        path
    };
    let last = path.rsplit('/').next().unwrap_or("");
    let is_seg =
        [".ts", ".m4s", ".aac", ".mp4", ".m4a", ".m4v"].iter().any(|e| last.ends_with(e)) && last.bytes().any(|b| b.is_ascii_digit());
    // Without the leading '/', so "/live/ch1.flv" and the RTMP "live/ch1" give the same key.
    let key = if is_seg { path[..path.len() - last.len()].trim_end_matches('/') } else { path.trim_end_matches(".flv") };
    key.trim_start_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flv::tests::tag as flv_tag;
    use crate::flv::FrameType;

    #[test]
    fn request_and_content_length_response_give_head_and_end_events() {
        let mut c = HttpParser::default();
        let mut s = HttpParser::default();
        let mut idx = FrameIndex::default();
        let mut ev = vec![];
        c.feed(0, b"GET /live/ch1.flv?tok=1 HTTP/1.1\r\nHost: x\r\n\r\n", 5, &mut idx, &mut ev);
        assert_eq!(ev.len(), 2);
        assert!(matches!(&ev[0], HttpEvent::Head { head: Head::Request { path, .. }, .. } if path == "/live/ch1.flv?tok=1"));
        ev.clear();
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
        s.feed(0, &resp[..20], 10, &mut idx, &mut ev);
        s.feed(20, &resp[20..], 20, &mut idx, &mut ev);
        assert_eq!(
            ev,
            vec![HttpEvent::Head { head: Head::Response { status: 200 }, t_first: 10, t: 20 }, HttpEvent::End { t: 20, body_bytes: 10 }]
        );
    }

    fn chunk(data: &[u8]) -> Vec<u8> {
        let mut v = format!("{:x}\r\n", data.len()).into_bytes();
        v.extend_from_slice(data);
        v.extend_from_slice(b"\r\n");
        v
    }

    #[test]
    fn a_packet_starting_with_a_chunk_size_line_carries_the_tag_of_that_chunk() {
        // HTTP-FLV, one tag per chunk: the chunk-size line frames the tag after it (RFC 9112
        // §7.1), so the first segment of a frame written on its own starts with that line and
        // carries that frame (issue 16 session 10: it was typed as the frame before it).
        let mut m = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut flv = b"FLV\x01\x05\x00\x00\x00\x09".to_vec();
        flv.extend_from_slice(&[0, 0, 0, 0]);
        m.extend(chunk(&flv));
        let p_at = m.len() as u64;
        m.extend(chunk(&flv_tag(9, &[0x27, 1, 0, 0, 0, 9, 9, 9])));
        let v_at = m.len() as u64;
        m.extend(chunk(&flv_tag(8, &[0xAF, 1, 7, 7])));
        let i_at = m.len() as u64;
        m.extend(chunk(&flv_tag(9, &[0x17, 1, 0, 0, 0, 5])));
        let mut s = HttpParser::default();
        let mut idx = FrameIndex::default();
        let mut ev = vec![];
        for (k, b) in m.chunks(5).enumerate() {
            s.feed(k as u64 * 5, b, k as u64, &mut idx, &mut ev);
        }
        assert!(!s.lost);
        assert_eq!(idx.at(p_at), FrameType::P);
        assert_eq!(idx.at(v_at), FrameType::Audio);
        assert_eq!(idx.at(v_at - 1), FrameType::P, "the chunk's closing CRLF stays with its tag");
        assert_eq!(idx.at(i_at), FrameType::I);
        assert_eq!(idx.at(i_at + 4), FrameType::I);
    }

    #[test]
    fn response_to_head_has_no_body_even_with_content_length() {
        // Pipelined: HEAD then GET; the HEAD response's Content-Length names the size of what a
        // GET would return (RFC 9110 §9.3.2), not bytes that follow.
        let mut s = HttpParser::default();
        s.expect_response(true);
        s.expect_response(false);
        let mut idx = FrameIndex::default();
        let mut ev = vec![];
        let m = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 125000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        s.feed(0, m, 7, &mut idx, &mut ev);
        assert!(!s.lost);
        let ends: Vec<u64> =
            ev.iter().filter_map(|e| if let HttpEvent::End { body_bytes, .. } = e { Some(*body_bytes) } else { None }).collect();
        assert_eq!(ends, vec![0, 0, 3], "100 Continue, the HEAD response, then the GET's 3-byte body");
    }

    #[test]
    fn chunked_body_is_decoded_and_ends_on_zero_chunk() {
        let mut s = HttpParser::default();
        let mut idx = FrameIndex::default();
        let mut ev = vec![];
        let m = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=1\r\nabc\r\n0\r\n\r\n";
        for (i, b) in m.chunks(3).enumerate() {
            s.feed(i as u64 * 3, b, i as u64, &mut idx, &mut ev);
        }
        assert!(!s.lost);
        assert!(matches!(ev.last(), Some(HttpEvent::End { body_bytes: 8, .. })));
    }

    #[test]
    fn channel_key_strips_query_and_segment_names() {
        assert_eq!(channel_from_path("/live/abc.flv?token=9"), "live/abc");
        assert_eq!(channel_from_path("/hls/abc/seg_00012.ts"), "hls/abc");
        assert_eq!(channel_from_path("/hls/abc/index.m3u8"), "hls/abc/index.m3u8");
    }
}
