//! A classic-pcap writer for simulated packets, with real Ethernet/IPv4/TCP headers.
//!
//! File format: the libpcap "classic" format (tcpdump.org/manpages/pcap-savefile.5.html): a
//! 24-byte global header (magic 0xa1b2c3d4 for microsecond or 0xa1b23c4d for nanosecond
//! timestamps, version 2.4, snaplen, LINKTYPE_ETHERNET = 1) and one 16-byte record header per frame.
//!
//! Frames: Ethernet II (locally administered MACs 02:00:00:00:hi:lo derived from node ids,
//! EtherType 0x0800), IPv4 (RFC 791; IHL 5, DF set and TTL 64 as Linux sends TCP, header checksum
//! per RFC 1071), TCP (RFC 9293) with its checksum over the RFC 9293 §3.1 pseudo-header. Options are
//! written in the order and padding Linux's `tcp_options_write` (net/ipv4/tcp_output.c) uses, so a
//! simulated SYN is byte-for-byte shaped like a Linux SYN:
//! `MSS | SACK_PERM TS` (or `NOP NOP TS`, or `NOP NOP SACK_PERM` without timestamps) `| NOP WS`,
//! and on other segments `NOP NOP TS | NOP NOP SACK blocks`.
//! Payload: when the run keeps a [`crate::payload::PayloadBook`] (applications that put real
//! bytes on the wire: HTTP heads, playlists, media bodies), the sink asks it for each packet's
//! payload and the TCP checksum covers it; otherwise payload is written as zeros (zero bytes do
//! not change a ones'-complement sum). Either way the checksum is that of the full segment, and
//! the payload is truncated at the snaplen; Wireshark validates it whenever the whole segment is
//! captured.
//!
//! Capture points ([`PcapSink`]) behave like tcpdump on one end of a link: outgoing frames are
//! stamped when their transmission starts (after the queue, as Linux's packet taps see them) and
//! incoming frames when their last bit arrives. Because a transmission start may lie in the future
//! of the event being processed (the link computes it when the packet is queued), records pass
//! through a small reorder heap and are written once the clock has passed them; the file is thus in
//! timestamp order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use tcpvideo_model::Time;

use crate::packet::{flags, NodeId, Packet};
use crate::payload::SharedPayloads;

/// Timestamp resolution of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsResolution {
    Micro,
    Nano,
}

pub const LINKTYPE_ETHERNET: u32 = 1;
pub const ETH_HEADER: usize = 14;

/// The MAC address the simulator gives a node.
pub fn mac_of(node: NodeId) -> [u8; 6] {
    [0x02, 0, (node >> 24) as u8, (node >> 16) as u8, (node >> 8) as u8, node as u8]
}

/// RFC 1071 ones'-complement sum of `data` added to `acc` (not folded).
fn sum16(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Write the TCP options of `p` in Linux's layout; returns their length (a multiple of 4).
fn write_options(p: &Packet, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    let o = &p.options;
    if let Some(mss) = o.mss {
        out.extend_from_slice(&[2, 4]);
        out.extend_from_slice(&mss.to_be_bytes());
    }
    if let Some((tsval, tsecr)) = o.timestamps {
        if o.sack_permitted {
            out.extend_from_slice(&[4, 2, 8, 10]);
        } else {
            out.extend_from_slice(&[1, 1, 8, 10]);
        }
        out.extend_from_slice(&tsval.to_be_bytes());
        out.extend_from_slice(&tsecr.to_be_bytes());
    } else if o.sack_permitted {
        out.extend_from_slice(&[1, 1, 4, 2]);
    }
    if let Some(ws) = o.window_scale {
        out.extend_from_slice(&[1, 3, 3, ws]);
    }
    let blocks = o.sack();
    if !blocks.is_empty() {
        // At most 4 blocks fit without timestamps, 3 with them (RFC 2018 §3).
        let max = if o.timestamps.is_some() { 3 } else { 4 };
        let n = blocks.len().min(max);
        out.extend_from_slice(&[1, 1, 5, (2 + 8 * n) as u8]);
        for &(l, r) in &blocks[..n] {
            out.extend_from_slice(&l.to_be_bytes());
            out.extend_from_slice(&r.to_be_bytes());
        }
    }
    out.len() - start
}

/// Build the full frame headers (Ethernet + IPv4 + TCP with options) of `p` into `out` (cleared
/// first). Returns the frame length on the wire (headers plus the full payload), i.e. orig_len.
pub fn build_headers(p: &Packet, out: &mut Vec<u8>) -> usize {
    out.clear();
    // Ethernet II
    out.extend_from_slice(&mac_of(p.dst_node));
    out.extend_from_slice(&mac_of(p.src_node));
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    // IPv4 header, checksum patched below
    let ip_start = out.len();
    out.extend_from_slice(&[0x45, 0, 0, 0]);
    out.extend_from_slice(&p.ip_id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // DF, offset 0
    out.extend_from_slice(&[64, 6, 0, 0]); // TTL, TCP, checksum
    out.extend_from_slice(&p.src_ip.to_be_bytes());
    out.extend_from_slice(&p.dst_ip.to_be_bytes());
    // TCP header, data offset and checksum patched below
    let tcp_start = out.len();
    out.extend_from_slice(&p.src_port.to_be_bytes());
    out.extend_from_slice(&p.dst_port.to_be_bytes());
    out.extend_from_slice(&p.seq.to_be_bytes());
    let ack = if p.has(flags::ACK) { p.ack } else { 0 };
    out.extend_from_slice(&ack.to_be_bytes());
    out.extend_from_slice(&[0, p.flags]);
    out.extend_from_slice(&p.window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    let opt_len = write_options(p, out);
    debug_assert_eq!(opt_len % 4, 0);
    let tcp_hdr_len = 20 + opt_len;
    out[tcp_start + 12] = ((tcp_hdr_len / 4) as u8) << 4;
    let tcp_len = tcp_hdr_len + p.payload_len as usize;
    let total_len = 20 + tcp_len;
    out[ip_start + 2..ip_start + 4].copy_from_slice(&(total_len as u16).to_be_bytes());
    let ip_csum = fold(sum16(0, &out[ip_start..ip_start + 20]));
    out[ip_start + 10..ip_start + 12].copy_from_slice(&ip_csum.to_be_bytes());
    // TCP checksum: pseudo-header + header (+ zero payload, which adds nothing).
    let mut acc = sum16(0, &out[ip_start + 12..ip_start + 20]);
    acc += 6 + tcp_len as u32;
    acc = sum16(acc, &out[tcp_start..tcp_start + tcp_hdr_len]);
    let tcp_csum = fold(acc);
    out[tcp_start + 16..tcp_start + 18].copy_from_slice(&tcp_csum.to_be_bytes());
    ETH_HEADER + total_len
}

/// Writes frames to a classic pcap stream.
pub struct PcapWriter<W: Write> {
    w: W,
    snaplen: u32,
    res: TsResolution,
    scratch: Vec<u8>,
    zeros: Vec<u8>,
    pub frames: u64,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut w: W, snaplen: u32, res: TsResolution) -> io::Result<Self> {
        let magic: u32 = match res {
            TsResolution::Micro => 0xa1b2_c3d4,
            TsResolution::Nano => 0xa1b2_3c4d,
        };
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&magic.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter { w, snaplen, res, scratch: Vec::with_capacity(128), zeros: Vec::new(), frames: 0 })
    }

    /// Append one frame stamped `ts` (payload as zeros).
    pub fn write(&mut self, ts: Time, p: &Packet) -> io::Result<()> {
        self.write_with_payload(ts, p, None)
    }

    /// Append one frame stamped `ts` whose payload is `payload` (`p.payload_len` bytes), or zeros.
    pub fn write_with_payload(&mut self, ts: Time, p: &Packet, payload: Option<&[u8]>) -> io::Result<()> {
        let orig = build_headers(p, &mut self.scratch);
        if let Some(data) = payload {
            // Fold the payload into the TCP checksum (it starts at an even offset of the segment).
            let tcp_start = ETH_HEADER + 20;
            let csum_at = tcp_start + 16;
            let old = u16::from_be_bytes([self.scratch[csum_at], self.scratch[csum_at + 1]]);
            let csum = fold(sum16(!old as u32, data));
            self.scratch[csum_at..csum_at + 2].copy_from_slice(&csum.to_be_bytes());
            self.scratch.extend_from_slice(data);
        }
        let incl = orig.min(self.snaplen as usize);
        let hdr_part = incl.min(self.scratch.len());
        let zero_part = incl - hdr_part;
        let ns = ts.as_nanos();
        let frac = match self.res {
            TsResolution::Micro => (ns % 1_000_000_000) / 1_000,
            TsResolution::Nano => ns % 1_000_000_000,
        };
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&(frac as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&(orig as u32).to_le_bytes());
        self.w.write_all(&rec)?;
        self.w.write_all(&self.scratch[..hdr_part])?;
        if zero_part > 0 {
            if self.zeros.len() < zero_part {
                self.zeros.resize(zero_part, 0);
            }
            self.w.write_all(&self.zeros[..zero_part])?;
        }
        self.frames += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    ts: u64,
    seq: u64,
    pkt: Packet,
}
impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.seq) == (o.ts, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts, self.seq).cmp(&(o.ts, o.seq))
    }
}

/// A capture point: a pcap writer plus the reorder heap described in the module comment.
pub struct PcapSink {
    pub writer: PcapWriter<Box<dyn Write + Send>>,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    pub error: Option<String>,
    /// Where payload bytes come from (None: zeros).
    pub payloads: Option<SharedPayloads>,
    payload_buf: Vec<u8>,
}

impl PcapSink {
    pub fn new(w: Box<dyn Write + Send>, snaplen: u32, res: TsResolution) -> io::Result<Self> {
        Ok(PcapSink {
            writer: PcapWriter::new(w, snaplen, res)?, pending: BinaryHeap::new(), seq: 0, error: None, payloads: None,
            payload_buf: Vec::new(),
        })
    }

    /// Record `p` at `ts >= now`; writes every pending record stamped at or before `now`.
    pub fn record(&mut self, now: Time, ts: Time, p: &Packet) {
        self.seq += 1;
        self.pending.push(Reverse(Pending { ts: ts.0, seq: self.seq, pkt: *p }));
        self.drain(now);
    }

    /// Write every pending record stamped at or before `now`.
    pub fn drain(&mut self, now: Time) {
        while let Some(Reverse(top)) = self.pending.peek() {
            if top.ts > now.0 {
                break;
            }
            let Reverse(r) = self.pending.pop().expect("peeked");
            if self.error.is_none() {
                let res = match (&self.payloads, r.pkt.payload_len) {
                    (Some(book), n) if n > 0 => {
                        self.payload_buf.resize(n as usize, 0);
                        book.lock().expect("payload book").fill(&r.pkt, &mut self.payload_buf);
                        self.writer.write_with_payload(Time(r.ts), &r.pkt, Some(&self.payload_buf))
                    }
                    _ => self.writer.write(Time(r.ts), &r.pkt),
                };
                if let Err(e) = res {
                    self.error = Some(e.to_string());
                }
            }
        }
    }

    /// Write everything still pending (end of run) and flush.
    pub fn finish(&mut self) -> io::Result<()> {
        self.drain(Time::MAX);
        if let Some(e) = &self.error {
            return Err(io::Error::other(e.clone()));
        }
        self.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests_support::packet;
    use crate::packet::TcpOptions;

    fn verify_ip_checksum(frame: &[u8]) -> bool {
        fold(sum16(0, &frame[14..34])) == 0
    }

    #[test]
    fn ip_and_tcp_checksums_verify_to_zero() {
        let mut p = packet(1, 2, 0);
        p.options.timestamps = Some((123, 456));
        p.options.sack_blocks[0] = (1000, 2448);
        p.options.sack_count = 1;
        let mut buf = Vec::new();
        let n = build_headers(&p, &mut buf);
        assert_eq!(n, buf.len());
        assert!(verify_ip_checksum(&buf));
        let tcp_len = n - 34;
        let mut acc = sum16(0, &buf[26..34]);
        acc += 6 + tcp_len as u32;
        acc = sum16(acc, &buf[34..]);
        assert_eq!(fold(acc), 0);
    }

    #[test]
    fn linux_syn_layout_is_mss_sackperm_ts_nop_ws() {
        let mut p = packet(1, 2, 0);
        p.flags = flags::SYN;
        p.options = TcpOptions {
            mss: Some(1460), window_scale: Some(7), sack_permitted: true, timestamps: Some((9, 0)),
            ..Default::default()
        };
        let mut buf = Vec::new();
        build_headers(&p, &mut buf);
        let opts = &buf[54..];
        assert_eq!(opts, &[2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 1, 3, 3, 7]);
        assert_eq!(buf[46] >> 4, 10); // data offset: 40-byte TCP header
    }

    #[test]
    fn real_payload_is_written_and_covered_by_the_tcp_checksum() {
        let mut w = PcapWriter::new(Vec::new(), 4096, TsResolution::Micro).unwrap();
        let data = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let p = packet(1, 2, data.len() as u32);
        w.write_with_payload(Time(1), &p, Some(data)).unwrap();
        let b = w.into_inner();
        let frame = &b[40..];
        assert_eq!(&frame[frame.len() - data.len()..], data);
        let tcp_len = frame.len() - 34;
        let mut acc = sum16(0, &frame[26..34]);
        acc += 6 + tcp_len as u32;
        acc = sum16(acc, &frame[34..]);
        assert_eq!(fold(acc), 0, "checksum over header and payload verifies");
    }

    #[test]
    fn payload_is_truncated_at_snaplen() {
        let mut w = PcapWriter::new(Vec::new(), 96, TsResolution::Nano).unwrap();
        w.write(Time(1_500_000_123), &packet(1, 2, 1448)).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[0..4], &0xa1b2_3c4du32.to_le_bytes());
        let rec = &b[24..40];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 500_000_123);
        assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 96);
        assert_eq!(u32::from_le_bytes(rec[12..16].try_into().unwrap()), 14 + 40 + 1448);
        assert_eq!(b.len(), 24 + 16 + 96);
    }

    #[test]
    fn sink_writes_records_in_timestamp_order() {
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut s = PcapSink::new(Box::new(Shared(buf.clone())), 64, TsResolution::Micro).unwrap();
        s.record(Time(1000), Time(5000), &packet(1, 2, 0)); // future tx start
        s.record(Time(2000), Time(2000), &packet(2, 1, 0)); // arrival now
        s.finish().unwrap();
        let b = buf.lock().unwrap();
        let rec_len = 16 + 54;
        let t1 = u32::from_le_bytes(b[28..32].try_into().unwrap());
        let t2 = u32::from_le_bytes(b[24 + rec_len + 4..24 + rec_len + 8].try_into().unwrap());
        assert_eq!((t1, t2), (2, 5));
    }
}
