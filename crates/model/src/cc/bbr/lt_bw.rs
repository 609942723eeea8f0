//! Long-term ("lt") bandwidth: detecting a token-bucket policer (Linux `bbr_lt_bw_sampling`,
//! `bbr_lt_bw_interval_done`, `bbr_reset_lt_bw_sampling`).
//!
//! A policer lets bursts through at line rate and then drops everything above its token rate, so
//! the max filter overestimates and BBR keeps losing ~policer-excess. Linux samples delivery over
//! intervals of 4–16 rounds that start and end with loss; if two consecutive intervals show a high
//! loss rate (≥ 50/256 ≈ 20 %) and consistent throughput (within 1/8 or 4 kbit/s), BBR uses their
//! average as its bandwidth (`lt_use_bw`) with pacing gain 1 for 48 rounds, then re-probes.
//!
//! Parameters (Linux defaults): interval ≥ 4 rounds (`bbr_lt_intvl_min_rtts`), loss threshold
//! 50/256, ratio 1/8 (`bbr_lt_bw_ratio`), absolute diff 4000/8 bytes/s (`bbr_lt_bw_diff`),
//! 48 rounds of use (`bbr_lt_bw_max_rtts`).

use std::time::Duration;

use crate::units::{Bandwidth, Time};

const LT_INTVL_MIN_RTTS: u64 = 4;
const LT_LOSS_THRESH: u64 = 50; // /256
const LT_BW_RATIO: u64 = 32; // UNIT/8
const LT_BW_DIFF_BYTES_PER_SEC: u64 = 4000 / 8;
pub const LT_BW_MAX_RTTS: u64 = 48;

#[derive(Clone, Debug, Default)]
pub struct LtBw {
    pub enabled: bool,
    pub is_sampling: bool,
    pub use_bw: bool,
    pub bw: Bandwidth,
    pub rtt_cnt: u64,
    last_stamp: Time,
    last_delivered: u64,
    last_lost: u64,
}

/// What one ACK tells the sampler.
pub struct LtInput {
    pub now: Time,
    pub round_start: bool,
    pub losses: bool,
    pub app_limited: bool,
    pub delivered_total: u64,
    pub lost_total: u64,
}

/// What the sampler asks BBR to do.
#[derive(Debug, PartialEq, Eq)]
pub enum LtAction {
    None,
    /// The lt estimate was just adopted: pacing gain must drop to 1.
    StartedUsing,
    /// 48 rounds of lt use in PROBE_BW: forget it and restart PROBE_BW (re-probe).
    StopAndReprobe,
}

impl LtBw {
    pub fn new(enabled: bool) -> LtBw {
        LtBw { enabled, ..Default::default() }
    }

    fn reset_interval(&mut self, now: Time, delivered: u64, lost: u64) {
        // Linux keeps the stamp in milliseconds.
        self.last_stamp = Time::from_millis(now.as_nanos() / 1_000_000);
        self.last_delivered = delivered;
        self.last_lost = lost;
        self.rtt_cnt = 0;
    }

    pub fn reset(&mut self, now: Time, delivered: u64, lost: u64) {
        self.bw = Bandwidth::ZERO;
        self.use_bw = false;
        self.is_sampling = false;
        self.reset_interval(now, delivered, lost);
    }

    pub fn on_ack(&mut self, x: &LtInput, in_probe_bw: bool) -> LtAction {
        if !self.enabled {
            return LtAction::None;
        }
        if self.use_bw {
            if in_probe_bw && x.round_start {
                self.rtt_cnt += 1;
                if self.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset(x.now, x.delivered_total, x.lost_total);
                    return LtAction::StopAndReprobe;
                }
            }
            return LtAction::None;
        }
        // Intervals start at a loss, to catch the policer's token bucket empty.
        if !self.is_sampling {
            if !x.losses {
                return LtAction::None;
            }
            self.reset_interval(x.now, x.delivered_total, x.lost_total);
            self.is_sampling = true;
        }
        // Application-limited data says nothing about a policer.
        if x.app_limited {
            self.reset(x.now, x.delivered_total, x.lost_total);
            return LtAction::None;
        }
        if x.round_start {
            self.rtt_cnt += 1;
        }
        if self.rtt_cnt < LT_INTVL_MIN_RTTS {
            return LtAction::None;
        }
        if self.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset(x.now, x.delivered_total, x.lost_total);
            return LtAction::None;
        }
        // Intervals end at a loss too.
        if !x.losses {
            return LtAction::None;
        }
        let lost = x.lost_total - self.last_lost;
        let delivered = x.delivered_total - self.last_delivered;
        if delivered == 0 || lost * 256 < LT_LOSS_THRESH * delivered {
            return LtAction::None;
        }
        let now_ms = x.now.as_nanos() / 1_000_000;
        let t_ms = now_ms.saturating_sub(self.last_stamp.as_nanos() / 1_000_000);
        if t_ms < 1 {
            return LtAction::None;
        }
        let bw = Bandwidth::from_bytes_per(delivered, Duration::from_millis(t_ms));
        self.interval_done(bw, x)
    }

    fn interval_done(&mut self, bw: Bandwidth, x: &LtInput) -> LtAction {
        if self.bw.bits_per_sec > 0 {
            let diff = bw.bits_per_sec.abs_diff(self.bw.bits_per_sec);
            if diff as u128 * 256 <= LT_BW_RATIO as u128 * self.bw.bits_per_sec as u128 || diff / 8 <= LT_BW_DIFF_BYTES_PER_SEC {
                self.bw = Bandwidth::from_bps((bw.bits_per_sec + self.bw.bits_per_sec) / 2);
                self.use_bw = true;
                self.rtt_cnt = 0;
                return LtAction::StartedUsing;
            }
        }
        self.bw = bw;
        self.reset_interval(x.now, x.delivered_total, x.lost_total);
        LtAction::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive a policed flow: 1 MB/s delivered, 25 % lost, a loss on every ACK, rounds of 10 ms.
    #[test]
    fn two_consistent_lossy_intervals_adopt_the_policed_rate() {
        let mut lt = LtBw::new(true);
        let (mut delivered, mut lost) = (0u64, 0u64);
        let mut adopted_at = None;
        for ms in 1..=200u64 {
            delivered += 1000; // 1 MB/s
            lost += 250;
            let x = LtInput {
                now: Time::from_millis(ms),
                round_start: ms % 10 == 0,
                losses: true,
                app_limited: false,
                delivered_total: delivered,
                lost_total: lost,
            };
            if lt.on_ack(&x, true) == LtAction::StartedUsing {
                adopted_at = Some(ms);
                break;
            }
        }
        assert!(adopted_at.is_some(), "policer never detected");
        assert!(lt.use_bw);
        let mbps = lt.bw.as_mbps_f64();
        assert!((mbps - 8.0).abs() < 0.5, "lt_bw {mbps} Mbit/s, policed at 8");
    }

    #[test]
    fn low_loss_never_triggers_policer_detection() {
        let mut lt = LtBw::new(true);
        let (mut delivered, mut lost) = (0u64, 0u64);
        for ms in 1..=500u64 {
            delivered += 1000;
            lost += 10; // 1 %
            let x = LtInput {
                now: Time::from_millis(ms),
                round_start: ms % 10 == 0,
                losses: true,
                app_limited: false,
                delivered_total: delivered,
                lost_total: lost,
            };
            assert_eq!(lt.on_ack(&x, true), LtAction::None);
        }
        assert!(!lt.use_bw);
    }
}
