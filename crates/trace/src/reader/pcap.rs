//! Classic pcap files (draft-ietf-opsawg-pcap; the tcpdump/libpcap format).
//!
//! 24-byte file header: magic 0xA1B2C3D4 (microsecond timestamps) or 0xA1B23C4D (nanosecond),
//! written in the writer's byte order (so a swapped magic means every field is swapped), version
//! 2.4, snaplen, and the link type (low 16 bits; the upper bits carry FCS flags we ignore).
//! Each record: ts_sec, ts_frac, incl_len, orig_len, then incl_len bytes.
//!
//! pcap has no record framing beyond incl_len, so a damaged length loses sync. A record is
//! rejected only for its structure (fraction out of range, incl_len > orig_len, incl_len beyond
//! the snaplen): never for its time, because merged captures and long idle periods make
//! timestamp jumps of days between valid records (issue 12: Zeek's ssh.pcap lost 1752 of 1797
//! records to a "within a day" rule). After a structurally bad header we scan forward byte by
//! byte for a position where consecutive record headers chain — three of them, or two whose time
//! is within a day of the last good record — the same idea as "pcapfix", and skip what lies
//! between, counting every skipped byte.

use std::io;

use super::{Problem, Source, Step};

/// Parsed file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcapHeader {
    pub swapped: bool,
    pub nanos: bool,
    pub snaplen: u32,
    pub linktype: u32,
    /// Seconds field of the last good record (for plausibility checks when resynchronising).
    pub last_sec: u32,
}

/// Parse the 24-byte pcap file header.
pub fn parse_file_header(b: &[u8]) -> Result<PcapHeader, &'static str> {
    if b.len() < 24 {
        return Err("file too short for a pcap header");
    }
    let m = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let (swapped, nanos) = match m {
        0xA1B2C3D4 => (false, false),
        0xA1B23C4D => (false, true),
        0xD4C3B2A1 => (true, false),
        0x4D3CB2A1 => (true, true),
        _ => return Err("not a pcap or pcapng file (unknown magic)"),
    };
    let rd = |o: usize| rd32(b, o, swapped);
    Ok(PcapHeader { swapped, nanos, snaplen: rd(16), linktype: rd(20) & 0x0FFF_FFFF, last_sec: 0 })
}

#[inline]
fn rd32(b: &[u8], o: usize, swapped: bool) -> u32 {
    let v = u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}

/// A decoded record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub ts_ns: u64,
    pub sec: u32,
    pub incl_len: u32,
    pub orig_len: u32,
}

/// Why a record could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer than `needed` bytes are available.
    NeedMore(usize),
    /// The header is implausible.
    Corrupt,
}

fn max_incl(_h: &PcapHeader) -> u32 {
    // Writers put 0, 65535 or a small value in snaplen and still write longer records (tcpdump's
    // pim-packet-assortment.pcap: 65549-byte records under snaplen 65535); libpcap reads any
    // record up to its MAXIMUM_SNAPLEN (256 KiB) whatever the header says, and so do we.
    262_144
}

/// A header that fails [`parse_record_header`] only on values libpcap does not check (a
/// fraction out of range, incl_len > orig_len): the record is taken, with the fraction clamped,
/// if the record that follows it parses cleanly or the input ends right after it (tcpdump's
/// fuzzed test captures have such records; tshark reads them, so must we).
fn lenient_record_header(h: &PcapHeader, b: &[u8]) -> Option<RecordHeader> {
    if b.len() < 16 {
        return None;
    }
    let sec = rd32(b, 0, h.swapped);
    let frac = rd32(b, 4, h.swapped);
    let incl_len = rd32(b, 8, h.swapped);
    let orig_len = rd32(b, 12, h.swapped);
    if incl_len > max_incl(h) {
        return None;
    }
    let frac_ns = if h.nanos { frac.min(999_999_999) as u64 } else { frac.min(999_999) as u64 * 1000 };
    Some(RecordHeader { ts_ns: sec as u64 * 1_000_000_000 + frac_ns, sec, incl_len, orig_len: orig_len.max(incl_len) })
}

/// Parse a record header (16 bytes) and check it is plausible.
#[inline]
pub fn parse_record_header(h: &PcapHeader, b: &[u8]) -> Result<RecordHeader, RecordError> {
    if b.len() < 16 {
        return Err(RecordError::NeedMore(16));
    }
    let sec = rd32(b, 0, h.swapped);
    let frac = rd32(b, 4, h.swapped);
    let incl_len = rd32(b, 8, h.swapped);
    let orig_len = rd32(b, 12, h.swapped);
    let frac_ns = if h.nanos {
        if frac >= 1_000_000_000 {
            return Err(RecordError::Corrupt);
        }
        frac as u64
    } else {
        if frac >= 1_000_000 {
            return Err(RecordError::Corrupt);
        }
        frac as u64 * 1000
    };
    if incl_len > max_incl(h) || incl_len > orig_len || orig_len > (1 << 24) {
        return Err(RecordError::Corrupt);
    }
    Ok(RecordHeader { ts_ns: sec as u64 * 1_000_000_000 + frac_ns, sec, incl_len, orig_len })
}

/// Parse one whole record at the start of `b`: the header and the borrowed packet bytes, and
/// the number of bytes it occupies. Pure function, suitable for fuzzing.
pub fn parse_record<'a>(h: &PcapHeader, b: &'a [u8]) -> Result<(RecordHeader, &'a [u8], usize), RecordError> {
    let rh = parse_record_header(h, b)?;
    let total = 16 + rh.incl_len as usize;
    if b.len() < total {
        return Err(RecordError::NeedMore(total));
    }
    Ok((rh, &b[16..total], total))
}

/// Used only while resynchronising (never to reject a record that parses): a time within a
/// day after the last good record (or a second before it) makes a candidate more believable.
fn plausible_time(h: &PcapHeader, sec: u32) -> bool {
    h.last_sec == 0 || (sec as i64 >= h.last_sec as i64 - 1 && sec as i64 <= h.last_sec as i64 + 86_400)
}

/// Stricter structural test used only while resynchronising: a real record is at least a
/// minimal IP header long.
fn plausible_resync(r: &RecordHeader) -> bool {
    r.incl_len >= 20 && r.orig_len >= r.incl_len
}

/// One step of the streaming reader.
pub(crate) fn step(src: &mut Source<'_>, h: &mut PcapHeader) -> io::Result<Step> {
    let b = src.peek(16)?;
    if b.is_empty() {
        return Ok(Step::End);
    }
    if b.len() < 16 {
        let n = b.len();
        src.consume(n);
        return Ok(Step::Problem(Problem::Truncated { bytes: n as u64 }));
    }
    match parse_record_header(h, b) {
        Ok(rh) => {
            let total = 16 + rh.incl_len as usize;
            let avail = src.peek(total)?.len();
            if avail < total {
                src.consume(avail);
                return Ok(Step::Problem(Problem::Truncated { bytes: avail as u64 }));
            }
            h.last_sec = rh.sec;
            Ok(Step::Record {
                hdr_len: 16,
                cap_len: rh.incl_len as usize,
                ts_ns: rh.ts_ns,
                linktype: h.linktype,
                orig_len: rh.orig_len,
                total,
            })
        }
        Err(_) => {
            if let Some(rh) = lenient_record_header(h, b) {
                let total = 16 + rh.incl_len as usize;
                // Chained: what follows is the end of input, a clean header, or one more lenient
                // record followed by the end or a clean header.
                let after = src.peek(total + 16)?;
                let mut chained = after.len() == total || (after.len() >= total + 16 && parse_record_header(h, &after[total..]).is_ok());
                let fits = after.len() >= total;
                if fits && !chained && after.len() >= total + 16 {
                    if let Some(next) = lenient_record_header(h, &after[total..]) {
                        let end2 = total + 16 + next.incl_len as usize;
                        let after2 = src.peek(end2 + 16)?;
                        chained = after2.len() == end2 || (after2.len() >= end2 + 16 && parse_record_header(h, &after2[end2..]).is_ok());
                    }
                }
                if fits && chained {
                    h.last_sec = rh.sec;
                    return Ok(Step::Record {
                        hdr_len: 16,
                        cap_len: rh.incl_len as usize,
                        ts_ns: rh.ts_ns,
                        linktype: h.linktype,
                        orig_len: rh.orig_len,
                        total,
                    });
                }
            }
            resync(src, h)
        }
    }
}

/// Scan forward for chained plausible record headers (or one that ends exactly at EOF).
fn resync(src: &mut Source<'_>, h: &mut PcapHeader) -> io::Result<Step> {
    const WINDOW: usize = 1 << 20;
    let mut skipped: u64 = 0;
    loop {
        let b = src.peek(WINDOW)?;
        let n = b.len();
        if n < 16 {
            src.consume(n);
            skipped += n as u64;
            return Ok(Step::Problem(Problem::Corrupt { skipped }));
        }
        // Start at 1: position 0 is the header we already rejected (or the window's start).
        let start = if skipped == 0 { 1 } else { 0 };
        let at_eof = n < WINDOW;
        // Does a plausible record start at `i`? Returns where the following one would start.
        let record_at = |i: usize| -> Option<(RecordHeader, usize)> {
            let rh = parse_record_header(h, b.get(i..)?).ok()?;
            plausible_resync(&rh).then_some((rh, i + 16 + rh.incl_len as usize))
        };
        for i in start..n.saturating_sub(16) {
            if let Some((rh, next)) = record_at(i) {
                let ok = if next == n && at_eof {
                    true // the candidate ends exactly at end of input
                } else if let Some((r2, next2)) = record_at(next) {
                    // Two chained headers are enough when the time fits; otherwise ask for a
                    // third (or the end of input right after the second).
                    (plausible_time(h, rh.sec) && plausible_time(h, r2.sec)) || (next2 == n && at_eof) || record_at(next2).is_some()
                } else {
                    false
                };
                if ok {
                    src.consume(i);
                    skipped += i as u64;
                    return Ok(Step::Problem(Problem::Corrupt { skipped }));
                }
            }
        }
        if n < WINDOW {
            // Nothing plausible until end of input.
            src.consume(n);
            skipped += n as u64;
            return Ok(Step::Problem(Problem::Corrupt { skipped }));
        }
        let adv = n - 16 - 65_552; // keep an overlap for a record straddling the window
        src.consume(adv.max(1));
        skipped += adv.max(1) as u64;
        if skipped > 256 << 20 {
            return Ok(Step::Problem(Problem::Corrupt { skipped }));
        }
    }
}
