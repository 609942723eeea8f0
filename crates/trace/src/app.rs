//! Video awareness for one flow: detects the application protocol from the first stream bytes
//! (HTTP/1.x request line, RTMP C0 version byte 3, or a bare FLV header), runs the matching
//! incremental parsers on both reassembled directions, and keeps, per direction, the
//! [`FrameIndex`] that maps stream offsets to frame types. Out-of-order client data (uploads
//! see reordering) waits in a small bounded reassembly buffer; a hole that never fills (capture
//! loss) or a snaplen-truncated payload ends parsing for that direction, attribution then reads
//! `unknown`. Allocation happens per flow and per out-of-order segment, never per in-order packet.

use crate::flv::{FlvParser, FrameIndex};
use crate::http::{self, Head, HttpEvent, HttpParser};
use crate::rtmp::RtmpParser;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Unknown,
    Http,
    Rtmp,
    Flv,
    Other,
}

impl Proto {
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Unknown => "",
            Proto::Http => "http",
            Proto::Rtmp => "rtmp",
            Proto::Flv => "flv",
            Proto::Other => "other",
        }
    }
}

#[derive(Debug)]
enum Parser {
    Pending,
    Http(HttpParser),
    Rtmp(Box<RtmpParser>),
    Flv(FlvParser),
    Off,
}

/// One HTTP transaction (request and its response), times in ns.
#[derive(Clone, Debug, Default)]
pub struct HttpTx {
    pub method: String,
    pub path: String,
    pub request_ns: u64,
    pub status: u16,
    pub response_start_ns: Option<u64>,
    pub response_end_ns: Option<u64>,
    pub response_bytes: u64,
    pub request_body_bytes: u64,
}

#[derive(Debug)]
struct Dir {
    parser: Parser,
    /// Next stream offset expected by the parser.
    next: u64,
    ooo: Vec<(u64, Vec<u8>)>,
    idx: FrameIndex,
}

impl Dir {
    fn new() -> Self {
        Dir { parser: Parser::Pending, next: 0, ooo: Vec::new(), idx: FrameIndex::default() }
    }
}

/// Application state of one flow. Direction 0 = client→server, 1 = server→client.
#[derive(Debug)]
pub struct AppState {
    pub proto: Proto,
    dirs: [Dir; 2],
    pub http: Vec<HttpTx>,
    next_resp: usize,
    ev: Vec<HttpEvent>,
    /// Requests seen before the response direction's parser exists: whether each was a HEAD
    /// (handed to that parser when it is created, see [`HttpParser::expect_response`]).
    awaiting_before_response: Vec<bool>,
}

impl Default for AppState {
    fn default() -> Self {
        AppState {
            proto: Proto::Unknown,
            dirs: [Dir::new(), Dir::new()],
            http: Vec::new(),
            next_resp: 0,
            ev: Vec::new(),
            awaiting_before_response: Vec::new(),
        }
    }
}

const MAX_OOO: usize = 64;

impl AppState {
    /// Both directions stopped parsing (not a video protocol, or desynchronised): callers can
    /// skip feeding.
    #[inline]
    pub fn idle(&self) -> bool {
        self.dirs.iter().all(|d| matches!(d.parser, Parser::Off))
    }

    /// Frame index of a direction (0 = upload, 1 = download).
    pub fn frame_index(&self, dir: usize) -> &FrameIndex {
        &self.dirs[dir].idx
    }

    /// Feed payload of direction `dir` at stream offset `off` (0 = first byte after SYN).
    /// `complete` is false when the capture truncated the payload (snaplen).
    pub fn feed(&mut self, dir: usize, off: u64, data: &[u8], complete: bool, now: u64) {
        if data.is_empty() {
            if !complete {
                // Payload on the wire but none captured: this direction cannot be parsed.
                self.dirs[dir].parser = Parser::Off;
            }
            return;
        }
        if matches!(self.dirs[dir].parser, Parser::Off) {
            return;
        }
        if matches!(self.dirs[dir].parser, Parser::Pending) {
            if off != 0 {
                self.dirs[dir].parser = Parser::Off;
                return;
            }
            self.detect(dir, data);
            if matches!(self.dirs[dir].parser, Parser::Off) {
                return;
            }
        }
        let next = self.dirs[dir].next;
        let end = off + data.len() as u64;
        if end <= next {
            return; // already parsed (retransmission)
        }
        if !complete {
            // The rest of this segment is missing from the capture: parsing cannot continue.
            self.dirs[dir].parser = Parser::Off;
            return;
        }
        if off > next {
            let d = &mut self.dirs[dir];
            if d.ooo.len() >= MAX_OOO {
                d.parser = Parser::Off;
                d.ooo = Vec::new();
            } else {
                d.ooo.push((off, data.to_vec()));
            }
            return;
        }
        let skip = (next - off) as usize;
        self.run(dir, next, &data[skip..], now);
        // Drain buffered segments that are now contiguous.
        while !self.dirs[dir].ooo.is_empty() {
            let next = self.dirs[dir].next;
            let Some(i) = self.dirs[dir].ooo.iter().position(|(o, d)| *o <= next && *o + d.len() as u64 > next) else {
                self.dirs[dir].ooo.retain(|(o, d)| *o + d.len() as u64 > next);
                break;
            };
            let (o, d) = self.dirs[dir].ooo.swap_remove(i);
            let skip = (next - o) as usize;
            self.run(dir, next, &d[skip..], now);
        }
    }

    fn detect(&mut self, dir: usize, d: &[u8]) {
        let other = 1 - dir;
        let p = if (dir == 0 && http::looks_like_request(d)) || (dir == 1 && d.starts_with(b"HTTP/1.")) {
            self.proto = Proto::Http;
            let mut h = HttpParser::default();
            if dir == 1 {
                for is_head in self.awaiting_before_response.drain(..) {
                    h.expect_response(is_head);
                }
            }
            Parser::Http(h)
        } else if (d[0] == 3 || d[0] == 6) && matches!(self.proto, Proto::Unknown | Proto::Rtmp) {
            self.proto = Proto::Rtmp;
            Parser::Rtmp(Box::default())
        } else if d.starts_with(b"FLV") {
            if self.proto == Proto::Unknown {
                self.proto = Proto::Flv;
            }
            Parser::Flv(FlvParser::new(true))
        } else {
            if self.proto == Proto::Unknown {
                self.proto = Proto::Other;
            }
            Parser::Off
        };
        self.dirs[dir].parser = p;
        let _ = other;
    }

    fn run(&mut self, dir: usize, off: u64, data: &[u8], now: u64) {
        let d = &mut self.dirs[dir];
        d.next = off + data.len() as u64;
        match &mut d.parser {
            Parser::Http(h) => {
                h.feed(off, data, now, &mut d.idx, &mut self.ev);
                if h.lost {
                    d.parser = Parser::Off;
                }
            }
            Parser::Rtmp(r) => {
                r.feed(off, data, now, &mut d.idx);
                if r.lost {
                    // Keep the parser for its names, stop feeding it.
                    let r = std::mem::take(r);
                    d.parser = Parser::Rtmp(r);
                }
            }
            Parser::Flv(f) => {
                f.feed(off, data, now, &mut d.idx);
                if f.lost {
                    d.parser = Parser::Off;
                }
            }
            Parser::Pending | Parser::Off => {}
        }
        self.take_events(dir);
    }

    fn take_events(&mut self, dir: usize) {
        for e in self.ev.drain(..) {
            match (dir, e) {
                (0, HttpEvent::Head { head: Head::Request { method, path }, t_first, .. }) => {
                    // The response side must know which answers are to HEAD (no body).
                    let is_head = method == "HEAD";
                    match &mut self.dirs[1].parser {
                        Parser::Http(h) => h.expect_response(is_head),
                        _ => self.awaiting_before_response.push(is_head),
                    }
                    if self.http.len() < 100_000 {
                        self.http.push(HttpTx { method, path, request_ns: t_first, ..Default::default() });
                    }
                }
                (0, HttpEvent::End { body_bytes, .. }) => {
                    if let Some(tx) = self.http.last_mut() {
                        tx.request_body_bytes = body_bytes;
                    }
                }
                (1, HttpEvent::Head { head: Head::Response { status }, t_first, .. }) if status >= 200 => {
                    if let Some(tx) = self.http.get_mut(self.next_resp) {
                        tx.status = status;
                        tx.response_start_ns = Some(t_first);
                    }
                }
                (1, HttpEvent::End { t, body_bytes }) => {
                    if let Some(tx) = self.http.get_mut(self.next_resp) {
                        if tx.response_start_ns.is_some() {
                            tx.response_end_ns = Some(t);
                            tx.response_bytes = body_bytes;
                            self.next_resp += 1;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The flow ended at `t`.
    pub fn finish(&mut self, t: u64) {
        for dir in 0..2 {
            if let Parser::Http(h) = &mut self.dirs[dir].parser {
                h.finish(t, &mut self.ev);
                self.take_events(dir);
            }
        }
    }

    /// Channel key: RTMP "app/stream", else the first HTTP request's path (see
    /// [`http::channel_from_path`]).
    pub fn channel(&self) -> Option<String> {
        for d in &self.dirs {
            if let Parser::Rtmp(r) = &d.parser {
                if let Some(c) = r.channel() {
                    return Some(c);
                }
            }
        }
        self.http.first().map(|t| http::channel_from_path(&t.path))
    }

    /// "publish"/"play" from RTMP, or the first HTTP method.
    pub fn role(&self) -> Option<String> {
        for d in &self.dirs {
            if let Parser::Rtmp(r) = &d.parser {
                if let Some(x) = r.role {
                    return Some(x.to_string());
                }
            }
        }
        self.http.first().map(|t| t.method.clone())
    }

    /// The URL path or RTMP stream name (for the user's channel mapping).
    pub fn name(&self) -> Option<String> {
        for d in &self.dirs {
            if let Parser::Rtmp(r) = &d.parser {
                if let Some(c) = r.channel() {
                    return Some(c);
                }
            }
        }
        self.http.first().map(|t| t.path.clone())
    }
}
