//! Mahimahi packet-delivery traces: the rate of a cellular or Wi-Fi link as users already have it.
//!
//! Format (Mahimahi `mm-link`, Netravali et al., USENIX ATC 2015, §3.2; the traces shipped in
//! mahimahi/traces): a text file with one integer per line, a time in milliseconds since the start
//! of the trace; each line is one *delivery opportunity*, the chance to deliver one MTU-sized
//! packet (1504 bytes: 1500 of IP plus the 4-byte TUN packet-information header Mahimahi reads).
//! Several lines with the same time are several opportunities in that millisecond. Times never
//! decrease. When the trace ends it repeats, with a period equal to its last time (so the last
//! timestamp must be positive).
//!
//! How linkem serves a queue from a trace is in `bottleneck.rs` (the byte accounting of
//! Mahimahi's `LinkQueue::use_a_delivery_opportunity`).

use std::time::Duration;

use tcpvideo_model::{Bandwidth, Time};

/// Bytes one delivery opportunity carries (Mahimahi's PACKET_SIZE: MTU 1500 + 4-byte TUN header).
pub const OPPORTUNITY_BYTES: u64 = 1504;
/// Bytes each packet costs beyond its IP length: the TUN header Mahimahi counts per packet.
pub const PER_PACKET_OVERHEAD_BYTES: u64 = 4;

/// A parsed trace: opportunity offsets within one period.
#[derive(Clone, Debug, PartialEq)]
pub struct MahimahiTrace {
    /// Opportunity times within a period, non-decreasing, in nanoseconds.
    offsets_ns: Vec<u64>,
    /// Length of one period (the last line's time), nanoseconds.
    period_ns: u64,
}

impl MahimahiTrace {
    /// Parse trace text; an error names the line.
    pub fn parse(text: &str) -> Result<MahimahiTrace, String> {
        let mut offsets_ns = Vec::new();
        let mut last_ms = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                format!(
                    "trace line {}: {line:?} is not a whole number of milliseconds",
                    i + 1
                )
            })?;
            if ms < last_ms {
                return Err(format!(
                    "trace line {}: time {ms} ms goes back (previous {last_ms} ms)",
                    i + 1
                ));
            }
            if ms > 86_400_000 {
                return Err(format!(
                    "trace line {}: time {ms} ms is longer than a day",
                    i + 1
                ));
            }
            last_ms = ms;
            offsets_ns.push(ms * 1_000_000);
        }
        if offsets_ns.is_empty() {
            return Err("trace: no delivery opportunities (empty file)".into());
        }
        if last_ms == 0 {
            return Err(
                "trace: the last time must be positive (it is the period of the trace)".into(),
            );
        }
        Ok(MahimahiTrace {
            offsets_ns,
            period_ns: last_ms * 1_000_000,
        })
    }

    /// A constant-rate trace: `per_ms` opportunities every millisecond for `period_ms` (what
    /// Mahimahi's traces for a fixed rate look like; 12 Mbit/s is one opportunity per ms).
    pub fn constant(per_ms: u32, period_ms: u64) -> MahimahiTrace {
        let mut offsets_ns = Vec::new();
        for ms in 1..=period_ms {
            for _ in 0..per_ms {
                offsets_ns.push(ms * 1_000_000);
            }
        }
        MahimahiTrace {
            offsets_ns,
            period_ns: period_ms * 1_000_000,
        }
    }

    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// Mean rate the trace offers in IP bytes of full-size (1500-byte) packets.
    pub fn mean_rate(&self) -> Bandwidth {
        Bandwidth::from_bytes_per(
            self.offsets_ns.len() as u64 * (OPPORTUNITY_BYTES - PER_PACKET_OVERHEAD_BYTES),
            self.period(),
        )
    }

    /// The first opportunity at or after `t`, for a trace started at `origin`: (time, cursor).
    pub fn next_at_or_after(&self, origin: Time, t: Time) -> Opportunity {
        let since = t.0.saturating_sub(origin.0);
        let mut cycle = since / self.period_ns;
        let within = since - cycle * self.period_ns;
        // first offset >= within; an offset of 0 in cycle k equals the period's end in cycle k-1
        let mut idx = self.offsets_ns.partition_point(|&o| o < within);
        if idx == self.offsets_ns.len() {
            cycle += 1;
            idx = 0;
        }
        Opportunity { cycle, idx }
    }

    /// Time of an opportunity.
    pub fn time_of(&self, origin: Time, o: Opportunity) -> Time {
        Time(origin.0 + o.cycle * self.period_ns + self.offsets_ns[o.idx])
    }

    /// The opportunity after `o`.
    pub fn after(&self, o: Opportunity) -> Opportunity {
        if o.idx + 1 < self.offsets_ns.len() {
            Opportunity {
                cycle: o.cycle,
                idx: o.idx + 1,
            }
        } else {
            Opportunity {
                cycle: o.cycle + 1,
                idx: 0,
            }
        }
    }
}

/// A position in a repeating trace: which period, which line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opportunity {
    pub cycle: u64,
    pub idx: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_repeats_with_its_last_time_as_period() {
        let t = MahimahiTrace::parse("1\n1\n3\n").unwrap();
        let o = Time::ZERO;
        let mut op = t.next_at_or_after(o, Time::ZERO);
        let mut times = vec![];
        for _ in 0..6 {
            times.push(t.time_of(o, op).0 / 1_000_000);
            op = t.after(op);
        }
        assert_eq!(times, vec![1, 1, 3, 4, 4, 6]);
    }

    #[test]
    fn next_opportunity_skips_to_the_right_period() {
        let t = MahimahiTrace::parse("2\n5\n").unwrap();
        let o = Time::from_millis(100);
        let op = t.next_at_or_after(o, Time::from_millis(100 + 5 * 7 + 3));
        assert_eq!(t.time_of(o, op), Time::from_millis(100 + 5 * 8));
        let op = t.next_at_or_after(o, Time::from_millis(100 + 5 * 7 + 1));
        assert_eq!(t.time_of(o, op), Time::from_millis(100 + 5 * 7 + 2));
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(
            MahimahiTrace::parse("1\n2\nx\n").unwrap_err(),
            "trace line 3: \"x\" is not a whole number of milliseconds"
        );
        assert!(MahimahiTrace::parse("5\n3\n")
            .unwrap_err()
            .starts_with("trace line 2"));
        assert!(MahimahiTrace::parse("0\n0\n")
            .unwrap_err()
            .contains("positive"));
        assert!(MahimahiTrace::parse("\n").unwrap_err().contains("empty"));
    }

    #[test]
    fn one_opportunity_per_ms_is_twelve_megabits() {
        assert_eq!(
            MahimahiTrace::constant(1, 1000).mean_rate(),
            Bandwidth::from_mbps(12)
        );
    }
}
