//! Real payload bytes for captured packets: what each connection's byte streams contain, so a
//! simulated pcap shows real HTTP (request lines, status lines, headers, playlist bodies) and
//! segment bodies that start like real media.
//!
//! Endpoints move byte counts, not bytes (hot path, no allocation per packet). Applications that
//! want their bytes on the wire describe each stream as a list of chunks at stream offsets — a
//! text (an HTTP head, a playlist) or a generated media body — and the pcap writer asks the book
//! for the bytes of a packet's payload when it writes the frame. A packet's stream offset is its
//! sequence number minus the direction's ISN minus one (the SYN); streams longer than 4 GiB would
//! wrap and are not supported (a segment-streaming connection moves megabytes).
//!
//! Media bodies (generated, never stored):
//! - MPEG-TS (HLS `.ts`, ISO/IEC 13818-1 §2.4.3.2): 188-byte packets, each with the 4-byte header
//!   `0x47 | PUSI,PID | PID | adaptation=01,continuity counter`; packet 0 carries PID 0 (PAT),
//!   packet 1 PID 0x1000 (PMT), the rest PID 0x100 (video), payload bytes 0xFF. Not a decodable
//!   stream — the headers are real, the elementary stream is filler.
//! - fragmented MP4 (DASH `.m4s`, ISO/IEC 14496-12 §4.2, §8.16.2): a 24-byte `styp` box (major
//!   brand `msdh`, compatible `msdh`,`msix`), then one `mdat` box holding the rest, zeros.
//!
//! Bytes no chunk describes are zeros (the writer's old behaviour).

use std::sync::{Arc, Mutex};

use crate::packet::Packet;

/// How a segment body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaFormat {
    /// HLS: MPEG transport stream.
    MpegTs,
    /// DASH: fragmented MP4 media segment.
    Fmp4,
}

/// What a chunk of a stream holds.
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkData {
    Text(Arc<[u8]>),
    /// A media body of `len` bytes.
    Media(MediaFormat),
}

#[derive(Clone, Debug, PartialEq)]
struct Chunk {
    offset: u64,
    len: u64,
    data: ChunkData,
}

/// One direction of one connection.
#[derive(Clone, Debug, Default)]
struct StreamBook {
    /// Initial sequence number of this direction (the SYN's), once the connection exists.
    isn: Option<u32>,
    /// Chunks in offset order (applications append in stream order).
    chunks: Vec<Chunk>,
}

/// The streams of every connection of a run: `[conn][0 = client→server, 1 = server→client]`.
#[derive(Debug, Default)]
pub struct PayloadBook {
    conns: Vec<[StreamBook; 2]>,
    /// Client node of each connection, to tell a packet's direction.
    client_node: Vec<u32>,
}

/// The book shared by the applications (which append) and the pcap taps (which read).
pub type SharedPayloads = Arc<Mutex<PayloadBook>>;

impl PayloadBook {
    fn conn_mut(&mut self, conn: u32) -> &mut [StreamBook; 2] {
        let i = conn as usize;
        if self.conns.len() <= i {
            self.conns.resize_with(i + 1, Default::default);
            self.client_node.resize(i + 1, u32::MAX);
        }
        &mut self.conns[i]
    }

    /// Connection `conn` opened: its client node and both directions' ISNs.
    pub fn open(&mut self, conn: u32, client_node: u32, client_isn: u32, server_isn: u32) {
        let c = self.conn_mut(conn);
        c[0].isn = Some(client_isn);
        c[1].isn = Some(server_isn);
        self.client_node[conn as usize] = client_node;
    }

    /// Describe `len` bytes at `offset` of direction `dir` (0 = client→server) of `conn`.
    pub fn append(&mut self, conn: u32, dir: usize, offset: u64, len: u64, data: ChunkData) {
        if len == 0 {
            return;
        }
        self.conn_mut(conn)[dir]
            .chunks
            .push(Chunk { offset, len, data });
    }

    /// Fill `out` (the packet's payload, `p.payload_len` long) with the bytes the stream holds.
    pub fn fill(&self, p: &Packet, out: &mut [u8]) {
        out.fill(0);
        let Some(conn) = self.conns.get(p.flow as usize) else {
            return;
        };
        let dir = if self.client_node[p.flow as usize] == p.src_node {
            0
        } else {
            1
        };
        let book = &conn[dir];
        let Some(isn) = book.isn else { return };
        let start = p.seq.wrapping_sub(isn).wrapping_sub(1) as u64;
        let end = start + out.len() as u64;
        let first = book.chunks.partition_point(|c| c.offset + c.len <= start);
        for c in &book.chunks[first..] {
            if c.offset >= end {
                break;
            }
            let lo = c.offset.max(start);
            let hi = (c.offset + c.len).min(end);
            let dst = &mut out[(lo - start) as usize..(hi - start) as usize];
            match &c.data {
                ChunkData::Text(t) => {
                    let from = (lo - c.offset) as usize;
                    dst.copy_from_slice(&t[from..from + dst.len()]);
                }
                ChunkData::Media(f) => media_bytes(*f, c.len, lo - c.offset, dst),
            }
        }
    }
}

/// Size of an MPEG-TS packet.
pub const TS_PACKET: u64 = 188;
const TS_PIDS: [u16; 3] = [0x0000, 0x1000, 0x0100];

/// Bytes `[at, at + out.len())` of a media body of `total` bytes in `format`.
pub fn media_bytes(format: MediaFormat, total: u64, at: u64, out: &mut [u8]) {
    match format {
        MediaFormat::MpegTs => {
            for (i, b) in out.iter_mut().enumerate() {
                let o = at + i as u64;
                let (pkt, pos) = (o / TS_PACKET, o % TS_PACKET);
                let pid = TS_PIDS[pkt.min(2) as usize];
                // Each packet starts a new unit on PAT/PMT and on the first video packet.
                let pusi = if pkt <= 2 { 0x40 } else { 0 };
                *b = match pos {
                    0 => 0x47,
                    1 => pusi | (pid >> 8) as u8,
                    2 => pid as u8,
                    3 => 0x10 | (pkt as u8 & 0x0f),
                    _ => 0xff,
                };
            }
        }
        MediaFormat::Fmp4 => {
            let mut head = [0u8; 32];
            head[0..4].copy_from_slice(&24u32.to_be_bytes());
            head[4..8].copy_from_slice(b"styp");
            head[8..12].copy_from_slice(b"msdh");
            head[16..20].copy_from_slice(b"msdh");
            head[20..24].copy_from_slice(b"msix");
            head[24..28].copy_from_slice(
                &(total.saturating_sub(24).min(u32::MAX as u64) as u32).to_be_bytes(),
            );
            head[28..32].copy_from_slice(b"mdat");
            for (i, b) in out.iter_mut().enumerate() {
                let o = at + i as u64;
                *b = if o < 32 { head[o as usize] } else { 0 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests_support::packet;

    #[test]
    fn ts_bodies_are_188_byte_packets_with_sync_bytes_and_counting_continuity() {
        let mut b = vec![0u8; 188 * 5];
        media_bytes(MediaFormat::MpegTs, 188 * 5, 0, &mut b);
        for k in 0..5 {
            assert_eq!(b[188 * k], 0x47);
            assert_eq!(b[188 * k + 3] & 0x0f, k as u8);
        }
        assert_eq!(&b[0..3], &[0x47, 0x40, 0x00], "PAT on PID 0 starts a unit");
        assert_eq!(
            ((b[188 * 4 + 1] as u16 & 0x1f) << 8) | b[188 * 4 + 2] as u16,
            0x100
        );
        // A window in the middle equals the same bytes generated from the start.
        let mut mid = vec![0u8; 300];
        media_bytes(MediaFormat::MpegTs, 188 * 5, 100, &mut mid);
        assert_eq!(&mid[..], &b[100..400]);
    }

    #[test]
    fn fmp4_bodies_open_with_styp_then_an_mdat_holding_the_rest() {
        let mut b = vec![0u8; 40];
        media_bytes(MediaFormat::Fmp4, 1000, 0, &mut b);
        assert_eq!(&b[4..8], b"styp");
        assert_eq!(u32::from_be_bytes(b[0..4].try_into().unwrap()), 24);
        assert_eq!(&b[28..32], b"mdat");
        assert_eq!(u32::from_be_bytes(b[24..28].try_into().unwrap()), 976);
    }

    #[test]
    fn a_packet_gets_the_bytes_at_its_stream_offset_across_chunks() {
        let mut book = PayloadBook::default();
        book.open(0, 7, 1000, 5000);
        book.append(0, 0, 0, 4, ChunkData::Text(Arc::from(&b"GET "[..])));
        book.append(0, 0, 4, 3, ChunkData::Text(Arc::from(&b"/x\n"[..])));
        let mut p = packet(7, 9, 5);
        p.seq = 1000 + 1 + 2; // stream offset 2
        let mut out = [0u8; 5];
        book.fill(&p, &mut out);
        assert_eq!(&out, b"T /x\n");
        // The other direction has nothing described: zeros.
        let mut q = packet(9, 7, 3);
        q.seq = 5001;
        let mut out = [9u8; 3];
        book.fill(&q, &mut out);
        assert_eq!(out, [0, 0, 0]);
    }
}
