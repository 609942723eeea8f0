//! pcapng files (draft-ietf-opsawg-pcapng).
//!
//! Blocks: type, total length, body, total length again. The Section Header Block (SHB,
//! 0x0A0D0D0A) carries the byte-order magic 0x1A2B3C4D; every later field of the section uses
//! that order. Interface Description Blocks (IDB, type 1) give each interface a link type and a
//! timestamp resolution (option if_tsresol, code 9: 10^-n, or 2^-n when the top bit is set;
//! default microseconds) and offset (if_tsoffset, code 14, seconds). Packets come in Enhanced
//! Packet Blocks (EPB, type 6), Simple Packet Blocks (SPB, type 3, interface 0, no timestamp)
//! or the obsolete Packet Block (type 2). Other known blocks (name resolution, statistics,
//! custom, decryption secrets, systemd journal) are skipped silently; unknown ones are counted.
//!
//! The block length gives framing, so a damaged packet block costs only itself. A damaged
//! length (not a multiple of 4, shorter than 12, or longer than the file) loses sync; we then
//! scan forward 4 bytes at a time for a block whose leading and trailing lengths agree.

use std::io;

use super::{Problem, Source, Step};

/// One interface of the current section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    pub linktype: u32,
    pub snaplen: u32,
    /// Timestamp units per second.
    pub units_per_sec: u64,
    pub offset_sec: i64,
}

/// Reader state across blocks.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub big_endian: bool,
    pub interfaces: Vec<Interface>,
    pub seen_shb: bool,
}

/// A parsed block at the start of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block<'a> {
    Section,
    Interface,
    Packet { iface: u32, ts_units: Option<u64>, data: &'a [u8], orig_len: u32 },
    Other(u32),
    Unknown(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockError {
    NeedMore(usize),
    Corrupt,
}

const MAX_BLOCK: u32 = 64 << 20;

#[inline]
fn rd32(b: &[u8], o: usize, be: bool) -> u32 {
    let a = [b[o], b[o + 1], b[o + 2], b[o + 3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}
#[inline]
fn rd16(b: &[u8], o: usize, be: bool) -> u16 {
    let a = [b[o], b[o + 1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

/// Parse one block at the start of `b`, updating `st` for SHB/IDB. Returns the block and its
/// total length. Pure apart from `st`; suitable for fuzzing.
pub fn parse_block<'a>(st: &mut State, b: &'a [u8]) -> Result<(Block<'a>, usize), BlockError> {
    if b.len() < 12 {
        return Err(BlockError::NeedMore(12));
    }
    let raw_type = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if raw_type == 0x0A0D0D0A {
        // SHB: the byte-order magic decides the order of this and following blocks.
        let bom = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        let be = match bom {
            0x1A2B3C4D => false,
            0x4D3C2B1A => true,
            _ => return Err(BlockError::Corrupt),
        };
        let len = rd32(b, 4, be);
        if len < 28 || !len.is_multiple_of(4) || len > MAX_BLOCK {
            return Err(BlockError::Corrupt);
        }
        if b.len() < len as usize {
            return Err(BlockError::NeedMore(len as usize));
        }
        st.big_endian = be;
        st.interfaces.clear();
        st.seen_shb = true;
        return Ok((Block::Section, len as usize));
    }
    if !st.seen_shb {
        return Err(BlockError::Corrupt);
    }
    let be = st.big_endian;
    let btype = rd32(b, 0, be);
    let len = rd32(b, 4, be);
    if len < 12 || !len.is_multiple_of(4) || len > MAX_BLOCK {
        return Err(BlockError::Corrupt);
    }
    let len_us = len as usize;
    if b.len() < len_us {
        return Err(BlockError::NeedMore(len_us));
    }
    if rd32(b, len_us - 4, be) != len {
        return Err(BlockError::Corrupt);
    }
    let body = &b[8..len_us - 4];
    let blk = match btype {
        1 => {
            if body.len() < 8 {
                return Err(BlockError::Corrupt);
            }
            let mut ifc =
                Interface { linktype: rd16(body, 0, be) as u32, snaplen: rd32(body, 4, be), units_per_sec: 1_000_000, offset_sec: 0 };
            let mut o = 8;
            while o + 4 <= body.len() {
                let code = rd16(body, o, be);
                let olen = rd16(body, o + 2, be) as usize;
                let v = o + 4;
                if v + olen > body.len() {
                    break;
                }
                match code {
                    0 => break,
                    9 if olen >= 1 => {
                        let r = body[v];
                        let exp = (r & 0x7f) as u32;
                        ifc.units_per_sec =
                            if r & 0x80 == 0 { 10u64.checked_pow(exp).unwrap_or(0) } else { 1u64.checked_shl(exp).unwrap_or(0) };
                        if ifc.units_per_sec == 0 {
                            return Err(BlockError::Corrupt);
                        }
                    }
                    14 if olen >= 8 => {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(&body[v..v + 8]);
                        ifc.offset_sec = if be { i64::from_be_bytes(a) } else { i64::from_le_bytes(a) };
                    }
                    _ => {}
                }
                o = v + ((olen + 3) & !3);
            }
            if st.interfaces.len() < 65_536 {
                st.interfaces.push(ifc);
            }
            Block::Interface
        }
        6 => {
            if body.len() < 20 {
                return Err(BlockError::Corrupt);
            }
            let iface = rd32(body, 0, be);
            let ts = ((rd32(body, 4, be) as u64) << 32) | rd32(body, 8, be) as u64;
            let cap = rd32(body, 12, be) as usize;
            let orig = rd32(body, 16, be);
            if 20 + cap > body.len() {
                return Err(BlockError::Corrupt);
            }
            Block::Packet { iface, ts_units: Some(ts), data: &body[20..20 + cap], orig_len: orig }
        }
        3 => {
            if body.len() < 4 {
                return Err(BlockError::Corrupt);
            }
            let orig = rd32(body, 0, be);
            let snap = st.interfaces.first().map(|i| i.snaplen).filter(|&s| s > 0).unwrap_or(u32::MAX);
            let cap = (orig.min(snap) as usize).min(body.len() - 4);
            Block::Packet { iface: 0, ts_units: None, data: &body[4..4 + cap], orig_len: orig }
        }
        2 => {
            if body.len() < 20 {
                return Err(BlockError::Corrupt);
            }
            let iface = rd16(body, 0, be) as u32;
            let ts = ((rd32(body, 4, be) as u64) << 32) | rd32(body, 8, be) as u64;
            let cap = rd32(body, 12, be) as usize;
            let orig = rd32(body, 16, be);
            if 20 + cap > body.len() {
                return Err(BlockError::Corrupt);
            }
            Block::Packet { iface, ts_units: Some(ts), data: &body[20..20 + cap], orig_len: orig }
        }
        // Name resolution, interface statistics, decryption secrets, custom blocks, journal.
        4 | 5 | 0x0A | 0x0BAD | 0x40000BAD | 0x9 | 0x80000001 => Block::Other(btype),
        t => Block::Unknown(t),
    };
    Ok((blk, len_us))
}

/// Convert a timestamp in interface units to nanoseconds since the epoch.
#[inline]
pub fn ts_to_ns(ifc: &Interface, units: u64) -> u64 {
    let ns = if ifc.units_per_sec == 1_000_000 {
        units.saturating_mul(1000)
    } else if ifc.units_per_sec == 1_000_000_000 {
        units
    } else {
        let ups = ifc.units_per_sec;
        let secs = units / ups;
        let rem = units % ups;
        secs.saturating_mul(1_000_000_000) + ((rem as u128 * 1_000_000_000u128) / ups as u128) as u64
    };
    (ns as i128 + ifc.offset_sec as i128 * 1_000_000_000).clamp(0, u64::MAX as i128) as u64
}

pub(crate) fn step(src: &mut Source<'_>, st: &mut State) -> io::Result<Step> {
    let head = src.peek(12)?;
    if head.is_empty() {
        return Ok(Step::End);
    }
    if head.len() < 12 {
        let n = head.len();
        src.consume(n);
        return Ok(Step::Problem(Problem::Truncated { bytes: n as u64 }));
    }
    // Peek the declared length first (bounded), then parse the whole block.
    let be = st.big_endian;
    let mut want = rd32(head, 4, be) as usize;
    if u32::from_le_bytes([head[0], head[1], head[2], head[3]]) == 0x0A0D0D0A {
        let bom = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        want = rd32(head, 4, bom == 0x4D3C2B1A) as usize;
    }
    if want > MAX_BLOCK as usize || want < 12 {
        return resync(src, st);
    }
    let b = src.peek(want)?;
    if b.len() < want {
        let n = b.len();
        src.consume(n);
        return Ok(Step::Problem(Problem::Truncated { bytes: n as u64 }));
    }
    match parse_block(st, b) {
        Ok((Block::Packet { iface, ts_units, data, orig_len }, total)) => {
            let Some(ifc) = st.interfaces.get(iface as usize).copied() else {
                src.consume(total);
                return Ok(Step::Problem(Problem::Corrupt { skipped: total as u64 }));
            };
            let ts_ns = ts_units.map(|u| ts_to_ns(&ifc, u)).unwrap_or(0);
            let hdr_len = data.as_ptr() as usize - b.as_ptr() as usize;
            Ok(Step::Record { hdr_len, cap_len: data.len(), ts_ns, linktype: ifc.linktype, orig_len, total })
        }
        Ok((Block::Unknown(t), total)) => {
            src.consume(total);
            Ok(Step::Problem(Problem::UnknownBlock { block_type: t, bytes: total as u64 }))
        }
        Ok((_, total)) => {
            src.consume(total);
            Ok(Step::Skip { bytes: total as u64 })
        }
        Err(BlockError::NeedMore(_)) => {
            let n = b.len();
            src.consume(n);
            Ok(Step::Problem(Problem::Truncated { bytes: n as u64 }))
        }
        Err(BlockError::Corrupt) => resync(src, st),
    }
}

/// Scan forward (4-byte aligned) for a block whose two length fields agree.
fn resync(src: &mut Source<'_>, st: &mut State) -> io::Result<Step> {
    let be = st.big_endian;
    let mut skipped: u64 = 0;
    loop {
        let b = src.peek(1 << 20)?;
        let n = b.len();
        if n < 12 {
            src.consume(n);
            skipped += n as u64;
            return Ok(Step::Problem(Problem::Corrupt { skipped }));
        }
        let mut i = 4;
        while i + 12 <= n {
            let t = rd32(b, i, be);
            let len = rd32(b, i + 4, be) as usize;
            let known = matches!(t, 1..=6) || t == 0x0A0D0D0A;
            if known && len >= 12 && len.is_multiple_of(4) && i + len <= n && rd32(b, i + len - 4, be) as usize == len {
                src.consume(i);
                skipped += i as u64;
                return Ok(Step::Problem(Problem::Corrupt { skipped }));
            }
            i += 4;
        }
        if n < (1 << 20) {
            src.consume(n);
            skipped += n as u64;
            return Ok(Step::Problem(Problem::Corrupt { skipped }));
        }
        src.consume(n / 2);
        skipped += (n / 2) as u64;
    }
}
