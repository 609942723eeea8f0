//! Content-keyed random loss: a TCP segment's fate is a pure function of what it carries, so the
//! simulator and linkem (the real-network emulator, which shares this file through the
//! `tcpvideo-sim` dependency) lose the *same* segments whatever the timing.
//!
//! Bernoulli loss draws one random number per packet in arrival order, so two runtimes that send
//! even one packet in a different order (a delayed ACK, a retransmission timer, a kernel that
//! sends a TLP where the simulator does not) lose different segments from there on; the cwnd of
//! a loss-driven congestion control then depends on the draw more than on the algorithm (issue 15,
//! session 6: the simulator against itself on another draw is outside ±15 % in 86 % of pairs for
//! CCP). Here the sequence space of each connection carries grid points 1 + k·GRAIN (relative
//! to the ISN; GRAIN = 1448 bytes, a full segment's payload), and a data segment is dropped iff
//! for some grid point k it carries
//!
//! ```text
//! draw(key, flow, k, n) < p · 2^64
//! ```
//!
//! * `key`: one 64-bit value taken from the link direction's own random stream
//!   (`sub_rng(seed, LOSS_BASE + channel)`, as for the other models), so a scenario's seed and
//!   the direction choose the loss pattern, and both runtimes derive the same key;
//! * `flow`: the IPv4 source and destination addresses and the connection's ordinal between them
//!   on this direction (0 for the first SYN seen from src to dst, 1 for the next, …). Ports are
//!   not used: the kernel's ephemeral ports are not the simulator's. A connection whose SYN this
//!   direction never saw gets the next ordinal at its first segment;
//! * `k`: the grid point, i.e. a byte of the stream; sequence numbers are taken relative to the
//!   connection's ISN (from its SYN or SYN-ACK; both runtimes choose ISNs of their own). Keying
//!   on a byte rather than on a segment's first sequence number matters on Linux: a segment's
//!   boundaries follow the application's writes while the send queue is short (measured: a
//!   376-byte segment ending at byte 65 536 of a bulk transfer, after which every boundary is
//!   shifted against the simulator's), but the segment that carries byte g is still lost in both;
//!   a full-sized segment carries exactly one grid point, so its loss probability is p;
//! * `n`: how often this direction has already carried grid point k: 0 the first time (a
//!   segment reaching beyond the highest sequence seen so far), then 1, 2, … for each
//!   retransmission carrying it, so a retransmission gets a fresh draw and the j-th
//!   retransmission of a byte shares its fate in both runtimes. A segment tail-dropped before it
//!   reached the loss draw was never seen, so its first retransmission counts as n = 1 (the same
//!   rule in both runtimes; only the queue decides which segments those are).
//!
//! Never dropped: segments without payload (pure ACKs, SYN, SYN-ACK, bare FIN, RST) and packets
//! that are not IPv4/TCP — the handshake and the ACK clock are outside the model, as in the
//! congestion-control suite's "random loss on data" cases.
//!
//! `draw` is SplitMix64's output function (Steele, Lea, Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014; the 64-bit finalizer also used by Java's SplittableRandom)
//! applied once per field, each field XORed into the previous output: a well-mixed, public,
//! dependency-free 64-bit hash (not cryptographic; the inputs are not adversarial).
//!
//! Deviations: sequence numbers are 32-bit and not unwrapped, so a connection that sends more
//! than 4 GiB reuses its keys (and its retransmission counts) after the wrap. Segments shorter
//! than GRAIN carry a grid point with probability len/GRAIN (a scenario with a smaller MSS sees
//! a lower segment loss rate than p; GRAIN is not yet a scenario key). Memory is one small record
//! per connection plus one entry per retransmitted grid point.

use std::collections::HashMap;

use crate::packet::{flags, Packet};

/// What the keyed model reads of a packet: the IPv4 addresses, ports and TCP header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSegment {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub flags: u8,
    pub payload_len: u32,
}

impl TcpSegment {
    /// The segment of a raw IPv4 packet (as a TUN device hands it over), or None when the bytes
    /// are not a well-formed IPv4/TCP packet or a non-first fragment.
    pub fn parse_ipv4(pkt: &[u8]) -> Option<TcpSegment> {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 || pkt[9] != 6 {
            return None;
        }
        let ihl = ((pkt[0] & 0x0f) as usize) * 4;
        let total = u16::from_be_bytes([pkt[2], pkt[3]]) as usize;
        let fragment_offset = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff;
        if ihl < 20 || fragment_offset != 0 || total > pkt.len() || total < ihl + 20 {
            return None;
        }
        let tcp = &pkt[ihl..total];
        let data_offset = ((tcp[12] >> 4) as usize) * 4;
        if data_offset < 20 || data_offset > tcp.len() {
            return None;
        }
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some(TcpSegment {
            src_ip: be32(&pkt[12..16]),
            dst_ip: be32(&pkt[16..20]),
            src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
            dst_port: u16::from_be_bytes([tcp[2], tcp[3]]),
            seq: be32(&tcp[4..8]),
            flags: tcp[13],
            payload_len: (tcp.len() - data_offset) as u32,
        })
    }
}

impl From<&Packet> for TcpSegment {
    fn from(p: &Packet) -> Self {
        TcpSegment {
            src_ip: p.src_ip,
            dst_ip: p.dst_ip,
            src_port: p.src_port,
            dst_port: p.dst_port,
            seq: p.seq,
            flags: p.flags,
            payload_len: p.payload_len,
        }
    }
}

/// SplitMix64's output function: a bijective 64-bit mixer.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The draw of one transmission of grid point `grid_index`: uniform on u64 for distinct inputs.
/// `nth` = 0 for the first transmission, 1 for its first retransmission, …
#[inline]
pub fn keyed_draw(key: u64, src_ip: u32, dst_ip: u32, ordinal: u32, grid_index: u32, nth: u32) -> u64 {
    let mut h = splitmix64(key);
    h = splitmix64(h ^ ((src_ip as u64) << 32 | dst_ip as u64));
    h = splitmix64(h ^ ordinal as u64);
    h = splitmix64(h ^ grid_index as u64);
    splitmix64(h ^ nth as u64)
}

/// Spacing of the grid points, bytes of sequence space: the MSS of a 1500-byte MTU with TCP
/// timestamps (1500 − 20 − 20 − 12), the payload of every full segment in the simulator's and
/// Linux's default runs.
pub const GRAIN: u64 = 1448;

/// The threshold a draw must stay under to be lost: p · 2^64 (p = 1 handled apart).
fn threshold_of(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 18_446_744_073_709_551_616.0) as u64
}

#[derive(Clone, Debug)]
struct Connection {
    ordinal: u32,
    isn: u32,
    /// One past the highest relative sequence number seen.
    highest_end: u64,
    /// Times each grid point below `highest_end` was carried again, by grid index.
    seen_again: HashMap<u32, u32>,
}

/// The keyed model's state on one link direction.
#[derive(Clone, Debug)]
pub struct KeyedLoss {
    key: u64,
    p: f64,
    threshold: u64,
    connections: HashMap<(u32, u32, u16, u16), Connection>,
    next_ordinal: HashMap<(u32, u32), u32>,
}

impl KeyedLoss {
    pub fn new(p: f64, key: u64) -> Self {
        KeyedLoss { key, p, threshold: threshold_of(p), connections: HashMap::new(), next_ordinal: HashMap::new() }
    }

    fn open(&mut self, s: &TcpSegment, isn: u32) -> Connection {
        let n = self.next_ordinal.entry((s.src_ip, s.dst_ip)).or_insert(0);
        let c = Connection { ordinal: *n, isn, highest_end: 1, seen_again: HashMap::new() };
        *n += 1;
        c
    }

    /// Decide the fate of one segment (true = lost); updates the connection's bookkeeping.
    pub fn lose(&mut self, s: &TcpSegment) -> bool {
        let tuple = (s.src_ip, s.dst_ip, s.src_port, s.dst_port);
        if s.flags & flags::SYN != 0 {
            // a repeated SYN of the same connection keeps its ordinal; a new ISN is a new one
            if !matches!(self.connections.get(&tuple), Some(c) if c.isn == s.seq) {
                let c = self.open(s, s.seq);
                self.connections.insert(tuple, c);
            }
            return false;
        }
        if s.payload_len == 0 {
            return false;
        }
        if !self.connections.contains_key(&tuple) {
            let c = self.open(s, s.seq.wrapping_sub(1));
            self.connections.insert(tuple, c);
        }
        let c = self.connections.get_mut(&tuple).expect("inserted above");
        let rel = s.seq.wrapping_sub(c.isn) as u64;
        let end = rel + s.payload_len as u64;
        // the grid points 1 + k·GRAIN this segment carries: k from ceil((rel-1)/G) to
        // floor((end-2)/G)
        let first = (rel.saturating_sub(1)).div_ceil(GRAIN);
        let last = (end - 2) / GRAIN;
        let mut lost = false;
        for k in first..=last {
            let point = 1 + k * GRAIN;
            let nth = if point >= c.highest_end {
                0
            } else {
                let n = c.seen_again.entry(k as u32).or_insert(0);
                *n += 1;
                *n
            };
            lost |= self.p >= 1.0 || keyed_draw(self.key, s.src_ip, s.dst_ip, c.ordinal, k as u32, nth) < self.threshold;
        }
        c.highest_end = c.highest_end.max(end);
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;
    const SERVER: u32 = 0x0a00_0001;
    const CLIENT: u32 = 0x0a00_0102;

    fn seg(seq: u32, len: u32, f: u8) -> TcpSegment {
        TcpSegment { src_ip: SERVER, dst_ip: CLIENT, src_port: 80, dst_port: 40000, seq, flags: f, payload_len: len }
    }

    /// Run a connection with ISN `isn` sending `n` segments; the lost segments' indices.
    fn lost_indices(m: &mut KeyedLoss, isn: u32, n: u32) -> Vec<u32> {
        assert!(!m.lose(&seg(isn, 0, flags::SYN | flags::ACK)));
        (0..n).filter(|i| m.lose(&seg(isn.wrapping_add(1 + i * MSS), MSS, flags::ACK))).collect()
    }

    #[test]
    fn the_same_segment_has_the_same_fate_whatever_the_isn_and_the_packets_around_it() {
        let mut a = KeyedLoss::new(0.05, 42);
        let mut b = KeyedLoss::new(0.05, 42);
        let lost_a = lost_indices(&mut a, 1_000, 2_000);
        // b sees pure ACKs and a foreign flow's segments in between, and another ISN
        assert!(!b.lose(&seg(7, 0, flags::SYN | flags::ACK)));
        let other = |i: u32| TcpSegment { src_ip: CLIENT, dst_ip: SERVER, ..seg(i, MSS, flags::ACK) };
        let mut lost_b = vec![];
        for i in 0..2_000u32 {
            b.lose(&other(i * MSS));
            assert!(!b.lose(&seg(8 + i, 0, flags::ACK)), "pure ACKs are never lost");
            if b.lose(&seg(8 + i * MSS, MSS, flags::ACK)) {
                lost_b.push(i);
            }
        }
        assert!(!lost_a.is_empty());
        assert_eq!(lost_a, lost_b);
    }

    #[test]
    fn the_segment_carrying_the_same_bytes_is_lost_when_boundaries_are_shifted() {
        // Linux after a short write: a 376-byte segment, then full segments shifted by 376 bytes
        let aligned = lost_indices(&mut KeyedLoss::new(0.05, 11), 0, 3_000);
        let mut m = KeyedLoss::new(0.05, 11);
        assert!(!m.lose(&seg(0, 0, flags::SYN | flags::ACK)));
        let mut shifted_lost_bytes = vec![];
        let mut at = 1u32;
        for i in 0..3_001u32 {
            let len = if i == 45 { 376 } else { MSS };
            if m.lose(&seg(at, len, flags::ACK)) {
                shifted_lost_bytes.push((at, at + len));
            }
            at += len;
        }
        // every segment the aligned run lost (start byte 1 + i·MSS, up to the shifted run's end)
        // is covered by a lost segment of the shifted run, and vice versa
        let carried = |lost: &[(u32, u32)], b: u32| lost.iter().any(|&(s, e)| s <= b && b < e);
        let aligned_bytes: Vec<u32> = aligned.iter().map(|i| 1 + i * MSS).collect();
        assert!(aligned_bytes.len() > 100, "{}", aligned_bytes.len());
        assert!(aligned_bytes.iter().all(|&b| carried(&shifted_lost_bytes, b)));
        let within: Vec<_> = shifted_lost_bytes.iter().filter(|&&(s, _)| s < 1 + 3_000 * MSS).collect();
        assert_eq!(within.len(), aligned_bytes.len());
    }

    #[test]
    fn another_key_loses_other_segments() {
        let a = lost_indices(&mut KeyedLoss::new(0.05, 1), 0, 2_000);
        let b = lost_indices(&mut KeyedLoss::new(0.05, 2), 0, 2_000);
        assert_ne!(a, b);
    }

    #[test]
    fn the_loss_rate_is_p_within_binomial_bounds() {
        // 200 000 segments at p = 1 %: sd = sqrt(n p (1-p)) = 44.5; allow 4.5 sd
        let n = 200_000u32;
        for key in [1u64, 2, 3] {
            let lost = lost_indices(&mut KeyedLoss::new(0.01, key), 12_345, n).len() as f64;
            let sd = (n as f64 * 0.01 * 0.99).sqrt();
            assert!((lost - n as f64 * 0.01).abs() < 4.5 * sd, "key {key}: {lost} lost of {n}");
        }
    }

    #[test]
    fn a_retransmission_gets_a_fresh_draw_and_the_kth_one_is_reproducible() {
        // p = 50 %: retransmit one segment 64 times; a repeated draw would give all-lost or
        // all-delivered
        let run = || {
            let mut m = KeyedLoss::new(0.5, 9);
            lost_indices(&mut m, 0, 10);
            (0..64).map(|_| m.lose(&seg(1 + 3 * MSS, MSS, flags::ACK))).collect::<Vec<_>>()
        };
        let fates = run();
        let lost = fates.iter().filter(|l| **l).count();
        assert!(lost > 16 && lost < 48, "{lost} of 64 retransmissions lost");
        assert_eq!(fates, run());
    }

    #[test]
    fn handshake_and_bare_fin_are_never_lost() {
        let mut m = KeyedLoss::new(1.0, 5);
        assert!(!m.lose(&seg(0, 0, flags::SYN)));
        assert!(!m.lose(&seg(1, 0, flags::ACK)));
        assert!(!m.lose(&seg(1, 0, flags::FIN | flags::ACK)));
        assert!(m.lose(&seg(1, 100, flags::ACK)), "p = 1 loses every data segment");
    }

    #[test]
    fn a_second_connection_between_the_same_hosts_has_its_own_pattern() {
        let mut m = KeyedLoss::new(0.05, 3);
        let first = lost_indices(&mut m, 0, 2_000);
        let mut second_syn = seg(500, 0, flags::SYN | flags::ACK);
        second_syn.dst_port = 40001;
        assert!(!m.lose(&second_syn));
        let second: Vec<u32> =
            (0..2_000u32).filter(|i| m.lose(&TcpSegment { dst_port: 40001, ..seg(501 + i * MSS, MSS, flags::ACK) })).collect();
        assert_ne!(first, second);
    }

    #[test]
    fn parses_the_tcp_header_of_a_raw_ipv4_packet() {
        let mut p = vec![0u8; 20 + 32 + 100];
        p[0] = 0x45;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&SERVER.to_be_bytes());
        p[16..20].copy_from_slice(&CLIENT.to_be_bytes());
        p[20..22].copy_from_slice(&80u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[24..28].copy_from_slice(&123_456u32.to_be_bytes());
        p[32] = 8 << 4; // 32-byte header (timestamps)
        p[33] = flags::ACK;
        assert_eq!(TcpSegment::parse_ipv4(&p), Some(seg(123_456, 100, flags::ACK)));
        p[9] = 17;
        assert_eq!(TcpSegment::parse_ipv4(&p), None, "UDP");
        p[9] = 6;
        p[2..4].copy_from_slice(&(20u16 + 40).to_be_bytes());
        p[32] = 15 << 4;
        assert_eq!(TcpSegment::parse_ipv4(&p), None, "data offset past the IP total length");
        assert_eq!(TcpSegment::parse_ipv4(&p[..30]), None, "truncated");
    }
}
