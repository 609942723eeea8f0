//! RTMP parsing on a reassembled TCP byte stream (Adobe RTMP Specification 1.0, 2012):
//! handshake, chunk stream (§5.3), Set Chunk Size (§5.4.1) and AMF0 commands connect /
//! publish / play (§7.2), so that each data packet is attributed to the audio (message type 8)
//! or video (type 9, I or P by the FLV VideoTagHeader FrameType nibble) message it carries, and
//! the flow gets a channel key "app/stream" to pair a publisher's upload with the viewers'
//! downloads of the same channel (Zhou et al. §2.3).
//!
//! Both directions start with a fixed-size handshake: the client sends C0 (1 byte) + C1 (1536)
//! and later C2 (1536); the server sends S0 + S1 + S2 (1 + 1536 + 1536). Each direction thus
//! skips 3073 bytes before its first chunk. Chunks: basic header (fmt 2 bits, chunk stream id
//! in 1–3 bytes), message header of 11/7/3/0 bytes for fmt 0/1/2/3, an extended timestamp when
//! the 24-bit field is 0xFFFFFF (and on fmt 3 continuations of such a message), then up to
//! chunk-size payload bytes. Parsing is incremental; an unparsable header marks the parser lost.

use crate::flv::{FrameIndex, FrameType};

const HANDSHAKE: u64 = 1 + 1536 + 1536;

#[derive(Clone, Copy, Debug, Default)]
struct Cs {
    id: u32,
    msg_len: u32,
    msg_type: u8,
    left: u32,
    ext: bool,
    cur: FrameType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Handshake,
    Basic,
    Header,
    BodyFirst,
    Body,
}

/// Incremental parser for one direction of an RTMP connection.
#[derive(Clone, Debug)]
pub struct RtmpParser {
    st: St,
    skip: u64,
    hdr: [u8; 20],
    have: usize,
    need: usize,
    chunk_off: u64,
    chunk_size: u32,
    chunk_left: u32,
    cs: Vec<Cs>,
    cur: usize,
    ext_added: bool,
    /// Payload of the current control/command message (types 1, 17, 20), bounded.
    msg: Vec<u8>,
    pub lost: bool,
    pub messages: u64,
    /// From `connect`: the application name.
    pub app: Option<String>,
    /// From `publish` or `play`: the stream name.
    pub stream: Option<String>,
    /// "publish" or "play".
    pub role: Option<&'static str>,
}

impl Default for RtmpParser {
    fn default() -> Self {
        RtmpParser {
            st: St::Handshake,
            skip: HANDSHAKE,
            hdr: [0; 20],
            have: 0,
            need: 1,
            chunk_off: 0,
            chunk_size: 128,
            chunk_left: 0,
            cs: Vec::new(),
            cur: 0,
            ext_added: false,
            msg: Vec::new(),
            lost: false,
            messages: 0,
            app: None,
            stream: None,
            role: None,
        }
    }
}

impl RtmpParser {
    /// Feed in-order stream bytes starting at stream offset `off`, sent at `now`.
    pub fn feed(&mut self, mut off: u64, mut d: &[u8], now: u64, idx: &mut FrameIndex) {
        while !d.is_empty() && !self.lost {
            match self.st {
                St::Handshake => {
                    if self.skip == HANDSHAKE {
                        idx.mark(off, FrameType::Meta);
                        if d[0] != 3 && d[0] != 6 {
                            self.lost = true;
                            return;
                        }
                    }
                    let n = self.skip.min(d.len() as u64) as usize;
                    self.skip -= n as u64;
                    off += n as u64;
                    d = &d[n..];
                    if self.skip == 0 {
                        self.st = St::Basic;
                        self.have = 0;
                        self.need = 1;
                    }
                }
                St::Basic => {
                    if self.have == 0 {
                        self.chunk_off = off;
                    }
                    self.hdr[self.have] = d[0];
                    self.have += 1;
                    off += 1;
                    d = &d[1..];
                    let b0 = self.hdr[0];
                    let need = match b0 & 0x3f {
                        0 => 2,
                        1 => 3,
                        _ => 1,
                    };
                    if self.have < need {
                        continue;
                    }
                    let csid = match b0 & 0x3f {
                        0 => 64 + self.hdr[1] as u32,
                        1 => 64 + self.hdr[1] as u32 + 256 * self.hdr[2] as u32,
                        c => c as u32,
                    };
                    let fmt = b0 >> 6;
                    self.cur = match self.cs.iter().position(|c| c.id == csid) {
                        Some(i) => i,
                        None => {
                            if self.cs.len() >= 64 || fmt != 0 && fmt != 1 {
                                // A new chunk stream must start with a full header (fmt 0/1).
                                self.lost = true;
                                return;
                            }
                            self.cs.push(Cs { id: csid, ..Default::default() });
                            self.cs.len() - 1
                        }
                    };
                    let ext = self.cs[self.cur].ext;
                    self.need = match fmt {
                        0 => 11,
                        1 => 7,
                        2 => 3,
                        _ => {
                            if ext {
                                4
                            } else {
                                0
                            }
                        }
                    };
                    self.hdr[0] = fmt;
                    self.have = 0;
                    self.ext_added = fmt == 3 && ext;
                    self.st = St::Header;
                    if self.need == 0 {
                        self.start_chunk(idx);
                    }
                }
                St::Header => {
                    let n = (self.need - self.have).min(d.len());
                    self.hdr[1 + self.have..1 + self.have + n].copy_from_slice(&d[..n]);
                    self.have += n;
                    off += n as u64;
                    d = &d[n..];
                    if self.have < self.need {
                        continue;
                    }
                    let fmt = self.hdr[0];
                    let h = &self.hdr[1..];
                    let c = &mut self.cs[self.cur];
                    if fmt <= 2 && !self.ext_added {
                        let ts = u32::from_be_bytes([0, h[0], h[1], h[2]]);
                        c.ext = ts == 0xFF_FFFF;
                        if c.ext {
                            // Extended timestamp follows: read 4 more bytes.
                            self.ext_added = true;
                            self.need += 4;
                            continue;
                        }
                    }
                    if fmt <= 1 {
                        c.msg_len = u32::from_be_bytes([0, h[3], h[4], h[5]]);
                        c.msg_type = h[6];
                        if c.left != 0 {
                            // A new message header in the middle of a message: desynchronised.
                            self.lost = true;
                            return;
                        }
                    }
                    self.start_chunk(idx);
                }
                St::BodyFirst => {
                    let c = &mut self.cs[self.cur];
                    c.cur = FrameType::from_tag_body(c.msg_type, d);
                    let (t, len, ct) = (c.cur, c.msg_len, c.msg_type);
                    if matches!(ct, 8 | 9) {
                        idx.frame(self.chunk_off, t, len as u64, now);
                    } else {
                        idx.mark(self.chunk_off, FrameType::Meta);
                    }
                    self.st = St::Body;
                }
                St::Body => {
                    let n = (self.chunk_left as usize).min(d.len());
                    let c = self.cs[self.cur];
                    if matches!(c.msg_type, 1 | 17 | 20) && self.msg.len() + n <= 8192 {
                        self.msg.extend_from_slice(&d[..n]);
                    }
                    self.chunk_left -= n as u32;
                    self.cs[self.cur].left -= n as u32;
                    off += n as u64;
                    d = &d[n..];
                    if self.chunk_left == 0 {
                        if self.cs[self.cur].left == 0 {
                            self.end_message();
                        }
                        self.st = St::Basic;
                        self.have = 0;
                    }
                }
            }
        }
    }

    fn start_chunk(&mut self, idx: &mut FrameIndex) {
        let chunk_size = self.chunk_size;
        let c = &mut self.cs[self.cur];
        let first = c.left == 0;
        if first {
            c.left = c.msg_len;
            self.msg.clear();
        }
        self.chunk_left = c.left.min(chunk_size);
        self.have = 0;
        if c.msg_len == 0 {
            self.messages += 1;
            self.st = St::Basic;
            return;
        }
        self.st = if first { St::BodyFirst } else { St::Body };
        if !first {
            // Continuation chunk: its bytes belong to the message's frame.
            let t = if matches!(c.msg_type, 8 | 9) { c.cur } else { FrameType::Meta };
            idx.mark(self.chunk_off, t);
        }
    }

    fn end_message(&mut self) {
        self.messages += 1;
        let c = self.cs[self.cur];
        match c.msg_type {
            1 if self.msg.len() >= 4 => {
                let v = u32::from_be_bytes([self.msg[0], self.msg[1], self.msg[2], self.msg[3]]) & 0x7fff_ffff;
                if (1..=0x00ff_ffff).contains(&v) {
                    self.chunk_size = v;
                }
            }
            17 | 20 => {
                let body = if c.msg_type == 17 && !self.msg.is_empty() { &self.msg[1..] } else { &self.msg[..] };
                let body = body.to_vec();
                self.command(&body);
            }
            _ => {}
        }
    }

    fn command(&mut self, b: &[u8]) {
        let mut r = Amf0 { b, p: 0 };
        let Some(Amf::Str(name)) = r.value() else { return };
        match name.as_str() {
            "connect" => {
                let _txn = r.value();
                if let Some(app) = r.object_string("app") {
                    self.app = Some(app);
                }
            }
            "publish" | "play" => {
                let _txn = r.value();
                let _cmd_obj = r.value();
                if let Some(Amf::Str(s)) = r.value() {
                    // Strip query parameters (tokens) from the stream name.
                    let s = s.split('?').next().unwrap_or("").to_string();
                    self.stream = Some(s);
                    self.role = Some(if name == "publish" { "publish" } else { "play" });
                }
            }
            _ => {}
        }
    }

    /// The channel key "app/stream" once known.
    pub fn channel(&self) -> Option<String> {
        self.stream.as_ref().map(|s| match &self.app {
            Some(a) => format!("{a}/{s}"),
            None => s.clone(),
        })
    }
}

enum Amf {
    Num,
    Str(String),
    Other,
}

struct Amf0<'a> {
    b: &'a [u8],
    p: usize,
}

impl Amf0<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.p..self.p + n)?;
        self.p += n;
        Some(s)
    }
    fn str16(&mut self) -> Option<String> {
        let l = self.take(2)?;
        let l = u16::from_be_bytes([l[0], l[1]]) as usize;
        Some(String::from_utf8_lossy(self.take(l)?).into_owned())
    }
    fn value(&mut self) -> Option<Amf> {
        let t = *self.take(1)?.first()?;
        match t {
            0x00 => {
                self.take(8)?;
                Some(Amf::Num)
            }
            0x01 => {
                self.take(1)?;
                Some(Amf::Other)
            }
            0x02 => Some(Amf::Str(self.str16()?)),
            0x03 => {
                self.skip_props()?;
                Some(Amf::Other)
            }
            0x05 | 0x06 => Some(Amf::Other),
            0x08 => {
                self.take(4)?;
                self.skip_props()?;
                Some(Amf::Other)
            }
            0x0C => {
                let l = self.take(4)?;
                let l = u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize;
                Some(Amf::Str(String::from_utf8_lossy(self.take(l)?).into_owned()))
            }
            _ => None,
        }
    }
    fn skip_props(&mut self) -> Option<()> {
        for _ in 0..256 {
            let k = self.str16()?;
            if k.is_empty() {
                self.take(1)?; // object end marker 0x09
                return Some(());
            }
            self.value()?;
        }
        None
    }
    /// Read an object value and return the string property `key`.
    fn object_string(&mut self, key: &str) -> Option<String> {
        if *self.take(1)?.first()? != 0x03 {
            return None;
        }
        let mut found = None;
        for _ in 0..256 {
            let k = self.str16()?;
            if k.is_empty() {
                break;
            }
            match self.value()? {
                Amf::Str(s) if k == key => found = Some(s),
                _ => {}
            }
        }
        found
    }
}
