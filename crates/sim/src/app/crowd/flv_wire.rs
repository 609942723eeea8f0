//! The bytes of HTTP-FLV on the wire: an FLV stream (Adobe Flash Video File Format Specification
//! v10.1, Annex E) inside an HTTP/1.1 chunked body (RFC 9112 §7.1), one HTTP chunk per FLV tag —
//! what an HTTP-FLV push client writes per frame and what a live front-end relays per frame.
//!
//! A tag on the wire is `{size:x}\r\n` + the 11-byte tag header (type, 24-bit data size, 24+8-bit
//! timestamp, 24-bit stream id 0) + the body + the 32-bit PreviousTagSize (11 + body) + `\r\n`.
//! Bodies start as real ones do — video: FrameType/CodecID (0x17 key frame AVC, 0x27 inter frame
//! AVC), AVCPacketType 1 (NALU) or 0 (sequence header), composition time 0; audio: 0xAF (AAC,
//! 44 kHz, 16 bit, stereo) and AACPacketType 1 (raw) — and the rest of the body is zeros (not a
//! decodable picture; the frame-type bytes and sizes are what the analyzer reads). Only these
//! texts go to the payload book; undescribed bytes are zeros there too, so bodies cost nothing.

/// What a tag carries (the frame classes of seed 000 §1.1, plus stream metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagKind {
    /// Key frame (the seed's I).
    I,
    /// Inter frame (the seed's P).
    P,
    /// Audio (the seed's V, "voice").
    Audio,
    /// Script data (onMetaData) or the AVC sequence header: no picture.
    Meta,
}

impl TagKind {
    /// The analyzer's label for this kind (crates/trace `FrameType::as_str`).
    pub fn label(self) -> &'static str {
        match self {
            TagKind::I => "I",
            TagKind::P => "P",
            TagKind::Audio => "V",
            TagKind::Meta => "meta",
        }
    }
}

/// The FLV file header (audio and video present) and PreviousTagSize0.
pub const FLV_HEADER: [u8; 13] = [b'F', b'L', b'V', 1, 0x05, 0, 0, 0, 9, 0, 0, 0, 0];

/// One tag as HTTP-chunk text around a zero body: `prefix`, then `zeros` zero bytes, then `suffix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireTag {
    pub prefix: Vec<u8>,
    /// Where the FLV tag header starts in `prefix` (after the chunk-size line).
    pub tag_at: usize,
    pub zeros: u64,
    pub suffix: Vec<u8>,
}

impl WireTag {
    pub fn len(&self) -> u64 {
        self.prefix.len() as u64 + self.zeros + self.suffix.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// FLV tag type and first body bytes of a tag of `kind` (`seq_header` picks the AVC sequence
/// header for a `Meta` video tag; otherwise `Meta` is an onMetaData script tag).
fn body_start(kind: TagKind, seq_header: bool) -> (u8, &'static [u8]) {
    match kind {
        TagKind::I => (9, &[0x17, 0x01, 0, 0, 0]),
        TagKind::P => (9, &[0x27, 0x01, 0, 0, 0]),
        TagKind::Audio => (8, &[0xAF, 0x01]),
        TagKind::Meta if seq_header => (9, &[0x17, 0x00, 0, 0, 0]),
        // AMF0 string "onMetaData" then an AMF0 null (an empty metadata object is legal).
        TagKind::Meta => (18, &[0x02, 0x00, 0x0a, b'o', b'n', b'M', b'e', b't', b'a', b'D', b'a', b't', b'a', 0x05]),
    }
}

/// One tag of `body_len` bytes (at least the body start's length) with timestamp `ts_ms`, framed
/// as one HTTP chunk.
pub fn tag(kind: TagKind, seq_header: bool, body_len: u32, ts_ms: u32) -> WireTag {
    let (ty, start) = body_start(kind, seq_header);
    let body_len = body_len.max(start.len() as u32);
    let tag_len = 11 + body_len as u64 + 4;
    let mut prefix = format!("{tag_len:x}\r\n").into_bytes();
    let tag_at = prefix.len();
    prefix.push(ty);
    prefix.extend_from_slice(&body_len.to_be_bytes()[1..]);
    prefix.extend_from_slice(&(ts_ms & 0x00ff_ffff).to_be_bytes()[1..]);
    prefix.push((ts_ms >> 24) as u8);
    prefix.extend_from_slice(&[0, 0, 0]);
    prefix.extend_from_slice(start);
    let mut suffix = (11 + body_len).to_be_bytes().to_vec();
    suffix.extend_from_slice(b"\r\n");
    WireTag { prefix, tag_at, zeros: (body_len as usize - start.len()) as u64, suffix }
}

/// The FLV header as one HTTP chunk.
pub fn header_chunk() -> Vec<u8> {
    let mut v = format!("{:x}\r\n", FLV_HEADER.len()).into_bytes();
    v.extend_from_slice(&FLV_HEADER);
    v.extend_from_slice(b"\r\n");
    v
}

/// The publisher's request head (HTTP-FLV push of channel `channel`).
pub fn publish_head(channel: u32) -> String {
    format!(
        "POST /live/ch{channel}.flv HTTP/1.1\r\nHost: fe.tcpvideo.test\r\nContent-Type: video/x-flv\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
}

/// The subscriber's request head.
pub fn play_head(channel: u32) -> String {
    format!("GET /live/ch{channel}.flv HTTP/1.1\r\nHost: fe.tcpvideo.test\r\nAccept: */*\r\n\r\n")
}

/// The front-end's response head to a subscriber (body: chunked FLV until the viewer leaves).
pub const PLAY_RESPONSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nServer: tcpvideo-sim-frontend\r\nContent-Type: video/x-flv\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(t: &WireTag) -> Vec<u8> {
        let mut v = t.prefix.clone();
        v.extend(std::iter::repeat_n(0u8, t.zeros as usize));
        v.extend_from_slice(&t.suffix);
        v
    }

    #[test]
    fn a_tag_is_one_http_chunk_holding_header_body_and_previous_tag_size() {
        let t = tag(TagKind::I, false, 1000, 0x0102_0304);
        let b = bytes(&t);
        let line_end = b.iter().position(|&x| x == b'\n').unwrap() + 1;
        let size = usize::from_str_radix(std::str::from_utf8(&b[..line_end - 2]).unwrap(), 16).unwrap();
        assert_eq!(size, 11 + 1000 + 4);
        assert_eq!(b.len(), line_end + size + 2);
        assert!(b.ends_with(b"\r\n"));
        let tag = &b[line_end..line_end + size];
        assert_eq!(tag[0], 9, "video tag");
        assert_eq!(u32::from_be_bytes([0, tag[1], tag[2], tag[3]]), 1000, "DataSize");
        // Timestamp: lower 24 bits then the extended byte.
        assert_eq!([tag[4], tag[5], tag[6], tag[7]], [0x02, 0x03, 0x04, 0x01]);
        assert_eq!(tag[11] >> 4, 1, "key frame");
        assert_eq!(u32::from_be_bytes(tag[size - 4..].try_into().unwrap()), 1011, "PreviousTagSize");
    }

    #[test]
    fn audio_and_inter_frames_carry_their_type_in_the_first_body_byte() {
        assert_eq!(bytes(&tag(TagKind::P, false, 3000, 0))[5 + 11] >> 4, 2);
        let a = tag(TagKind::Audio, false, 189, 0);
        assert_eq!(a.prefix[a.prefix.len() - 2], 0xAF);
        assert_eq!(a.prefix[a.prefix.iter().position(|&x| x == b'\n').unwrap() + 1], 8);
    }
}
