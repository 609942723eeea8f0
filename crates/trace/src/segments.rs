//! The head of every analysis loop: read each record, count it, drop span-port copies
//! ([`dedup`](crate::dedup)), decode it down to TCP ([`decode`](crate::decode)) and hand the
//! segment on; records that are no TCP segment are counted by reason.
//!
//! Both drivers of [`shard`](crate::shard) (the scanning one, which analyses in place, and the
//! pipelined one, which batches segments to worker threads) run their packets through
//! [`for_each_segment`], so the counters, the duplicate rule, progress reports and per-file
//! warnings are written once and are the same whichever driver runs.
//!
//! It is a loop taking a closure rather than an `Iterator`: a segment borrows the reader's
//! buffer (a memory-mapped record), which the next record may replace, and a closure states
//! that borrow without a lending iterator. The packet is decoded into one slot on the stack and
//! passed by reference ([`decode::decode_into`]), so no ~130-byte value is moved per packet.

use std::ops::ControlFlow;

use crate::decode::{self, Skip, TcpPacket};
use crate::dedup::DuplicateFilter;
use crate::output::DecodeStats;
use crate::reader::{ReadStats, Reader, Warning};
use crate::{Progress, TraceError};

/// Bytes between two progress reports.
const PROGRESS_EVERY_BYTES: u64 = 64 << 20;

/// What reading the input produced besides its segments.
#[derive(Default)]
pub(crate) struct ReadTotals {
    /// Decode counters (TCP segments, duplicates, skips by reason, timestamps going backwards).
    pub dstats: DecodeStats,
    /// The readers' counters, summed over the files.
    pub rstats: ReadStats,
    /// The readers' warnings and one line per damaged file.
    pub warnings: Vec<Warning>,
    /// Records read (duplicates and skipped records included).
    pub packets: u64,
}

/// Read every reader in turn and call `on_segment(packet, raw_options, ts_ns)` for each TCP
/// segment that is not a duplicate; `packet.opts` is empty and `raw_options` holds the TCP
/// option bytes (parse them with [`decode::parse_options`] only for the segments analysed).
/// `ControlFlow::Break` stops reading at once (the counters then cover what was read).
/// `progress`, when given, is called every 64 MiB of input and at the end of each file.
pub(crate) fn for_each_segment(
    readers: Vec<Reader<'_>>,
    progress: Option<&(dyn Fn(Progress) + Sync)>,
    mut on_segment: impl FnMut(&mut TcpPacket<'_>, &[u8], u64) -> ControlFlow<()>,
) -> Result<ReadTotals, TraceError> {
    let mut t = ReadTotals::default();
    let mut last_ts: u64 = 0;
    // Span-port / merge copies are dropped before anything counts them (`dedup`).
    let mut dedup = DuplicateFilter::default();
    let files = readers.len();
    for (file_index, mut r) in readers.into_iter().enumerate() {
        let mut next_report = 0u64;
        let mut stopped = false;
        while let Some(raw) = r.next_packet()? {
            t.packets += 1;
            if raw.ts_ns < last_ts {
                t.dstats.ts_backwards += 1;
            }
            last_ts = last_ts.max(raw.ts_ns);
            if dedup.is_duplicate(raw.ts_ns, raw.data, raw.orig_len) {
                t.dstats.duplicates += 1;
                continue;
            }
            let mut p = TcpPacket::default();
            match decode::decode_into(raw.linktype, raw.data, &mut p) {
                Ok(raw_opts) => {
                    t.dstats.tcp += 1;
                    if on_segment(&mut p, raw_opts, raw.ts_ns).is_break() {
                        stopped = true;
                        break;
                    }
                }
                Err(s) => count_skip(s, &mut t.dstats),
            }
            if let Some(progress) = progress {
                if t.packets & 0xffff == 0 {
                    let (done, total) = r.progress();
                    if done >= next_report {
                        next_report = done + PROGRESS_EVERY_BYTES;
                        progress(Progress { file_index, files, bytes_done: done, bytes_total: total, packets: t.packets });
                    }
                }
            }
        }
        if let Some(progress) = progress {
            let (done, total) = r.progress();
            progress(Progress { file_index, files, bytes_done: done, bytes_total: total, packets: t.packets });
        }
        file_damage_warning(&r, &mut t.warnings);
        merge_read(&mut t.rstats, &r.stats);
        t.warnings.append(&mut r.warnings);
        if stopped {
            break;
        }
    }
    Ok(t)
}

#[inline]
fn count_skip(s: Skip, d: &mut DecodeStats) {
    match s {
        Skip::UnknownLink => d.unknown_link += 1,
        Skip::NotIp => d.not_ip += 1,
        Skip::NotTcp => d.not_tcp += 1,
        Skip::Fragment => d.fragments += 1,
        Skip::Truncated => d.truncated += 1,
        Skip::BadHeader => d.bad_header += 1,
    }
}

/// One line per damaged file with its totals (the per-record warnings stop after 20).
fn file_damage_warning(r: &Reader<'_>, warnings: &mut Vec<Warning>) {
    let s = &r.stats;
    if s.damaged() {
        warnings.push(Warning {
            file: r.name().to_string(),
            offset: 0,
            message: format!(
                "damaged input: {} bytes skipped ({} corrupt and {} truncated records); {} records read",
                s.skipped_bytes, s.corrupt_records, s.truncated_records, s.records
            ),
        });
    }
}

fn merge_read(a: &mut ReadStats, b: &ReadStats) {
    a.records += b.records;
    a.bytes += b.bytes;
    a.truncated_records += b.truncated_records;
    a.corrupt_records += b.corrupt_records;
    a.unknown_blocks += b.unknown_blocks;
    a.resync_skipped_bytes += b.resync_skipped_bytes;
    a.skipped_bytes += b.skipped_bytes;
    a.unknown_block_bytes += b.unknown_block_bytes;
    a.record_bytes += b.record_bytes;
    a.meta_bytes += b.meta_bytes;
}
