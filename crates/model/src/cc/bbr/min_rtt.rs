//! BBR v1's min-RTT estimate: the smallest RTT seen in the last 10 s (Linux `bbr_update_min_rtt`).
//!
//! Unlike the bandwidth filter this is a single value with a timestamp, as in Linux v1: a new
//! sample replaces it when it is lower, or unconditionally once the current value is older than
//! `min_rtt_win` (10 s, `bbr_min_rtt_win_sec`). The expiry is also what sends BBR into
//! PROBE_RTT. Linux refuses to refresh an expired value from a delayed-ACK sample
//! (`rs->is_ack_delayed`); our ACK events do not carry that flag, so every sample counts
//! (deviation: a delayed ACK may inflate min_rtt by up to the delayed-ACK timer after expiry).

use std::time::Duration;

use crate::units::Time;

#[derive(Clone, Debug)]
pub struct MinRtt {
    /// `None` until the first sample (Linux `~0U`).
    pub value: Option<Duration>,
    /// When `value` was taken (Linux `min_rtt_stamp`); `None` until the first event.
    pub stamp: Option<Time>,
    pub window: Duration,
}

impl MinRtt {
    pub fn new(window: Duration) -> MinRtt {
        MinRtt { value: None, stamp: None, window }
    }

    /// Linux initialises the stamp when the connection starts; our model has no clock at
    /// construction, so the first event does it.
    pub fn start(&mut self, now: Time) {
        if self.stamp.is_none() {
            self.stamp = Some(now);
        }
    }

    /// True once the estimate is older than the window (`probe_rtt_expired`).
    pub fn expired(&self, now: Time) -> bool {
        match self.stamp {
            Some(s) => now > s + self.window,
            None => false,
        }
    }

    /// Offer a sample; returns whether the estimate was expired before the sample.
    pub fn update(&mut self, now: Time, sample: Option<Duration>) -> bool {
        self.start(now);
        let expired = self.expired(now);
        if let Some(rtt) = sample {
            if !matches!(self.value, Some(v) if rtt >= v) || expired {
                self.value = Some(rtt);
                self.stamp = Some(now);
            }
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_sample_replaces_and_higher_is_ignored_within_the_window() {
        let mut m = MinRtt::new(Duration::from_secs(10));
        m.update(Time::from_secs(0), Some(Duration::from_millis(50)));
        m.update(Time::from_secs(1), Some(Duration::from_millis(70)));
        assert_eq!(m.value, Some(Duration::from_millis(50)));
        m.update(Time::from_secs(2), Some(Duration::from_millis(40)));
        assert_eq!(m.value, Some(Duration::from_millis(40)));
    }

    #[test]
    fn estimate_expires_after_ten_seconds_and_takes_any_sample() {
        let mut m = MinRtt::new(Duration::from_secs(10));
        m.update(Time::from_secs(0), Some(Duration::from_millis(50)));
        assert!(!m.expired(Time::from_secs(10)));
        assert!(m.expired(Time::from_millis(10_001)));
        m.update(Time::from_millis(10_001), Some(Duration::from_millis(80)));
        assert_eq!(m.value, Some(Duration::from_millis(80)));
    }
}
