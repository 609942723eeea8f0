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
//! Gilbert–Elliott in time (`model = "gilbert_elliott_time"`) is the same two-state channel with
//! its state held for a *time*, not a number of packets: Good and Bad last exponentially
//! distributed times (a continuous-time Markov chain; Bad a share `p` of the time, each Bad
//! period `mean_bad` on average), and a packet entering the wire at time t is lost with the loss
//! probability of the state at t. A fade or an outage of a radio link lasts a time whatever the
//! sender does, so a packet sent an RTT after a lost one is lost again when the Bad period
//! outlasts the RTT, and a sparse flow (a voice packet every 40 ms) loses every packet of a long
//! Bad period; the per-packet chain moves once per packet, so its Bad period shrinks to a
//! packet or two's serialization inside a burst and stretches across idle time. "Entering the
//! wire" is the start of the packet's transmission, after its wait in the link's queue
//! (network.rs `admit_on`). Simulator only (linkem has no
//! such model).
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
    /// Gilbert–Elliott in time: Bad a share `p` of the time in periods of `mean_bad_ns` on
    /// average (Good periods `mean_bad_ns`·(1−p)/p), both exponential.
    GilbertElliottTime {
        p: f64,
        mean_bad_ns: u64,
        loss_good: f64,
        loss_bad: f64,
    },
}

/// A loss model with its state and its own random stream.
#[derive(Clone, Debug)]
pub struct LossModel {
    spec: LossSpec,
    bad: bool,
    rng: Pcg64,
    keyed: Option<KeyedLoss>,
    /// Gilbert–Elliott in time: when the current state ends (ns).
    next_switch_ns: u64,
}

impl LossModel {
    pub fn new(spec: LossSpec, mut rng: Pcg64) -> Self {
        // the keyed model's key is the stream's first value, so both runtimes derive the same
        // key from (seed, channel); the other models leave the stream untouched here
        let keyed = match spec {
            LossSpec::Keyed { p } => Some(KeyedLoss::new(p, rng.gen())),
            _ => None,
        };
        let mut m = LossModel { spec, bad: false, rng, keyed, next_switch_ns: 0 };
        if let LossSpec::GilbertElliottTime { p, .. } = spec {
            // start in the stationary distribution; the sojourns are memoryless
            m.bad = m.rng.gen::<f64>() < p;
            m.next_switch_ns = m.sojourn_ns();
        }
        m
    }

    /// An exponential sojourn in the current state of the time model (ns, at least 1).
    fn sojourn_ns(&mut self) -> u64 {
        let LossSpec::GilbertElliottTime { p, mean_bad_ns, .. } = self.spec else { return u64::MAX };
        let mean = if self.bad {
            mean_bad_ns as f64
        } else if p > 0.0 {
            mean_bad_ns as f64 * (1.0 - p) / p
        } else {
            return u64::MAX;
        };
        let u: f64 = self.rng.gen();
        ((-mean * (1.0 - u).ln()).round() as u64).max(1)
    }

    /// Decide the fate of one packet entering the wire at `now_ns` given what it carries: the
    /// time model reads the clock, the others ignore it and draw as [`LossModel::lose_segment`].
    #[inline]
    pub fn lose_segment_at(&mut self, now_ns: u64, segment: Option<&TcpSegment>) -> bool {
        match self.spec {
            LossSpec::GilbertElliottTime { p, loss_good, loss_bad, .. } => {
                if p <= 0.0 && loss_good <= 0.0 {
                    return false;
                }
                while now_ns >= self.next_switch_ns {
                    self.bad = !self.bad;
                    let d = self.sojourn_ns();
                    self.next_switch_ns = self.next_switch_ns.saturating_add(d);
                }
                let q = if self.bad { loss_bad } else { loss_good };
                q > 0.0 && self.rng.gen::<f64>() < q
            }
            _ => self.lose_segment(segment),
        }
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
            // the time model needs the clock (lose_segment_at); without it nothing is lost
            LossSpec::None | LossSpec::Keyed { .. } | LossSpec::GilbertElliottTime { .. } => false,
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

    /// Packets every `gap_ns` through the time model: (loss rate, mean run of consecutive losses,
    /// share of packets lost `lag_ns` after a lost one).
    fn time_rate(spec: LossSpec, gap_ns: u64, lag_ns: u64, n: u64) -> (f64, f64, f64) {
        let mut m = LossModel::new(spec, sub_rng(7, 1));
        let lost: Vec<bool> = (0..n).map(|i| m.lose_segment_at(i * gap_ns, None)).collect();
        let total = lost.iter().filter(|&&l| l).count();
        let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count() + lost[0] as usize;
        let k = (lag_ns / gap_ns) as usize;
        let (mut after, mut again) = (0, 0);
        for i in 0..lost.len() - k {
            if lost[i] {
                after += 1;
                again += lost[i + k] as usize;
            }
        }
        (total as f64 / n as f64, total as f64 / runs.max(1) as f64, again as f64 / after.max(1) as f64)
    }

    #[test]
    fn gilbert_elliott_in_time_holds_its_state_for_a_time_not_a_packet_count() {
        // Bad 1 % of the time in 100-ms periods. Packets every 1 ms: runs of ~100 losses, and a
        // packet 50 ms after a lost one is lost again about exp(-50/100) ≈ 61 % of the time.
        let spec = LossSpec::GilbertElliottTime { p: 0.01, mean_bad_ns: 100_000_000, loss_good: 0.0, loss_bad: 1.0 };
        let (r, run, again) = time_rate(spec, 1_000_000, 50_000_000, 20_000_000);
        assert!((r - 0.01).abs() < 0.002, "{r}");
        assert!(run > 80.0 && run < 120.0, "{run}");
        assert!((again - (-0.5f64).exp()).abs() < 0.05, "{again}");
        // Packets every 40 ms (a voice flow): the same Bad periods lose ~2.5 in a row, not 100.
        let (r, run, _) = time_rate(spec, 40_000_000, 40_000_000, 2_000_000);
        assert!((r - 0.01).abs() < 0.002, "{r}");
        assert!(run > 1.8 && run < 3.2, "{run}");
        // The per-packet chain with the same 100-packet bursts at 1 ms would lose its packet 50
        // ms later too, but its run length does not depend on the spacing: contrast above.
        let pk = LossSpec::GilbertElliott { p: 0.01 / 0.99 / 100.0, r: 0.01, loss_good: 0.0, loss_bad: 1.0 };
        let (_, run_pk, _) = time_rate(pk, 40_000_000, 40_000_000, 2_000_000);
        assert!(run_pk > 80.0, "{run_pk}");
    }

    #[test]
    fn no_loss_model_never_drops() {
        let (r, _) = rate(LossSpec::None, 10_000);
        assert_eq!(r, 0.0);
    }
}
