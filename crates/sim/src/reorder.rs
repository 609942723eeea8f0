//! Packet reordering on a link direction (mobile paths reorder: seed 000 §2.1 measures a ~1 %
//! reordering rate on publishers' uploads).
//!
//! Model (netem's `delay D reorder` turned around): each packet that survives the loss draw is,
//! with probability `p`, held back an extra `delay` after its normal arrival time, so packets sent
//! up to `delay` later overtake it. The receiver sees it out of order; the sender may see
//! duplicate ACKs or SACKs for the packets behind it and, if `delay` is long enough, retransmit
//! spuriously — as on a real path. Nothing else changes (the link is not blocked while the packet
//! is held, as a multipath radio link does not block its other paths).
//!
//! Deviation from netem: netem's `reorder` sends the chosen packets *immediately* and delays the
//! rest; here the chosen packets are the late ones, which keeps the base delay of the link equal
//! to its configured propagation delay for 1 − p of the packets. Each direction draws from its
//! own RNG stream (`engine::streams::REORDER_BASE` + channel index), so turning reordering on
//! never changes the loss pattern.

use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;

/// Reordering parameters as a scenario gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReorderSpec {
    /// Probability that a packet is held back.
    pub p: f64,
    /// How long a held-back packet is delayed beyond the link's normal arrival time.
    pub delay: Duration,
}

/// A reordering model with its own random stream.
#[derive(Clone, Debug)]
pub struct ReorderModel {
    spec: ReorderSpec,
    rng: Pcg64,
}

impl ReorderModel {
    pub fn new(spec: ReorderSpec, rng: Pcg64) -> Self {
        ReorderModel { spec, rng }
    }

    /// Extra delay of the next packet (zero for the packets that keep their order).
    #[inline]
    pub fn extra_delay(&mut self) -> Duration {
        if self.spec.p > 0.0 && self.rng.gen::<f64>() < self.spec.p {
            self.spec.delay
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    #[test]
    fn the_held_back_share_matches_the_probability_and_others_keep_their_time() {
        let mut m = ReorderModel::new(ReorderSpec { p: 0.05, delay: Duration::from_millis(30) }, sub_rng(3, 9));
        let n = 100_000;
        let mut held = 0;
        for _ in 0..n {
            let d = m.extra_delay();
            assert!(d == Duration::ZERO || d == Duration::from_millis(30));
            held += (d > Duration::ZERO) as usize;
        }
        let share = held as f64 / n as f64;
        assert!((share - 0.05).abs() < 0.004, "held-back share {share}");
    }

    #[test]
    fn zero_probability_never_reorders() {
        let mut m = ReorderModel::new(ReorderSpec { p: 0.0, delay: Duration::from_millis(30) }, sub_rng(3, 9));
        assert!((0..1000).all(|_| m.extra_delay() == Duration::ZERO));
    }
}
