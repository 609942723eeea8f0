//! FLV tag parsing on a reassembled TCP byte stream, to attribute each data packet to the video
//! frame it carries (Zhou et al. §3: I, P and voice frames; Tables 4–5, Fig. 6).
//!
//! FLV (Adobe Flash Video File Format Specification v10.1, Annex E): a 9-byte header
//! ("FLV", version 1, flags, header size), PreviousTagSize0, then tags: type (8 audio, 9 video,
//! 18 script data; the top bits are reserved/filter), 24-bit data size, 24+8-bit timestamp,
//! 24-bit stream id, the data, and a 32-bit PreviousTagSize. The first data byte of a video tag
//! holds FrameType in its high nibble: 1 = key frame (I), 2 = inter frame (P), 3 = disposable
//! inter frame (H.263 B; counted as P as the seed does: "Frames P and B (both of which are
//! called P frame for short)"), 4 = generated key frame (I), 5 = video info/command frame.
//! RTMP (rtmp.rs) carries the same audio/video payloads in messages of type 8 and 9, so both
//! parsers share [`FrameType`] and [`FrameIndex`].
//!
//! The parser is incremental (state machine with a 16-byte header buffer), is fed in-order
//! stream bytes with their TCP stream offsets (which may skip bytes, e.g. HTTP chunk headers),
//! and records one [`FrameIndex`] entry per tag, so a packet's frame type is a binary search
//! by stream offset. A malformed tag marks the parser lost; attribution stops there.

use serde::Serialize;

/// What a data packet carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum FrameType {
    /// Key frame (H.264 IDR), the seed's "I".
    I,
    /// Inter frame, the seed's "P" (P and B).
    P,
    /// Audio, the seed's "V" (voice).
    #[serde(rename = "V")]
    Audio,
    /// Script data, control messages, headers.
    #[serde(rename = "meta")]
    Meta,
    #[default]
    #[serde(rename = "unknown")]
    Unknown,
}

impl FrameType {
    pub fn as_str(self) -> &'static str {
        match self {
            FrameType::I => "I",
            FrameType::P => "P",
            FrameType::Audio => "V",
            FrameType::Meta => "meta",
            FrameType::Unknown => "unknown",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
    pub const ALL: [FrameType; 5] = [FrameType::I, FrameType::P, FrameType::Audio, FrameType::Meta, FrameType::Unknown];

    /// From an FLV/RTMP tag (message) type and the first payload byte.
    pub fn from_tag(tag_type: u8, first: u8) -> FrameType {
        match tag_type & 0x1f {
            8 => FrameType::Audio,
            9 => match first >> 4 {
                1 | 4 => FrameType::I,
                2 | 3 => FrameType::P,
                _ => FrameType::Meta,
            },
            _ => FrameType::Meta,
        }
    }

    /// From the tag type and the first bytes of its body: like [`FrameType::from_tag`], but an
    /// AVC/HEVC packet whose AVCPacketType (second body byte, FLV spec v10 E.4.3.1) is 0
    /// (sequence header: the decoder configuration) or 2 (end of sequence) carries no picture,
    /// so it is `Meta`, not an I frame, though its frame-type nibble says key frame (issue 12).
    pub fn from_tag_body(tag_type: u8, body: &[u8]) -> FrameType {
        let Some(&first) = body.first() else { return FrameType::from_tag(tag_type, 0) };
        let codec = first & 0x0f;
        let avc_like = tag_type & 0x1f == 9 && matches!(codec, 7 | 12);
        if avc_like && matches!(body.get(1), Some(0) | Some(2)) {
            return FrameType::Meta;
        }
        FrameType::from_tag(tag_type, first)
    }
}

/// Per frame type: how many frames, their bytes, and the intervals between the times the
/// server started sending consecutive frames of the type (seed Table 4 "Interval").
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameAgg {
    pub frames: u64,
    pub bytes: u64,
    pub interval_sum_ns: u64,
    pub intervals: u64,
    pub last_start_ns: Option<u64>,
}

/// Stream offset → frame type, plus per-type frame statistics.
#[derive(Clone, Debug, Default)]
pub struct FrameIndex {
    /// (first stream offset of the tag/chunk, type), sorted by offset; consecutive equal types
    /// are coalesced.
    entries: Vec<(u64, FrameType)>,
    pub agg: [FrameAgg; 5],
    /// The last HTTP chunk's (chunk-size line offset, data offset): a tag whose header starts
    /// the chunk's data begins at the chunk-size line, so a packet that starts with that line
    /// carries this tag, not the one before (issue 16, session 10: every frame's first segment
    /// of an app-limited HTTP-FLV sender was typed as the previous frame).
    pub chunk_start: Option<(u64, u64)>,
}

impl FrameIndex {
    /// A frame (tag or message) starting at stream offset `off` and first sent at `now`.
    pub fn frame(&mut self, off: u64, ft: FrameType, size: u64, now: u64) {
        let a = &mut self.agg[ft.index()];
        a.frames += 1;
        a.bytes += size;
        if let Some(l) = a.last_start_ns {
            a.interval_sum_ns += now.saturating_sub(l);
            a.intervals += 1;
        }
        a.last_start_ns = Some(now);
        let at = match self.chunk_start.take() {
            Some((line, data)) if data == off => line,
            _ => off,
        };
        self.mark(at, ft);
    }

    /// Bytes from `off` on belong to a frame of type `ft` (a continuation chunk, say).
    pub fn mark(&mut self, off: u64, ft: FrameType) {
        if let Some(&(lo, lt)) = self.entries.last() {
            if lt == ft {
                return;
            }
            if lo == off {
                self.entries.pop();
                if self.entries.last().map(|e| e.1) == Some(ft) {
                    return;
                }
            } else if off < lo {
                return; // out of order: ignore
            }
        }
        self.entries.push((off, ft));
    }

    /// Type of the byte at stream offset `off`.
    #[inline]
    pub fn at(&self, off: u64) -> FrameType {
        let i = self.entries.partition_point(|e| e.0 <= off);
        if i == 0 {
            FrameType::Unknown
        } else {
            self.entries[i - 1].1
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    FileHeader,
    Skip,
    TagHeader,
    BodyFirst,
    Body,
    PrevSize,
}

/// Incremental FLV parser.
#[derive(Clone, Debug)]
pub struct FlvParser {
    st: St,
    hdr: [u8; 16],
    have: usize,
    skip: u64,
    body_left: u64,
    tag_type: u8,
    tag_off: u64,
    cur: FrameType,
    pub lost: bool,
    pub tags: u64,
}

impl Default for FlvParser {
    fn default() -> Self {
        Self::new(true)
    }
}

impl FlvParser {
    /// `with_header`: the stream starts with the 9-byte FLV file header (true for HTTP-FLV
    /// bodies and FLV files; false for bare tag streams).
    pub fn new(with_header: bool) -> Self {
        FlvParser {
            st: if with_header { St::FileHeader } else { St::TagHeader },
            hdr: [0; 16],
            have: 0,
            skip: 0,
            body_left: 0,
            tag_type: 0,
            tag_off: 0,
            cur: FrameType::Meta,
            lost: false,
            tags: 0,
        }
    }

    /// Feed stream bytes starting at TCP stream offset `off`, first sent at `now`.
    pub fn feed(&mut self, mut off: u64, mut d: &[u8], now: u64, idx: &mut FrameIndex) {
        while !d.is_empty() && !self.lost {
            match self.st {
                St::FileHeader => {
                    if self.have == 0 {
                        idx.mark(off, FrameType::Meta);
                    }
                    let n = (9 - self.have).min(d.len());
                    self.hdr[self.have..self.have + n].copy_from_slice(&d[..n]);
                    self.have += n;
                    off += n as u64;
                    d = &d[n..];
                    if self.have == 9 {
                        if &self.hdr[..3] != b"FLV" {
                            self.lost = true;
                            return;
                        }
                        let hs = u32::from_be_bytes([self.hdr[5], self.hdr[6], self.hdr[7], self.hdr[8]]) as u64;
                        // header size (usually 9) minus what we read, plus PreviousTagSize0.
                        self.skip = hs.saturating_sub(9) + 4;
                        self.have = 0;
                        self.st = St::Skip;
                    }
                }
                St::Skip | St::PrevSize => {
                    let n = (self.skip.min(d.len() as u64)) as usize;
                    self.skip -= n as u64;
                    off += n as u64;
                    d = &d[n..];
                    if self.skip == 0 {
                        self.st = St::TagHeader;
                    }
                }
                St::TagHeader => {
                    if self.have == 0 {
                        self.tag_off = off;
                    }
                    let n = (11 - self.have).min(d.len());
                    self.hdr[self.have..self.have + n].copy_from_slice(&d[..n]);
                    self.have += n;
                    off += n as u64;
                    d = &d[n..];
                    if self.have == 11 {
                        self.have = 0;
                        self.tag_type = self.hdr[0] & 0x1f;
                        let size = u32::from_be_bytes([0, self.hdr[1], self.hdr[2], self.hdr[3]]) as u64;
                        if !matches!(self.tag_type, 8 | 9 | 18) || self.hdr[8..11] != [0, 0, 0] {
                            self.lost = true;
                            return;
                        }
                        self.body_left = size;
                        self.tags += 1;
                        if size == 0 {
                            idx.frame(self.tag_off, FrameType::from_tag(self.tag_type, 0), 0, now);
                            self.skip = 4;
                            self.st = St::PrevSize;
                        } else {
                            self.st = St::BodyFirst;
                        }
                    }
                }
                St::BodyFirst => {
                    self.cur = FrameType::from_tag_body(self.tag_type, d);
                    idx.frame(self.tag_off, self.cur, self.body_left, now);
                    self.st = St::Body;
                }
                St::Body => {
                    let n = (self.body_left.min(d.len() as u64)) as usize;
                    self.body_left -= n as u64;
                    off += n as u64;
                    d = &d[n..];
                    if self.body_left == 0 {
                        self.skip = 4;
                        self.st = St::PrevSize;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One FLV tag (header, body, previous-tag-size trailer) for test streams; also used by http.rs's tests.
    pub(crate) fn tag(t: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![t];
        let n = body.len() as u32;
        v.extend_from_slice(&n.to_be_bytes()[1..]);
        v.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(body);
        v.extend_from_slice(&(11 + n).to_be_bytes());
        v
    }

    #[test]
    fn tags_are_indexed_by_stream_offset_across_split_feeds() {
        let mut s = b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
        let i_off = s.len() as u64;
        s.extend(tag(9, &[0x17; 3000]));
        let a_off = s.len() as u64;
        s.extend(tag(8, &[0xaf; 200]));
        let p_off = s.len() as u64;
        s.extend(tag(9, &[0x27; 900]));
        let mut p = FlvParser::new(true);
        let mut idx = FrameIndex::default();
        for (k, c) in s.chunks(7).enumerate() {
            p.feed(k as u64 * 7, c, k as u64, &mut idx);
        }
        assert!(!p.lost);
        assert_eq!(idx.at(i_off + 100), FrameType::I);
        assert_eq!(idx.at(a_off + 5), FrameType::Audio);
        assert_eq!(idx.at(p_off), FrameType::P);
        assert_eq!(idx.at(2), FrameType::Meta);
        assert_eq!(idx.agg[FrameType::I.index()].frames, 1);
        assert_eq!(idx.agg[FrameType::P.index()].bytes, 900);
    }

    #[test]
    fn garbage_marks_parser_lost() {
        let mut p = FlvParser::new(true);
        let mut idx = FrameIndex::default();
        p.feed(0, b"GIF89a....................", 0, &mut idx);
        assert!(p.lost);
    }
}
