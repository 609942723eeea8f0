//! STARTUP and DRAIN: finding and leaving a full pipe (Linux `bbr_check_full_bw_reached`,
//! `bbr_check_drain`).
//!
//! STARTUP paces and sizes cwnd at 2/ln2 ≈ 2.885 × the estimate, the smallest gain that still
//! doubles the delivery rate each round. The pipe is "full" once three consecutive rounds fail to
//! raise the max-bandwidth estimate by 25 % (application-limited rounds do not count). DRAIN then
//! paces at ln2/2 (the inverse gain) until what is in flight fits one BDP, and PROBE_BW begins.

use crate::units::Bandwidth;

#[derive(Clone, Debug)]
pub struct FullPipe {
    /// Bandwidth at the last 25 % step (Linux `full_bw`).
    pub full_bw: Bandwidth,
    /// Rounds without such a step (Linux `full_bw_cnt`).
    pub count: u64,
    /// Linux `full_bw_reached`.
    pub reached: bool,
    /// Growth that counts as "still growing" (1.25).
    pub thresh: f64,
    /// Rounds without growth that declare the pipe full (3).
    pub rounds: u64,
}

impl FullPipe {
    pub fn new(thresh: f64, rounds: u64) -> FullPipe {
        FullPipe { full_bw: Bandwidth::ZERO, count: 0, reached: false, thresh, rounds }
    }

    /// Once per round, on a non-app-limited ACK, with the current max-filter bandwidth.
    pub fn check(&mut self, round_start: bool, app_limited: bool, max_bw: Bandwidth) {
        if self.reached || !round_start || app_limited {
            return;
        }
        // Linux: bw_thresh = full_bw * bbr_full_bw_thresh >> BBR_SCALE (fixed point 320/256).
        let thresh_unit = super::pacing::gain_to_unit(self.thresh) as u128;
        let bw_thresh = (self.full_bw.bits_per_sec as u128 * thresh_unit / super::pacing::UNIT as u128) as u64;
        if max_bw.bits_per_sec >= bw_thresh {
            self.full_bw = max_bw;
            self.count = 0;
            return;
        }
        self.count += 1;
        self.reached = self.count >= self.rounds;
    }

    /// Linux `bbr_undo_cwnd` and `bbr_set_state(TCP_CA_Loss)` forget the plateau detection.
    pub fn reset_detection(&mut self) {
        self.full_bw = Bandwidth::ZERO;
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_rounds_without_25_percent_growth_fill_the_pipe() {
        let mut f = FullPipe::new(1.25, 3);
        f.check(true, false, Bandwidth::from_mbps(10));
        f.check(true, false, Bandwidth::from_mbps(20));
        f.check(true, false, Bandwidth::from_mbps(24)); // +20 %: not growth
        f.check(true, false, Bandwidth::from_mbps(24));
        assert!(!f.reached);
        f.check(true, false, Bandwidth::from_mbps(24));
        assert!(f.reached);
    }

    #[test]
    fn app_limited_rounds_and_mid_round_acks_do_not_count() {
        let mut f = FullPipe::new(1.25, 3);
        f.check(true, false, Bandwidth::from_mbps(10));
        for _ in 0..5 {
            f.check(true, true, Bandwidth::from_mbps(10));
            f.check(false, false, Bandwidth::from_mbps(10));
        }
        assert!(!f.reached);
        assert_eq!(f.count, 0);
    }
}
