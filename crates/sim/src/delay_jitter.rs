//! Per-packet delay jitter on a link direction: each packet arrives a small random time later than
//! the link's model says, never before the packet ahead of it (issue 15, session 18).
//!
//! What it models: the timing noise a real path adds to every packet beyond its configured rate and
//! delay — on tcpvideo's emulated path (`tcpvideo emulate`: veth hops, the TUN read and write,
//! linkem's wake-up, softirq scheduling) of the order of tens of µs, measured by
//! `bench/linkem_owd.py` (bench/README.md, "Ensemble mode"). The simulator is otherwise exact to
//! the nanosecond, and a chaotic control law (CCP's) amplifies that difference: a fixed sub-ms
//! shift of the path's delay picks one of the law's basins, while per-packet noise averages over
//! them. This is the knob that gives the simulator the noise.
//!
//! The distribution (our choice, stated here): the extra delay of each packet is exponential with
//! mean `mean`, drawn independently per packet — a one-sided excess over the path's minimum, as
//! scheduling noise is (a packet can be woken late, never early). Order is preserved as on a FIFO
//! link: a packet that would overtake the one ahead of it on the same direction arrives with it
//! instead (`max(own arrival, previous arrival)`), so jitter delays packets and never reorders them
//! (reordering is `reorder`'s job). The sender's serialiser is not affected: the extra delay is
//! propagation, after the queue.
//!
//! Each direction draws from its own random stream (`engine::streams::JITTER_BASE` + the spec's
//! `seed` · 2^16 + channel index), one draw per packet admitted in arrival order, so turning jitter
//! on changes no loss, reordering or spike draw; `seed` lets an ensemble run the same scenario
//! (same keyed losses) with independent jitter.

use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;

/// Largest `seed` of a jitter spec: the stream index keeps it in 16 bits above the channel index.
pub const MAX_JITTER_SEED: u64 = (1 << 16) - 1;

/// Jitter parameters as a scenario gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayJitterSpec {
    /// Mean extra delay of a packet (exponential).
    pub mean: Duration,
    /// Selects the random stream (0…MAX_JITTER_SEED), apart from the scenario seed.
    pub seed: u64,
}

impl DelayJitterSpec {
    /// The stream index of channel `channel`'s jitter (engine::sub_rng).
    pub fn stream(&self, channel: u64) -> u64 {
        crate::engine::streams::JITTER_BASE + (self.seed << 16) + channel
    }
}

/// The jitter of one channel direction.
#[derive(Clone, Debug)]
pub struct DelayJitter {
    mean_ns: f64,
    rng: Pcg64,
    /// Arrival time of the previous packet (FIFO order).
    last_arrival_ns: u64,
}

impl DelayJitter {
    pub fn new(spec: DelayJitterSpec, rng: Pcg64) -> DelayJitter {
        DelayJitter { mean_ns: spec.mean.as_nanos() as f64, rng, last_arrival_ns: 0 }
    }

    /// Arrival time of a packet that would arrive at `arrival_ns` without jitter.
    pub fn arrival(&mut self, arrival_ns: u64) -> u64 {
        // 1 − U is in (0, 1], so the logarithm is finite.
        let u: f64 = self.rng.gen();
        let extra = (-(1.0 - u).ln() * self.mean_ns) as u64;
        let at = (arrival_ns + extra).max(self.last_arrival_ns);
        self.last_arrival_ns = at;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    fn jitter(mean_us: u64, seed: u64) -> DelayJitter {
        let spec = DelayJitterSpec { mean: Duration::from_micros(mean_us), seed };
        DelayJitter::new(spec, sub_rng(7, spec.stream(2)))
    }

    #[test]
    fn packets_never_overtake_the_one_ahead_and_never_arrive_early() {
        // Back-to-back packets 1 µs apart with a 50-µs mean jitter: most draws would reorder them.
        let mut j = jitter(50, 0);
        let mut last = 0;
        let mut held_back = 0;
        for i in 0..100_000u64 {
            let base = 1_000_000 + i * 1_000;
            let at = j.arrival(base);
            assert!(at >= base, "packet {i} arrived before its jitter-free time");
            assert!(at >= last, "packet {i} overtook the packet ahead of it");
            if at == last {
                held_back += 1;
            }
            last = at;
        }
        assert!(held_back > 10_000, "the order rule never acted ({held_back}): the test does not test it");
    }

    #[test]
    fn the_mean_extra_delay_is_the_configured_mean() {
        // Packets 1 ms apart (the order rule almost never acts at a 20-µs mean): 200 000 draws of
        // an exponential of mean 20 µs have a standard error of 20/√200 000 ≈ 0.045 µs.
        let mut j = jitter(20, 0);
        let n = 200_000u64;
        let mut extra = 0u128;
        let mut over_p90 = 0;
        for i in 0..n {
            let base = i * 1_000_000;
            let d = j.arrival(base) - base;
            extra += d as u128;
            if d as f64 > 20_000.0 * 10f64.ln() {
                over_p90 += 1;
            }
        }
        let mean_us = extra as f64 / n as f64 / 1e3;
        assert!((mean_us - 20.0).abs() < 0.3, "mean extra delay {mean_us:.3} µs, configured 20");
        let share = over_p90 as f64 / n as f64;
        assert!((share - 0.1).abs() < 0.005, "share above the exponential's p90 {share:.4}, expected 0.1");
    }

    #[test]
    fn another_seed_gives_other_draws_and_the_same_seed_the_same() {
        let draws = |seed| {
            let mut j = jitter(20, seed);
            (0..100u64).map(|i| j.arrival(i * 1_000_000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
