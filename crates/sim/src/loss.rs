//! Random packet loss on a link direction: Bernoulli and Gilbert–Elliott.
//!
//! Bernoulli drops each packet independently with probability `p`. Gilbert–Elliott is the
//! two-state Markov model of bursty loss (Gilbert 1960, Elliott 1963) in the per-packet form used by
//! ns-3's `BurstErrorModel` and by netem's `loss gemodel p r 1-h 1-k`: the chain moves Good→Bad with
//! probability `p` and Bad→Good with probability `r` once per packet, then the packet is lost with
//! probability `1-k` in Good and `1-h` in Bad (here `loss_good`, `loss_bad`). The state transition
//! happens *before* the loss draw, as in netem. Each direction of each link draws from its own RNG
//! stream (engine::sub_rng), so the loss pattern of one link never depends on the rest of the run.
//!
//! Keyed (`model = "keyed"`, keyed_loss.rs) drops a TCP data segment iff a hash of the stream's
//! key, the connection, the relative sequence number and the how-many-th transmission of it is
//! under `p`·2^64: the same segments are lost in the simulator and through linkem whatever the
//! timing. It needs the packet ([`LossModel::lose_segment`]); [`LossModel::lose`] alone never
//! drops under it.

use rand::Rng;
use rand_pcg::Pcg64;

use crate::keyed_loss::{KeyedLoss, TcpSegment};

/// A loss model's parameters, as a scenario gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    /// Content-keyed: a data segment's fate is a function of (key, connection, sequence, n-th
    /// transmission); see keyed_loss.rs.
    Keyed {
        p: f64,
    },
}

/// A loss model with its state and its own random stream.
#[derive(Clone, Debug)]
pub struct LossModel {
    spec: LossSpec,
    bad: bool,
    rng: Pcg64,
    keyed: Option<KeyedLoss>,
}

impl LossModel {
    pub fn new(spec: LossSpec, mut rng: Pcg64) -> Self {
        // the keyed model's key is the stream's first value, so both runtimes derive the same
        // key from (seed, channel); the other models leave the stream untouched here
        let keyed = match spec {
            LossSpec::Keyed { p } => Some(KeyedLoss::new(p, rng.gen())),
            _ => None,
        };
        LossModel { spec, bad: false, rng, keyed }
    }

    /// Decide the fate of one packet given what it carries (`None`: not an IPv4/TCP packet):
    /// the keyed model reads the segment, the others ignore it and draw as [`LossModel::lose`].
    #[inline]
    pub fn lose_segment(&mut self, segment: Option<&TcpSegment>) -> bool {
        match (&mut self.keyed, segment) {
            (Some(k), Some(s)) => k.lose(s),
            (Some(_), None) => false,
            (None, _) => self.lose(),
        }
    }

    /// Decide the fate of one packet: true = lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        match self.spec {
            LossSpec::None | LossSpec::Keyed { .. } => false,
            LossSpec::Bernoulli { p } => p > 0.0 && self.rng.gen::<f64>() < p,
            LossSpec::GilbertElliott { p, r, loss_good, loss_bad } => {
                let u: f64 = self.rng.gen();
                if self.bad {
                    if u < r {
                        self.bad = false;
                    }
                } else if u < p {
                    self.bad = true;
                }
                let q = if self.bad { loss_bad } else { loss_good };
                q > 0.0 && self.rng.gen::<f64>() < q
            }
        }
    }

    /// True when a packet's fate depends on what it carries ([`LossModel::lose_segment`]).
    #[inline]
    pub fn is_keyed(&self) -> bool {
        self.keyed.is_some()
    }

    pub fn is_lossless(&self) -> bool {
        matches!(self.spec, LossSpec::None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    fn rate(spec: LossSpec, n: usize) -> (f64, f64) {
        let mut m = LossModel::new(spec, sub_rng(7, 1));
        let mut lost = 0;
        let mut runs = 0; // number of loss bursts
        let mut prev = false;
        for _ in 0..n {
            let l = m.lose();
            lost += l as usize;
            if l && !prev {
                runs += 1;
            }
            prev = l;
        }
        (lost as f64 / n as f64, lost as f64 / runs.max(1) as f64)
    }

    #[test]
    fn bernoulli_loses_about_p() {
        let (r, _) = rate(LossSpec::Bernoulli { p: 0.02 }, 200_000);
        assert!((r - 0.02).abs() < 0.002, "{r}");
    }

    #[test]
    fn gilbert_elliott_matches_stationary_rate_and_is_bursty() {
        // pi_bad = p / (p + r) = 0.01/(0.01+0.25) ≈ 0.0385; all packets in Bad are lost.
        let spec = LossSpec::GilbertElliott { p: 0.01, r: 0.25, loss_good: 0.0, loss_bad: 1.0 };
        let (r, burst) = rate(spec, 400_000);
        let expect = 0.01 / 0.26;
        assert!((r - expect).abs() < 0.004, "{r} vs {expect}");
        // Mean burst length 1/r = 4 packets; Bernoulli at the same rate gives ~1.04.
        assert!(burst > 3.0 && burst < 5.0, "{burst}");
    }

    #[test]
    fn no_loss_model_never_drops() {
        let (r, _) = rate(LossSpec::None, 10_000);
        assert_eq!(r, 0.0);
    }
}
