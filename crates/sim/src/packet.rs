//! The simulated packet: an IPv4/TCP segment with the fields a real header carries.
//!
//! A `Packet` is a small `Copy` struct with fixed-size option storage, so the simulator's hot path
//! moves packets by value and never allocates (STYLE.md rule 6, htsim). Payload bytes are not
//! stored: a segment carries only its length (and the pcap writer fills payload with zeros up to
//! its snaplen). Sequence numbers are the 32-bit wire values; endpoints keep 64-bit stream offsets
//! internally and convert at the edge.

use tcpvideo_model::Time;

/// Index of a node (host or router) in the topology.
pub type NodeId = u32;

/// TCP header flags (RFC 9293 §3.1 bit positions).
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
}

/// Maximum SACK blocks in one segment (3 fit beside timestamps in 40 option bytes, RFC 2018).
pub const MAX_SACK_BLOCKS: usize = 4;

/// TCP options carried by a segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// MSS option (SYN only).
    pub mss: Option<u16>,
    /// Window-scale shift (SYN only, RFC 7323).
    pub window_scale: Option<u8>,
    /// SACK-permitted (SYN only, RFC 2018).
    pub sack_permitted: bool,
    /// Timestamps (TSval, TSecr), RFC 7323.
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks as wire sequence numbers [left, right).
    pub sack_blocks: [(u32, u32); MAX_SACK_BLOCKS],
    pub sack_count: u8,
}

impl TcpOptions {
    pub fn sack(&self) -> &[(u32, u32)] {
        &self.sack_blocks[..self.sack_count as usize]
    }

    /// Length of the options on the wire, padded to 4 bytes, in the layout Linux uses
    /// (MSS, SACK-permitted+TS or NOP NOP TS, window scale, NOP NOP SACK).
    pub fn wire_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.timestamps.is_some() {
            n += 12; // SACK-permitted (2) + TS (10), or NOP NOP + TS
        } else if self.sack_permitted {
            n += 4; // NOP NOP SACK-permitted
        }
        if self.window_scale.is_some() {
            n += 4; // NOP + WS(3)
        }
        if self.sack_count > 0 {
            n += 4 + 8 * self.sack_count as usize; // NOP NOP kind len + blocks
        }
        n
    }
}

/// One IPv4/TCP segment in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Simulator-wide unique id, for the ground-truth log and pcap correlation.
    pub uid: u64,
    /// Index of the flow (connection) in the scenario; both directions share it.
    pub flow: u32,
    pub src_node: NodeId,
    pub dst_node: NodeId,
    /// IPv4 addresses (host order), derived from node ids by the topology.
    pub src_ip: u32,
    pub dst_ip: u32,
    pub src_port: u16,
    pub dst_port: u16,
    /// IPv4 identification (per-sender counter, as Linux for non-DF... kept for Wireshark).
    pub ip_id: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// Window field as sent (already right-shifted by the sender's window scale).
    pub window: u16,
    pub options: TcpOptions,
    /// TCP payload length in bytes.
    pub payload_len: u32,
    /// When the sending endpoint emitted it (for the ground-truth log).
    pub sent_at: Time,
}

impl Packet {
    pub const IPV4_HEADER: u32 = 20;
    pub const TCP_HEADER: u32 = 20;
    /// Ethernet header + FCS + preamble + inter-frame gap are *not* counted on links: a link's rate
    /// applies to IP packets, as in ns-3's PointToPoint with PPP framing off and as tbf does.
    pub fn ip_len(&self) -> u32 {
        Self::IPV4_HEADER + Self::TCP_HEADER + self.options.wire_len() as u32 + self.payload_len
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Sequence space consumed: payload plus one for SYN and for FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload_len + self.has(flags::SYN) as u32 + self.has(flags::FIN) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_segment_with_timestamps_is_1500_bytes_at_mss_1448() {
        let mut o = TcpOptions::default();
        o.timestamps = Some((1, 2));
        let p = Packet {
            uid: 0, flow: 0, src_node: 0, dst_node: 1, src_ip: 0, dst_ip: 0, src_port: 1, dst_port: 2,
            ip_id: 0, seq: 0, ack: 0, flags: flags::ACK, window: 0, options: o, payload_len: 1448,
            sent_at: Time::ZERO,
        };
        assert_eq!(p.ip_len(), 1500);
    }

    #[test]
    fn syn_options_fit_in_forty_bytes() {
        let o = TcpOptions {
            mss: Some(1460), window_scale: Some(7), sack_permitted: true, timestamps: Some((1, 0)),
            ..Default::default()
        };
        assert_eq!(o.wire_len(), 20); // Linux SYN: 40-byte TCP header
    }
}

/// Helpers that build packets in one line, for tests of the engine, links and pcap writer
/// (smoltcp style). Public so integration tests can use them too.
#[doc(hidden)]
pub mod tests_support {
    use super::*;

    /// A bare ACK-flagged segment from `src` to `dst` with `payload_len` bytes of payload.
    pub fn packet(src: NodeId, dst: NodeId, payload_len: u32) -> Packet {
        Packet {
            uid: 0, flow: 0, src_node: src, dst_node: dst,
            src_ip: 0x0a00_0000 | (src + 1), dst_ip: 0x0a00_0000 | (dst + 1),
            src_port: 40000, dst_port: 80, ip_id: 0, seq: 1, ack: 1, flags: flags::ACK,
            window: 1000, options: TcpOptions::default(), payload_len, sent_at: Time::ZERO,
        }
    }
}
