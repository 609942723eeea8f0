//! Seed 004's throughput estimator: an exponentially weighted moving average of per-segment
//! throughput samples (the role of hls.js `ewma-bandwidth-estimator.ts`).
//!
//! Seed 004 §V: `b_s = α · b_{s−1} + (1 − α) · size_s / download_time_s`, "the weighted sum with
//! aging (α was 0.1)". Taken literally, α weights the *old* estimate, so with α = 0.1 the estimate
//! follows the newest sample closely ("known to follow the available bandwidth very closely",
//! same paragraph). The first sample initialises the estimate (the paper does not say; with no
//! previous estimate any other choice would invent one).
//!
//! Units: samples are bytes over a `Duration`; the estimate is a [`Bandwidth`]. The average is
//! kept in f64 bits per second and rounded only when read.

use std::time::Duration;

use crate::units::Bandwidth;

/// Seed 004's aging factor α (weight of the previous estimate).
pub const SEED004_ALPHA: f64 = 0.1;

/// EWMA of per-segment throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentEwma {
    /// Weight of the previous estimate, in [0, 1].
    alpha: f64,
    /// Current estimate in bits per second, `None` before the first sample.
    estimate_bps: Option<f64>,
}

impl SegmentEwma {
    pub fn new(alpha: f64) -> SegmentEwma {
        SegmentEwma {
            alpha: alpha.clamp(0.0, 1.0),
            estimate_bps: None,
        }
    }

    /// Seed 004's estimator (α = 0.1).
    pub fn seed004() -> SegmentEwma {
        SegmentEwma::new(SEED004_ALPHA)
    }

    /// Add the sample `bytes / download_time`; an empty interval is ignored (no rate to learn).
    pub fn on_sample(&mut self, bytes: u64, download_time: Duration) {
        if download_time.is_zero() {
            return;
        }
        let sample = bytes as f64 * 8.0 / download_time.as_secs_f64();
        self.estimate_bps = Some(match self.estimate_bps {
            None => sample,
            Some(prev) => self.alpha * prev + (1.0 - self.alpha) * sample,
        });
    }

    /// Current estimate, `None` before the first sample.
    pub fn estimate(&self) -> Option<Bandwidth> {
        self.estimate_bps
            .map(|b| Bandwidth::from_bps(b.round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_weights_the_previous_estimate_as_seed_004_writes_it() {
        let mut e = SegmentEwma::seed004();
        assert_eq!(e.estimate(), None);
        e.on_sample(125_000, Duration::from_secs(1)); // 1 Mbit/s
        assert_eq!(e.estimate(), Some(Bandwidth::from_bps(1_000_000)));
        e.on_sample(250_000, Duration::from_millis(500)); // 4 Mbit/s
                                                          // 0.1 × 1 + 0.9 × 4 = 3.7 Mbit/s
        assert_eq!(e.estimate(), Some(Bandwidth::from_bps(3_700_000)));
    }

    #[test]
    fn an_empty_interval_teaches_nothing() {
        let mut e = SegmentEwma::seed004();
        e.on_sample(1000, Duration::ZERO);
        assert_eq!(e.estimate(), None);
    }
}
