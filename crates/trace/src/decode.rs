//! Link-layer, IP and TCP header decoding, in place and without allocation.
//!
//! Link types (tcpdump.org LINKTYPE_* values): 1 Ethernet (with any number of 802.1Q/802.1ad
//! VLAN tags, then optionally an MPLS label stack, RFC 3032: ethertypes 0x8847/0x8848, 4-byte
//! entries until the bottom-of-stack bit, the payload's IP version read from its first nibble;
//! pseudowire control words and Ethernet-over-MPLS are not decoded), 113 Linux "cooked" SLL (16-byte header, protocol at offset 14), 276 SLL2
//! (20-byte header, protocol at offset 0), 101 raw IP (and its OS-specific aliases 12 and 14),
//! 228 raw IPv4, 229 raw IPv6, 0 BSD loopback (4-byte host-order family).
//! IPv4 (RFC 791): header length from IHL, payload length from Total Length (so a capture with
//! a small snaplen still tells us how many TCP payload bytes were on the wire); fragments other
//! than the first are not reassembled and are counted as skipped. IPv6 (RFC 8200): extension
//! headers hop-by-hop, routing, destination options and fragment are walked to reach TCP.
//! TCP (RFC 9293) with options MSS (RFC 9293 §3.2), window scale and timestamps (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018), including D-SACK blocks (RFC 2883).

/// TCP flag bits.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// TCP options we use. `mss == 0` and `wscale == None` mean absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: u16,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr)
    pub ts: Option<(u32, u32)>,
    pub sack: [(u32, u32); 4],
    pub n_sack: u8,
}

impl TcpOptions {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.n_sack as usize]
    }
}

/// A decoded TCP segment, borrowing its payload from the capture buffer.
#[derive(Clone, Copy, Debug)]
pub struct TcpPacket<'a> {
    /// Addresses as 128-bit numbers; IPv4 addresses are IPv4-mapped (::ffff:a.b.c.d).
    pub src: u128,
    pub dst: u128,
    pub v6: bool,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub opts: TcpOptions,
    /// TCP payload length on the wire (from the IP length fields).
    pub payload_len: u32,
    /// The captured part of the payload (shorter than `payload_len` under a snaplen).
    pub payload: &'a [u8],
}

impl Default for TcpPacket<'_> {
    /// All zero, no options, empty payload: the slot [`decode_into`] fills.
    fn default() -> Self {
        TcpPacket {
            src: 0,
            dst: 0,
            v6: false,
            sport: 0,
            dport: 0,
            seq: 0,
            ack: 0,
            flags: 0,
            window: 0,
            opts: TcpOptions::default(),
            payload_len: 0,
            payload: &[],
        }
    }
}

/// Why a record did not yield a TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    UnknownLink,
    NotIp,
    NotTcp,
    Fragment,
    Truncated,
    BadHeader,
}

pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

#[inline(always)]
fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
#[inline(always)]
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Decode a captured record of the given link type down to TCP (options parsed).
#[inline]
pub fn decode(linktype: u32, data: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    let mut p = TcpPacket::default();
    let raw_opts = decode_into(linktype, data, &mut p)?;
    parse_options(raw_opts, &mut p.opts);
    Ok(p)
}

/// Decode a captured record into `out`, the caller's packet, and return the raw TCP option
/// bytes; `out.opts` is left empty ([`parse_options`] fills it, when and where the caller wants).
///
/// Why in place: returning the ~130-byte packet by value through link → IP → TCP made the
/// compiler assemble it from narrow stores and copy it with wide loads at every level, and
/// those copies (store-forwarding stalls) were the hottest instructions of the analysis loop
/// (issue 16). On `Err` the fields of `out` are unspecified.
#[inline]
pub fn decode_into<'a>(linktype: u32, data: &'a [u8], out: &mut TcpPacket<'a>) -> Result<&'a [u8], Skip> {
    let (ethertype, off) = link(linktype, data)?;
    match ethertype {
        0x0800 => ipv4(&data[off..], out),
        0x86dd => ipv6(&data[off..], out),
        _ => Err(Skip::NotIp),
    }
}

/// The ethertype carried by a record of `linktype` and the offset of its network header.
#[inline]
fn link(linktype: u32, data: &[u8]) -> Result<(u16, usize), Skip> {
    Ok(match linktype {
        LINKTYPE_ETHERNET => {
            if data.len() < 14 {
                return Err(Skip::Truncated);
            }
            let mut et = be16(data, 12);
            let mut off = 14;
            // 802.1Q (0x8100), 802.1ad (0x88a8) and the old QinQ 0x9100 tags, possibly stacked.
            while matches!(et, 0x8100 | 0x88a8 | 0x9100) {
                if data.len() < off + 4 {
                    return Err(Skip::Truncated);
                }
                et = be16(data, off + 2);
                off += 4;
            }
            if matches!(et, 0x8847 | 0x8848) {
                (et, off) = mpls(data, off)?;
            }
            (et, off)
        }
        LINKTYPE_LINUX_SLL => {
            if data.len() < 16 {
                return Err(Skip::Truncated);
            }
            (be16(data, 14), 16)
        }
        LINKTYPE_LINUX_SLL2 => {
            if data.len() < 20 {
                return Err(Skip::Truncated);
            }
            (be16(data, 0), 20)
        }
        LINKTYPE_RAW | 12 | 14 => {
            let v = data.first().map(|b| b >> 4).ok_or(Skip::Truncated)?;
            (if v == 6 { 0x86dd } else { 0x0800 }, 0)
        }
        LINKTYPE_IPV4 => (0x0800, 0),
        LINKTYPE_IPV6 => (0x86dd, 0),
        LINKTYPE_NULL => {
            if data.len() < 4 {
                return Err(Skip::Truncated);
            }
            // Host byte order of the capturing machine; AF_INET is 2 everywhere, AF_INET6 varies.
            let fam = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
            let fam = if fam > 0xffff { fam.swap_bytes() } else { fam };
            match fam {
                2 => (0x0800, 4),
                10 | 24 | 28 | 30 => (0x86dd, 4),
                _ => return Err(Skip::NotIp),
            }
        }
        _ => return Err(Skip::UnknownLink),
    })
}

/// Walk an MPLS label stack starting at `off` (RFC 3032 §2.1: label 20 bits, TC 3, S 1, TTL 8)
/// and return the ethertype of what follows the bottom entry, guessed from the IP version
/// nibble as every MPLS decoder must (the stack does not name its payload).
fn mpls(data: &[u8], mut off: usize) -> Result<(u16, usize), Skip> {
    loop {
        if data.len() < off + 4 {
            return Err(Skip::Truncated);
        }
        let bottom = data[off + 2] & 1 == 1;
        off += 4;
        if bottom {
            break;
        }
    }
    match data.get(off).map(|b| b >> 4) {
        Some(4) => Ok((0x0800, off)),
        Some(6) => Ok((0x86dd, off)),
        Some(_) => Err(Skip::NotIp),
        None => Err(Skip::Truncated),
    }
}

#[inline]
fn v4_mapped(a: u32) -> u128 {
    0xffff_0000_0000u128 | a as u128
}

/// Decode an IPv4 packet down to TCP (options parsed).
pub fn decode_ipv4(b: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    let mut p = TcpPacket::default();
    let raw_opts = ipv4(b, &mut p)?;
    parse_options(raw_opts, &mut p.opts);
    Ok(p)
}

#[inline]
fn ipv4<'a>(b: &'a [u8], out: &mut TcpPacket<'a>) -> Result<&'a [u8], Skip> {
    if b.len() < 20 {
        return Err(Skip::Truncated);
    }
    if b[0] >> 4 != 4 {
        return Err(Skip::BadHeader);
    }
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    if ihl < 20 || b.len() < ihl {
        return Err(Skip::BadHeader);
    }
    let total = be16(b, 2) as usize;
    // TSO/GRO captures may carry total length 0 for super-packets; fall back to captured size.
    let total = if total == 0 { b.len() } else { total };
    if total < ihl {
        return Err(Skip::BadHeader);
    }
    let frag = be16(b, 6);
    if frag & 0x1fff != 0 || frag & 0x2000 != 0 {
        return Err(Skip::Fragment);
    }
    if b[9] != 6 {
        return Err(Skip::NotTcp);
    }
    out.src = v4_mapped(be32(b, 12));
    out.dst = v4_mapped(be32(b, 16));
    out.v6 = false;
    tcp(&b[ihl..], total - ihl, out)
}

/// Decode an IPv6 packet down to TCP, walking extension headers (options parsed).
pub fn decode_ipv6(b: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    let mut p = TcpPacket::default();
    let raw_opts = ipv6(b, &mut p)?;
    parse_options(raw_opts, &mut p.opts);
    Ok(p)
}

fn ipv6<'a>(b: &'a [u8], out: &mut TcpPacket<'a>) -> Result<&'a [u8], Skip> {
    if b.len() < 40 {
        return Err(Skip::Truncated);
    }
    if b[0] >> 4 != 6 {
        return Err(Skip::BadHeader);
    }
    let plen = be16(b, 4) as usize;
    let mut nh = b[6];
    let src = u128::from_be_bytes(b[8..24].try_into().unwrap());
    let dst = u128::from_be_bytes(b[24..40].try_into().unwrap());
    let mut off = 40;
    // Jumbograms (payload length 0 + hop-by-hop jumbo option) are treated via captured length.
    let mut remaining = if plen == 0 { b.len() - 40 } else { plen };
    loop {
        match nh {
            6 => break,
            0 | 43 | 60 => {
                if b.len() < off + 8 {
                    return Err(Skip::Truncated);
                }
                let l = (b[off + 1] as usize + 1) * 8;
                if remaining < l {
                    return Err(Skip::BadHeader);
                }
                nh = b[off];
                off += l;
                remaining -= l;
            }
            44 => {
                if b.len() < off + 8 {
                    return Err(Skip::Truncated);
                }
                let fo = be16(b, off + 2);
                if fo & 0xfff8 != 0 || fo & 1 != 0 {
                    return Err(Skip::Fragment);
                }
                nh = b[off];
                off += 8;
                remaining = remaining.saturating_sub(8);
            }
            _ => return Err(Skip::NotTcp),
        }
    }
    if b.len() < off {
        return Err(Skip::Truncated);
    }
    out.src = src;
    out.dst = dst;
    out.v6 = true;
    tcp(&b[off..], remaining, out)
}

/// Decode a TCP header; `seg_len` is the TCP segment length (header + payload) on the wire
/// (options parsed).
pub fn decode_tcp(b: &[u8], seg_len: usize, src: u128, dst: u128, v6: bool) -> Result<TcpPacket<'_>, Skip> {
    let mut p = TcpPacket { src, dst, v6, ..TcpPacket::default() };
    let raw_opts = tcp(b, seg_len, &mut p)?;
    parse_options(raw_opts, &mut p.opts);
    Ok(p)
}

/// Fill the TCP fields of `out` (its addresses are the caller's) and return the raw options;
/// `seg_len` is the TCP segment length (header + payload) on the wire.
#[inline]
fn tcp<'a>(b: &'a [u8], seg_len: usize, out: &mut TcpPacket<'a>) -> Result<&'a [u8], Skip> {
    if b.len() < 20 {
        return Err(Skip::Truncated);
    }
    let doff = ((b[12] >> 4) as usize) * 4;
    if doff < 20 || seg_len < doff {
        return Err(Skip::BadHeader);
    }
    if b.len() < doff {
        return Err(Skip::Truncated);
    }
    out.sport = be16(b, 0);
    out.dport = be16(b, 2);
    out.seq = be32(b, 4);
    out.ack = be32(b, 8);
    out.flags = b[13];
    out.window = be16(b, 14);
    out.opts = TcpOptions::default();
    out.payload_len = (seg_len - doff) as u32;
    out.payload = &b[doff..b.len().min(seg_len)];
    Ok(&b[20..doff])
}

/// Parse TCP options (kind, length, value); malformed option lists end parsing quietly, as a
/// receiving stack would ignore what it cannot parse.
#[inline]
pub fn parse_options(mut o: &[u8], out: &mut TcpOptions) {
    while let Some(&kind) = o.first() {
        match kind {
            0 => break,
            1 => {
                o = &o[1..];
                continue;
            }
            _ => {}
        }
        if o.len() < 2 {
            break;
        }
        let len = o[1] as usize;
        if len < 2 || len > o.len() {
            break;
        }
        let v = &o[2..len];
        match (kind, len) {
            (2, 4) => out.mss = be16(v, 0),
            (3, 3) => out.wscale = Some(v[0].min(14)),
            (4, 2) => out.sack_permitted = true,
            (5, _) => {
                let n = (v.len() / 8).min(4);
                for i in 0..n {
                    out.sack[i] = (be32(v, i * 8), be32(v, i * 8 + 4));
                }
                out.n_sack = n as u8;
            }
            (8, 10) => out.ts = Some((be32(v, 0), be32(v, 4))),
            _ => {}
        }
        o = &o[len..];
    }
}

/// Format a 128-bit address (IPv4-mapped shown as dotted quad).
pub fn addr_to_string(a: u128, v6: bool) -> String {
    if !v6 && (a >> 32) == 0xffff {
        std::net::Ipv4Addr::from(a as u32).to_string()
    } else {
        std::net::Ipv6Addr::from(a).to_string()
    }
}

/// Parse an address given on the command line (IPv4 or IPv6) into our 128-bit form.
pub fn parse_addr(s: &str) -> Option<u128> {
    match s.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(a) => Some(v4_mapped(u32::from(a))),
        std::net::IpAddr::V6(a) => Some(u128::from(a)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{Conn, Link, Seg};

    /// A frame of `conn`'s link type carrying `s`.
    fn frame(v6: bool, s: Seg) -> Vec<u8> {
        Conn::with(Link::Ethernet, v6, 80).frame(&s)
    }

    fn syn_with_every_option() -> Seg {
        Seg {
            seq: 7,
            flags: flags::SYN,
            window: 1000,
            mss: Some(1460),
            wscale: Some(7),
            sack_perm: true,
            ts: Some((11, 22)),
            sack: vec![(100, 200)],
            payload: vec![1, 2, 3],
            ..Default::default()
        }
    }

    #[test]
    fn decoding_into_a_used_slot_keeps_nothing_of_the_previous_packet() {
        let first = frame(true, syn_with_every_option());
        let second = frame(false, Seg { from_server: true, seq: 9, ack: 8, flags: flags::ACK, window: 5, ..Default::default() });
        let mut slot = TcpPacket::default();
        let opts = decode_into(LINKTYPE_ETHERNET, &first, &mut slot).expect("first decodes");
        parse_options(opts, &mut slot.opts);
        assert_eq!(slot.opts.mss, 1460, "the first packet's options were parsed into the slot");
        decode_into(LINKTYPE_ETHERNET, &second, &mut slot).expect("second decodes");
        let fresh = decode(LINKTYPE_ETHERNET, &second).expect("second decodes alone");
        assert_eq!(format!("{slot:?}"), format!("{fresh:?}"), "a reused slot equals a fresh decode");
        assert!(!slot.v6 && slot.opts == TcpOptions::default() && slot.payload.is_empty());
    }

    #[test]
    fn decode_into_returns_the_raw_options_and_leaves_them_unparsed() {
        let f = frame(false, syn_with_every_option());
        let mut p = TcpPacket::default();
        let raw = decode_into(LINKTYPE_ETHERNET, &f, &mut p).expect("decodes");
        assert_eq!(p.opts, TcpOptions::default(), "options are the caller's to parse");
        let mut parsed = TcpOptions::default();
        parse_options(raw, &mut parsed);
        assert_eq!(parsed, decode(LINKTYPE_ETHERNET, &f).expect("decodes").opts);
        assert_eq!((parsed.mss, parsed.wscale, parsed.ts, parsed.sack_blocks()), (1460, Some(7), Some((11, 22)), &[(100, 200)][..]));
        assert_eq!((p.seq, p.window, p.payload, p.payload_len), (7, 1000, &[1u8, 2, 3][..], 3));
    }

    #[test]
    fn a_record_that_is_not_tcp_is_skipped_with_its_reason() {
        let mut f = frame(false, syn_with_every_option());
        f[14 + 9] = 17; // IPv4 protocol: UDP
        assert_eq!(decode_into(LINKTYPE_ETHERNET, &f, &mut TcpPacket::default()), Err(Skip::NotTcp));
        assert_eq!(decode_into(LINKTYPE_ETHERNET, &f[..20], &mut TcpPacket::default()), Err(Skip::Truncated));
        assert_eq!(decode_into(999, &f, &mut TcpPacket::default()), Err(Skip::UnknownLink));
    }
}
