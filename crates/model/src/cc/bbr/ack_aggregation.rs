//! ACK-aggregation allowance: extra cwnd for data that arrives in ACK bursts (Linux
//! `bbr_update_ack_aggregation`, `bbr_ack_aggregation_cwnd`, since Linux 5.1; the kernel this
//! project emulates against has it on).
//!
//! Wi-Fi, cable, delayed and stretched ACKs deliver acknowledgements in bursts: for a while more
//! data is ACKed than `bw × elapsed` predicts, then nothing. A cwnd of exactly gain·BDP then runs
//! dry between bursts. Linux measures, within an "ACK epoch" that restarts whenever ACKs fall
//! behind the expected rate, the excess `acked − bw·(now − epoch start)` (capped at cwnd), keeps
//! the max over two alternating windows of 5 rounds, and adds it (× `extra_acked_gain`, capped
//! at `bw × 100 ms`) to the cwnd target once the pipe is full.
//!
//! Units here: segments and our [`Bandwidth`]; Linux counts packets and packets/µs.

use std::time::Duration;

use crate::units::{Bandwidth, Time};

/// Linux `bbr_ack_epoch_acked_reset_thresh`: restart very old epochs.
const EPOCH_ACKED_RESET: u64 = 1 << 20;

#[derive(Clone, Debug)]
pub struct AckAggregation {
    /// Gain in BBR units (256 = 1.0); 0 disables (Linux `bbr_extra_acked_gain`).
    pub gain: u64,
    /// Rounds per max window (Linux `bbr_extra_acked_win_rtts` = 5).
    pub win_rounds: u64,
    /// Cap on the allowance, as time at the current bandwidth (Linux `bbr_extra_acked_max_us`).
    pub max_time: Duration,
    epoch_start: Option<Time>,
    epoch_acked: u64,
    extra_acked: [u64; 2],
    win_idx: usize,
    win_rounds_elapsed: u64,
}

impl AckAggregation {
    pub fn new(gain: u64, win_rounds: u64, max_time: Duration) -> AckAggregation {
        AckAggregation {
            gain,
            win_rounds,
            max_time,
            epoch_start: None,
            epoch_acked: 0,
            extra_acked: [0; 2],
            win_idx: 0,
            win_rounds_elapsed: 0,
        }
    }

    /// Linux `bbr_extra_acked`: the max excess of the two windows, in segments.
    pub fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// One ACK with a valid rate sample. `acked` segments, `bw` BBR's bandwidth, `cwnd` segments.
    pub fn update(&mut self, now: Time, acked: u64, round_start: bool, bw: Bandwidth, mss: u64, cwnd: u64) {
        if self.gain == 0 || acked == 0 {
            return;
        }
        if round_start {
            self.win_rounds_elapsed = (self.win_rounds_elapsed + 1).min(0x1F);
            if self.win_rounds_elapsed >= self.win_rounds {
                self.win_rounds_elapsed = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let start = *self.epoch_start.get_or_insert(now);
        let mut expected = bw.bytes_in(now.saturating_since(start)) / mss.max(1);
        // ACKs are slower than expected (or the epoch is ancient): start a new epoch here.
        if self.epoch_acked <= expected || self.epoch_acked + acked >= EPOCH_ACKED_RESET {
            self.epoch_acked = 0;
            self.epoch_start = Some(now);
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(0xFFFFF);
        let extra = (self.epoch_acked - expected).min(cwnd);
        if extra > self.extra_acked[self.win_idx] {
            self.extra_acked[self.win_idx] = extra;
        }
    }

    /// Linux `bbr_ack_aggregation_cwnd`: segments to add to the cwnd target.
    pub fn cwnd_allowance(&self, full_bw_reached: bool, bw: Bandwidth, mss: u64) -> u64 {
        if self.gain == 0 || !full_bw_reached {
            return 0;
        }
        let max_aggr = bw.bytes_in(self.max_time) / mss.max(1);
        ((self.gain * self.extra_acked()) >> 8).min(max_aggr)
    }

    /// Linux `bbr_cwnd_event(CA_EVENT_TX_START)`: a new epoch when sending resumes after idle.
    pub fn restart(&mut self, now: Time) {
        self.epoch_start = Some(now);
        self.epoch_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    #[test]
    fn acks_at_the_expected_rate_leave_no_allowance() {
        // 10 Mbit/s = 863 segments/s: one segment every 1.158 ms.
        let bw = Bandwidth::from_mbps(10);
        let mut a = AckAggregation::new(256, 5, Duration::from_millis(100));
        let step = bw.transmit_time(MSS);
        let mut t = Time::from_secs(1);
        for _ in 0..1000 {
            t += step;
            a.update(t, 1, false, bw, MSS, 100);
        }
        assert!(a.extra_acked() <= 1, "extra {}", a.extra_acked());
    }

    #[test]
    fn bursts_of_acks_are_measured_and_capped_by_cwnd_and_100_ms() {
        // Every 20 ms, 17 segments' worth of ACKs arrive at once (the 10 Mbit/s average).
        let bw = Bandwidth::from_mbps(10);
        let mut a = AckAggregation::new(256, 5, Duration::from_millis(100));
        let mut t = Time::from_secs(1);
        for _ in 0..50 {
            t += Duration::from_millis(20);
            for _ in 0..17 {
                a.update(t, 1, false, bw, MSS, 100);
            }
        }
        assert!(a.extra_acked() >= 16, "a 17-segment burst gives ~16-17 extra, got {}", a.extra_acked());
        assert_eq!(a.cwnd_allowance(false, bw, MSS), 0, "nothing before the pipe is full");
        assert_eq!(a.cwnd_allowance(true, bw, MSS), a.extra_acked());
        let mut small = a.clone();
        small.max_time = Duration::from_millis(10); // 10 ms at 10 Mbit/s = 8 segments
        assert_eq!(small.cwnd_allowance(true, bw, MSS), 8);
        let mut capped = AckAggregation::new(256, 5, Duration::from_millis(100));
        for _ in 0..40 {
            capped.update(t, 1, false, bw, MSS, 10);
        }
        assert_eq!(capped.extra_acked(), 10, "extra capped at cwnd");
    }

    #[test]
    fn the_max_is_forgotten_after_two_windows_of_rounds() {
        let bw = Bandwidth::from_mbps(10);
        let mut a = AckAggregation::new(256, 5, Duration::from_millis(100));
        let t = Time::from_secs(1);
        for _ in 0..20 {
            a.update(t, 1, false, bw, MSS, 100);
        }
        assert!(a.extra_acked() >= 19);
        // Smooth ACKs for 10 rounds: both windows roll over, the burst is forgotten.
        let step = bw.transmit_time(MSS);
        let mut now = t + Duration::from_millis(100);
        for i in 0..200 {
            now += step;
            a.update(now, 1, i % 20 == 0, bw, MSS, 100);
        }
        assert!(a.extra_acked() <= 1, "extra {}", a.extra_acked());
    }
}
