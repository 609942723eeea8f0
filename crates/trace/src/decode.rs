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

/// Decode a captured record of the given link type down to TCP.
#[inline]
pub fn decode(linktype: u32, data: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    decode_inner(linktype, data, true).map(|(p, _)| p)
}

/// Like [`decode`] but leaves `opts` empty and returns the raw TCP option bytes instead, so
/// that option parsing can happen on another thread ([`parse_options`] then fills `opts`).
#[inline]
pub fn decode_deferred(linktype: u32, data: &[u8]) -> Result<(TcpPacket<'_>, &[u8]), Skip> {
    decode_inner(linktype, data, false)
}

#[inline]
fn decode_inner(linktype: u32, data: &[u8], parse: bool) -> Result<(TcpPacket<'_>, &[u8]), Skip> {
    let (ethertype, off) = match linktype {
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
    };
    match ethertype {
        0x0800 => ipv4(&data[off..], parse),
        0x86dd => ipv6(&data[off..], parse),
        _ => Err(Skip::NotIp),
    }
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

/// Decode an IPv4 packet down to TCP.
pub fn decode_ipv4(b: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    ipv4(b, true).map(|(p, _)| p)
}

#[inline]
fn ipv4(b: &[u8], parse: bool) -> Result<(TcpPacket<'_>, &[u8]), Skip> {
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
    let src = v4_mapped(be32(b, 12));
    let dst = v4_mapped(be32(b, 16));
    tcp(&b[ihl..], total - ihl, src, dst, false, parse)
}

/// Decode an IPv6 packet down to TCP, walking extension headers.
pub fn decode_ipv6(b: &[u8]) -> Result<TcpPacket<'_>, Skip> {
    ipv6(b, true).map(|(p, _)| p)
}

fn ipv6(b: &[u8], parse: bool) -> Result<(TcpPacket<'_>, &[u8]), Skip> {
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
    tcp(&b[off..], remaining, src, dst, true, parse)
}

/// Decode a TCP header; `seg_len` is the TCP segment length (header + payload) on the wire.
pub fn decode_tcp(b: &[u8], seg_len: usize, src: u128, dst: u128, v6: bool) -> Result<TcpPacket<'_>, Skip> {
    tcp(b, seg_len, src, dst, v6, true).map(|(p, _)| p)
}

#[inline]
fn tcp(b: &[u8], seg_len: usize, src: u128, dst: u128, v6: bool, parse: bool) -> Result<(TcpPacket<'_>, &[u8]), Skip> {
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
    let mut opts = TcpOptions::default();
    let raw_opts = &b[20..doff];
    if parse {
        parse_options(raw_opts, &mut opts);
    }
    let payload_len = (seg_len - doff) as u32;
    let cap_end = b.len().min(seg_len);
    let p = TcpPacket {
        src,
        dst,
        v6,
        sport: be16(b, 0),
        dport: be16(b, 2),
        seq: be32(b, 4),
        ack: be32(b, 8),
        flags: b[13],
        window: be16(b, 14),
        opts,
        payload_len,
        payload: &b[doff..cap_end],
    };
    Ok((p, raw_opts))
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
