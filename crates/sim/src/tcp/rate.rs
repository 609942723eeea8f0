//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation, Linux net/ipv4/tcp_rate.c).
//!
//! Each transmitted segment records how much the connection had delivered, and when, at send time
//! ([`TxSnapshot`]). When the segment is delivered (cumulatively ACKed or SACKed), the rate over
//! the sampled interval is (delivered now − delivered then) / max(send interval, ACK interval).
//! The most recently sent delivered segment defines the sample. A sample whose interval is shorter
//! than min_rtt is discarded (ACK compression), as Linux does. Application-limited periods are
//! marked (`app_limited` = delivered count at which the app-limited bubble ends) so BBR can ignore
//! samples that underestimate the path. Bytes are used instead of Linux's packets.

use std::time::Duration;

use tcpvideo_model::cc::RateSample;
use tcpvideo_model::Time;

use super::scoreboard::{SegRec, TxSnapshot};

#[derive(Clone, Debug, Default)]
pub struct RateSampler {
    /// Total bytes delivered (cumulatively ACKed or SACKed) so far.
    pub delivered: u64,
    delivered_at: Time,
    first_tx_at: Time,
    /// Non-zero while application-limited: the `delivered` value at which that period ends.
    app_limited: u64,
    // Per-ACK accumulator.
    prior_delivered: Option<u64>,
    prior_at: Time,
    send_interval_ns: u64,
    sample_app_limited: bool,
}

impl RateSampler {
    /// Snapshot to store in a segment sent at `now`; `nothing_in_flight` restarts the intervals.
    pub fn on_send(&mut self, now: Time, nothing_in_flight: bool) -> TxSnapshot {
        if nothing_in_flight {
            self.first_tx_at = now;
            self.delivered_at = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_at: self.delivered_at,
            first_tx_at: self.first_tx_at,
            app_limited: self.app_limited != 0,
        }
    }

    /// A segment was delivered by the ACK being processed (call before [`Self::generate`]).
    pub fn on_delivered(&mut self, rec: &SegRec) {
        self.delivered += rec.len as u64;
        let newer = match self.prior_delivered {
            None => true,
            Some(p) => rec.tx.delivered >= p,
        };
        if newer {
            self.prior_delivered = Some(rec.tx.delivered);
            self.prior_at = rec.tx.delivered_at;
            self.sample_app_limited = rec.tx.app_limited;
            self.first_tx_at = rec.sent_at;
            self.send_interval_ns = rec.sent_at.as_nanos().saturating_sub(rec.tx.first_tx_at.as_nanos());
        }
    }

    /// End of ACK processing: produce a sample if this ACK delivered something and it is valid.
    /// `min_rtt_ns` as [`super::rtt::RttEstimator::min_rtt_ns`].
    pub fn generate(&mut self, now: Time, delivered_now: u64, newly_lost_bytes: u64, min_rtt_ns: Option<u64>) -> Option<RateSample> {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if delivered_now > 0 {
            self.delivered_at = now;
        }
        let prior = self.prior_delivered.take()?;
        let ack_interval = now.as_nanos().saturating_sub(self.prior_at.as_nanos());
        let interval = self.send_interval_ns.max(ack_interval);
        if interval == 0 || min_rtt_ns.is_some_and(|m| interval < m) {
            return None;
        }
        Some(RateSample {
            delivered_bytes: self.delivered - prior,
            interval: Duration::from_nanos(interval),
            prior_delivered_bytes: prior,
            is_app_limited: self.sample_app_limited,
            newly_lost_bytes,
        })
    }

    /// The application has nothing more to send and the window is not full (Linux
    /// `tcp_rate_check_app_limited`): mark the bubble.
    pub fn mark_app_limited(&mut self, in_flight_bytes: u64) {
        self.app_limited = (self.delivered + in_flight_bytes).max(1);
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(len: u32, sent_at: Time, tx: TxSnapshot) -> SegRec {
        SegRec::first_sent(1, len, sent_at, 0, tx)
    }

    #[test]
    fn delivery_rate_is_bytes_over_the_longer_of_send_and_ack_intervals() {
        let mut r = RateSampler::default();
        // 10 segments of 1000 B sent 1 ms apart starting at t=0, ACKed at 50 ms + 1 ms each.
        let mut recs = Vec::new();
        for k in 0..10u64 {
            let t = Time::from_millis(k);
            let tx = r.on_send(t, k == 0);
            recs.push(rec(1000, t, tx));
        }
        let mut last = None;
        for (k, s) in recs.iter().enumerate() {
            r.on_delivered(s);
            last = r.generate(Time::from_millis(50 + k as u64), 1000, 0, Some(40_000_000));
        }
        let s = last.unwrap();
        // The last sample covers segments delivered since the 10th was sent: delivered then = 0
        // (nothing ACKed before t=9 ms) → 10 000 B over max(9 ms, 59 ms).
        assert_eq!(s.delivered_bytes, 10_000);
        assert_eq!(s.interval, Duration::from_millis(59));
    }

    #[test]
    fn app_limited_mark_clears_after_the_bubble_is_delivered() {
        let mut r = RateSampler::default();
        r.mark_app_limited(2000);
        let tx = r.on_send(Time::ZERO, true);
        assert!(tx.app_limited);
        r.on_delivered(&rec(3000, Time::ZERO, tx));
        let s = r.generate(Time::from_millis(10), 3000, 0, None).unwrap();
        assert!(s.is_app_limited);
        assert!(!r.is_app_limited());
    }
}
