//! Windowed max filter: the best value seen over the last `window` time units, in O(1) memory.
//!
//! BBR's bottleneck-bandwidth estimate is the maximum delivery rate over the last 10 packet-timed
//! round trips (`bbr_bw_rtts` = CYCLE_LEN + 2 in Linux tcp_bbr.c). Linux keeps it with Kathleen
//! Nichols' algorithm (lib/minmax.c): three samples — the best, and the best of the second and
//! third quarters/halves of the window — so that when the best expires a good successor is at
//! hand without storing every sample. Time here is whatever monotonic counter the caller uses
//! (BBR passes its round-trip count). This is our own expression of that algorithm.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

#[derive(Clone, Debug, Default)]
pub struct WindowedMaxFilter {
    s: [Sample; 3],
}

impl WindowedMaxFilter {
    pub fn new() -> WindowedMaxFilter {
        WindowedMaxFilter::default()
    }

    /// Current maximum (0 before any sample).
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forget everything and start over with one sample.
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let x = Sample { t, v };
        self.s = [x; 3];
        v
    }

    /// Add measurement `v` taken at time `t` (non-decreasing) and return the windowed maximum.
    pub fn update(&mut self, window: u64, t: u64, v: u64) -> u64 {
        let x = Sample { t, v };
        // A new overall best, or nothing left in the window: start over.
        if v >= self.s[0].v || t.wrapping_sub(self.s[2].t) > window {
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[1] = x;
            self.s[2] = x;
        } else if v >= self.s[2].v {
            self.s[2] = x;
        }
        self.age(window, x)
    }

    /// Expire the best when it leaves the window; refresh the sub-window candidates.
    fn age(&mut self, window: u64, x: Sample) -> u64 {
        let dt = x.t.wrapping_sub(self.s[0].t);
        if dt > window {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = x;
            if x.t.wrapping_sub(self.s[0].t) > window {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = x;
            }
        } else if self.s[1].t == self.s[0].t && dt > window / 4 {
            // A quarter of the window passed without a second-best: take this one.
            self.s[1] = x;
            self.s[2] = x;
        } else if self.s[2].t == self.s[1].t && dt > window / 2 {
            self.s[2] = x;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_is_held_for_the_window_then_forgotten() {
        let mut f = WindowedMaxFilter::new();
        f.update(10, 0, 100);
        for t in 1..=10 {
            assert_eq!(f.update(10, t, 50), 100, "round {t}");
        }
        // Round 11: the 100 sample is 11 rounds old, outside a 10-round window.
        assert_eq!(f.update(10, 11, 50), 50);
    }

    #[test]
    fn a_larger_sample_replaces_the_max_immediately() {
        let mut f = WindowedMaxFilter::new();
        f.update(10, 0, 100);
        assert_eq!(f.update(10, 3, 120), 120);
    }

    #[test]
    fn second_best_takes_over_when_the_best_expires() {
        let mut f = WindowedMaxFilter::new();
        f.update(10, 0, 100);
        f.update(10, 4, 80); // second-best, in the second quarter
        for t in 5..=10 {
            f.update(10, t, 10);
        }
        // At t=11 the 100 expires; 80 (t=4) is still inside the window.
        assert_eq!(f.update(10, 11, 10), 80);
    }
}
