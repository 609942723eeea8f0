//! A radio access link whose latency fluctuates with cell load (ETHLE seed 002, §V-C and Fig. 6:
//! "when the small cell is loaded by 50 %, the RAN latency fluctuates between 20 ms and 180 ms").
//!
//! The process (our choice; the paper shows only the range): time is cut into scheduling epochs of
//! `epoch` (default 100 ms, a few LTE scheduling/HARQ cycles under competing iPerf load); in each
//! epoch the channel adds an extra one-way latency drawn uniformly from `[0, extra_max]` with the
//! run's seeded generator, independently of the other epochs. With the link's fixed propagation
//! delay of 10 ms each way and `extra_max` = 160 ms on the downlink, the RAN RTT a ping sees spans
//! 20–180 ms, Fig. 6's range. A packet's arrival is its serialisation end + fixed delay + the
//! extra of the epoch its last bit left in, and never earlier than the previous packet's arrival:
//! LTE's RLC delivers in order (acknowledged mode, in-sequence delivery, 3GPP TS 36.322 §5.1.2),
//! so a latency drop releases the packets held behind it together, and a latency jump opens a gap
//! in delivery — the slow, irregular ACK clock that hurts slow start over RAN + long backhaul.
//!
//! Deviations: the extra is i.i.d. per epoch (no correlation between epochs, no dependence on the
//! flow's own load); the uplink keeps a fixed delay. Draws come from the channel's own RNG stream,
//! one per epoch in time order, so the process does not depend on the traffic.

use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;

/// The latency process of one channel direction.
#[derive(Clone, Debug)]
pub struct RanLatency {
    /// Length of one scheduling epoch (latency is constant within it).
    epoch_ns: u64,
    /// Largest extra one-way latency (uniform in [0, extra_max]).
    extra_max_ns: u64,
    rng: Pcg64,
    /// Index of the epoch whose extra is in `extra_ns` (draws happen in epoch order).
    epoch_drawn: Option<u64>,
    extra_ns: u64,
    /// Arrival time of the previous packet (in-order delivery).
    last_arrival_ns: u64,
}

impl RanLatency {
    pub fn new(epoch: Duration, extra_max: Duration, rng: Pcg64) -> RanLatency {
        RanLatency {
            epoch_ns: (epoch.as_nanos() as u64).max(1),
            extra_max_ns: extra_max.as_nanos() as u64,
            rng,
            epoch_drawn: None,
            extra_ns: 0,
            last_arrival_ns: 0,
        }
    }

    /// Extra latency of the epoch containing `t_ns` (epochs are drawn in order; a channel's
    /// serialisation ends never go back in time).
    fn extra_at(&mut self, t_ns: u64) -> u64 {
        let epoch = t_ns / self.epoch_ns;
        while self.epoch_drawn.is_none_or(|e| e < epoch) {
            self.extra_ns = self.rng.gen_range(0..=self.extra_max_ns);
            self.epoch_drawn = Some(self.epoch_drawn.map_or(0, |e| e + 1));
        }
        self.extra_ns
    }

    /// Arrival time of a packet whose last bit left at `tx_end_ns` over a link of fixed `delay`.
    pub fn arrival(&mut self, tx_end_ns: u64, delay: Duration) -> u64 {
        let at = tx_end_ns + delay.as_nanos() as u64 + self.extra_at(tx_end_ns);
        let at = at.max(self.last_arrival_ns);
        self.last_arrival_ns = at;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn ran(seed: u64) -> RanLatency {
        RanLatency::new(Duration::from_millis(100), Duration::from_millis(160), Pcg64::seed_from_u64(seed))
    }

    #[test]
    fn latency_stays_within_the_fixed_delay_plus_the_largest_extra() {
        let mut r = ran(1);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for i in 0..20_000u64 {
            let t = i * 1_000_000; // one packet per ms for 20 s
            let lat = r.arrival(t, Duration::from_millis(10)) - t;
            lo = lo.min(lat);
            hi = hi.max(lat);
        }
        // in-order delivery can only add to a packet's latency, by at most one epoch's worth of
        // drop (160 ms); the spread must cover most of the 10..170 ms range.
        assert!(lo >= 10_000_000, "{lo}");
        assert!(hi <= 170_000_000 + 160_000_000, "{hi}");
        assert!(lo < 20_000_000 && hi > 160_000_000, "range {lo}..{hi} should span Fig 6's");
    }

    #[test]
    fn packets_are_delivered_in_order_even_when_latency_drops() {
        let mut r = ran(7);
        let mut last = 0;
        for i in 0..5000u64 {
            let a = r.arrival(i * 100_000, Duration::from_millis(10));
            assert!(a >= last);
            last = a;
        }
    }

    #[test]
    fn latency_is_constant_within_an_epoch_and_changes_between_epochs() {
        let mut r = ran(3);
        let a = r.arrival(1_000_000, Duration::ZERO) - 1_000_000;
        let b = r.arrival(2_000_000, Duration::ZERO) - 2_000_000;
        assert_eq!(a, b);
        let extras: Vec<u64> = (0..50u64).map(|k| r.extra_at(k * 100_000_000 + 50_000_000)).collect();
        let changes = extras.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(changes > 40, "{changes} of 49 epoch boundaries changed the latency");
    }

    #[test]
    fn the_same_seed_gives_the_same_latencies() {
        let (mut a, mut b) = (ran(11), ran(11));
        for i in 0..1000u64 {
            assert_eq!(a.arrival(i * 3_000_000, Duration::from_millis(10)), b.arrival(i * 3_000_000, Duration::from_millis(10)));
        }
    }
}
