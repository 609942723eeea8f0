//! ustreamer's application pacing: a token bucket that schedules fixed-size socket writes
//! (Ghobadi et al., "Trickle: Rate Limiting YouTube Video Streaming", USENIX ATC 2012, §2, §5.2).
//!
//! Tokens (bytes) enter the bucket at `rate` (ustreamer: 125 % of the encoding rate) from the
//! start of the throttling phase; each write of one block (nominally 64 kB) takes a block's worth.
//! The timer of the next block is set to expire as soon as the bucket holds enough tokens. If the
//! delivery is behind (the socket blocked the writer while tokens kept arriving), that delay is
//! zero and blocks are written back to back until the bucket is drained: the catch-up that keeps
//! the throttled phase's mean rate at `rate`.
//!
//! The 100 ms floor (§5.2): ustreamer "does not pause the write for intervals less than 100ms to
//! save timers". A block whose delay would be shorter than `min_timer` is written at once, on
//! credit. At high rates that bunches several 16 kB blocks into one write burst: the steps at 12,
//! 23 and 34 packets (16, 32, 48 kB) of the paper's Fig. 5.
//!
//! Accounting: with an empty bucket at `start`, block k (1-based) is due when k·block bytes of
//! tokens have arrived, at start + k·block·8/rate. Keeping the count of blocks written instead of
//! a running token balance makes the schedule exact in integer nanoseconds (no drift over an
//! hour of video) and makes the unbounded catch-up explicit. The last block of a file may be
//! shorter; it is charged as a whole block (the file ends there, so nothing later is affected).

use std::time::Duration;

use crate::units::{Bandwidth, Time};

/// ustreamer's nominal block (§2: "nominally 64kB").
pub const BLOCK_64KB: u64 = 64 * 1024;
/// The shrunk-block experiment group's block (§4.1).
pub const BLOCK_16KB: u64 = 16 * 1024;
/// No pause shorter than this (§5.2).
pub const MIN_TIMER: Duration = Duration::from_millis(100);

/// What the writer should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacerDecision {
    /// Write this many bytes to the socket now (one block, or the file's short tail).
    Write { bytes: u64 },
    /// Nothing is due: set a timer for this time and ask again then.
    WaitUntil(Time),
}

/// The token bucket of one connection's throttling phase.
#[derive(Clone, Debug)]
pub struct TokenBucketPacer {
    rate: Bandwidth,
    block_bytes: u64,
    min_timer: Duration,
    start: Time,
    blocks_written: u64,
}

impl TokenBucketPacer {
    /// A bucket that starts empty at `start` and fills at `rate`.
    pub fn new(
        start: Time,
        rate: Bandwidth,
        block_bytes: u64,
        min_timer: Duration,
    ) -> TokenBucketPacer {
        TokenBucketPacer {
            rate,
            block_bytes: block_bytes.max(1),
            min_timer,
            start,
            blocks_written: 0,
        }
    }

    /// ustreamer as deployed: tokens at 1.25 × the encoding rate, 100 ms timer floor.
    pub fn ustreamer(start: Time, encoding_rate: Bandwidth, block_bytes: u64) -> TokenBucketPacer {
        TokenBucketPacer::new(start, encoding_rate.scale(1.25), block_bytes, MIN_TIMER)
    }

    pub fn rate(&self) -> Bandwidth {
        self.rate
    }

    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// When the next block's tokens will all have arrived.
    pub fn next_due(&self) -> Time {
        let bits = (self.blocks_written as u128 + 1) * self.block_bytes as u128 * 8;
        let ns = (bits * 1_000_000_000).div_ceil(self.rate.bits_per_sec.max(1) as u128);
        self.start + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }

    /// Called when the socket can take data and `remaining_bytes` of the file are left to write.
    /// A `Write` is taken as done: the caller writes those bytes (or, if the socket takes fewer,
    /// keeps the rest for its next write — ustreamer's writes block until taken).
    pub fn poll(&mut self, now: Time, remaining_bytes: u64) -> PacerDecision {
        if remaining_bytes == 0 {
            return PacerDecision::WaitUntil(Time::MAX);
        }
        let due = self.next_due();
        if due <= now || due.saturating_since(now) < self.min_timer {
            self.blocks_written += 1;
            return PacerDecision::Write {
                bytes: remaining_bytes.min(self.block_bytes),
            };
        }
        PacerDecision::WaitUntil(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: u64 = 100 * 1024 * 1024;

    /// Drive a pacer whose writer is never blocked: (time, bytes) of each write until `until`.
    fn writes_until(p: &mut TokenBucketPacer, until: Time) -> Vec<(Time, u64)> {
        let mut now = Time::ZERO;
        let mut out = Vec::new();
        while now < until {
            match p.poll(now, FILE) {
                PacerDecision::Write { bytes } => out.push((now, bytes)),
                PacerDecision::WaitUntil(t) => now = t,
            }
        }
        out
    }

    #[test]
    fn writes_64kb_blocks_at_125_percent_of_the_encoding_rate() {
        // 4 Mbit/s video → tokens at 5 Mbit/s → one 65 536-byte block every 104.8576 ms (above the
        // 100 ms floor, so every block waits for its tokens).
        let mut p = TokenBucketPacer::ustreamer(Time::ZERO, Bandwidth::from_mbps(4), BLOCK_64KB);
        let w = writes_until(&mut p, Time::from_secs(10));
        assert!(w.iter().all(|&(_, b)| b == BLOCK_64KB));
        assert_eq!(w[0].0, Time::from_nanos(104_857_600));
        assert_eq!(w[1].0, Time::from_nanos(209_715_200));
        // 10 s at 5 Mbit/s = 6.25 MB = 95.37 blocks: the 95th is due at 9.96 s, the 96th at 10.07.
        assert_eq!(w.len(), 95);
    }

    #[test]
    fn a_block_due_within_100ms_is_written_at_once_so_16kb_blocks_bunch() {
        // 2 Mbit/s video → 2.5 Mbit/s tokens → a 16 384-byte block every 52.4288 ms, under the
        // 100 ms floor.
        let mut p = TokenBucketPacer::ustreamer(Time::ZERO, Bandwidth::from_mbps(2), BLOCK_16KB);
        let w = writes_until(&mut p, Time::from_secs(2));
        // Group writes made at the same instant: each group is one burst on the wire.
        let mut bursts: Vec<(Time, u64)> = Vec::new();
        for (t, b) in w {
            match bursts.last_mut() {
                Some((bt, bb)) if *bt == t => *bb += b,
                _ => bursts.push((t, b)),
            }
        }
        // At t = 0 block 1 is due in 52 ms < 100 ms: written; block 2 then due in 105 ms: wait.
        assert_eq!(bursts[0], (Time::ZERO, BLOCK_16KB));
        // The writer sleeps until block 2's due time (104.86 ms); then block 2 is written, and
        // block 3, due 52 ms later (< 100 ms), too. So after the first, every burst is two
        // blocks = 32 kB (the paper's 23-packet step), 104.8576 ms apart.
        for (i, &(t, bytes)) in bursts.iter().enumerate().skip(1) {
            assert_eq!(bytes, 2 * BLOCK_16KB, "burst {i}");
            assert_eq!(t.as_nanos(), 104_857_600 * i as u64, "burst {i}");
        }
        // The mean rate still matches the tokens: 2 s × 2.5 Mbit/s = 625 000 B ≈ 38.1 blocks.
        let total: u64 = bursts.iter().map(|b| b.1).sum();
        assert_eq!(total / BLOCK_16KB, 39);
    }

    #[test]
    fn without_the_floor_16kb_blocks_are_written_one_by_one() {
        let rate = Bandwidth::from_bps(2_500_000);
        let mut p = TokenBucketPacer::new(Time::ZERO, rate, BLOCK_16KB, Duration::ZERO);
        let w = writes_until(&mut p, Time::from_secs(1));
        let times: Vec<Time> = w.iter().map(|x| x.0).collect();
        let mut dedup = times.clone();
        dedup.dedup();
        assert_eq!(times, dedup, "two writes at one instant");
        assert_eq!(w[0].0, Time::from_nanos(52_428_800));
    }

    #[test]
    fn a_writer_blocked_by_the_socket_catches_up_back_to_back() {
        // 1 Mbit/s video, 64 kB blocks: tokens at 1.25 Mbit/s, a block per 419.43 ms. The socket
        // blocks the writer for the first 2 s: by then 4 blocks are due and all go at once.
        let mut p = TokenBucketPacer::ustreamer(Time::ZERO, Bandwidth::from_mbps(1), BLOCK_64KB);
        let now = Time::from_secs(2);
        let mut at_once = 0;
        while let PacerDecision::Write { .. } = p.poll(now, FILE) {
            at_once += 1;
        }
        // Blocks 1–4 are due by 1.68 s; block 5 at 2.097 s is within 100 ms of 2 s: also written.
        assert_eq!(at_once, 5);
        assert_eq!(
            p.poll(now, FILE),
            PacerDecision::WaitUntil(Time::from_nanos(2_516_582_400))
        );
    }

    #[test]
    fn the_file_tail_is_written_whole_and_then_nothing_more() {
        let mut p = TokenBucketPacer::ustreamer(Time::ZERO, Bandwidth::from_mbps(4), BLOCK_64KB);
        let t = Time::from_secs(1);
        assert_eq!(p.poll(t, 1000), PacerDecision::Write { bytes: 1000 });
        assert_eq!(p.poll(t, 0), PacerDecision::WaitUntil(Time::MAX));
    }
}
