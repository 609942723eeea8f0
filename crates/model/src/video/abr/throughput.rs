//! Seed 004's throughput rule (Kupka, Halvorsen, Griwodz, §V), "very similar to the strategy used
//! by Adobe's HTTP Dynamic Streaming":
//!
//! 1. the first segment is downloaded in the lowest quality "to ensure a fast startup";
//! 2. after each download the bandwidth estimate is updated with the EWMA of
//!    [`super::estimator::SegmentEwma`] (α = 0.1 on the previous estimate);
//! 3. "the strategy finds the sizes of the next segment using a HTTP HEAD request and chooses to
//!    download the segment in the highest bitrate (quality) possible so that the estimated download
//!    time does not exceed one segment duration": the highest `q` with
//!    `size(q) · 8 / estimate ≤ d`.
//!
//! The rule asks the player for the sizes ([`AbrRule::wants_segment_sizes`]); when the player
//! did not probe them it falls back to the nominal `bitrate(q) · d / 8`. When not even the lowest
//! quality fits, it takes the lowest (the paper has no other choice to make).
//!
//! Parameters: `alpha` (weight of the previous estimate, default 0.1 per seed 004); `head`
//! (1 = probe sizes with HEAD as seed 004, 0 = use nominal sizes).

use std::time::Duration;

use super::estimator::{SegmentEwma, SEED004_ALPHA};
use super::{
    AbrContext, AbrInfo, AbrRule, AbrSetup, DownloadSample, ParamInfo, Params, SwitchReason,
    SwitchRequest,
};
use crate::units::Bandwidth;
use crate::video::error::VideoError;

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "alpha",
        default: SEED004_ALPHA,
        unit: "",
        doc: "EWMA weight of the previous estimate (seed 004: 0.1)",
    },
    ParamInfo {
        name: "head",
        default: 1.0,
        unit: "bool",
        doc: "1: HEAD per segment for its sizes (seed 004); 0: nominal sizes",
    },
];

pub const INFO: AbrInfo = AbrInfo {
    name: "throughput",
    summary: "seed 004: EWMA throughput, highest quality whose download fits one segment duration",
    reference: "Kupka, Halvorsen, Griwodz 2012 (seed 004) §V",
    params: PARAMS,
    build: |_setup: &AbrSetup, p: &Params| {
        let alpha = p.get(&PARAMS[0]);
        if !(0.0..=1.0).contains(&alpha) {
            return Err(VideoError::invalid(
                "abr_params.alpha",
                format!("must be in [0, 1], got {alpha}"),
            ));
        }
        Ok(Box::new(ThroughputRule::new(
            alpha,
            p.get(&PARAMS[1]) != 0.0,
        )))
    },
};

/// Seed 004's rule with its own estimator.
#[derive(Clone, Debug)]
pub struct ThroughputRule {
    estimator: SegmentEwma,
    probe_sizes: bool,
}

impl ThroughputRule {
    pub fn new(alpha: f64, probe_sizes: bool) -> ThroughputRule {
        ThroughputRule {
            estimator: SegmentEwma::new(alpha),
            probe_sizes,
        }
    }

    /// Seed 004 as published: α = 0.1, HEAD per segment.
    pub fn seed004() -> ThroughputRule {
        ThroughputRule::new(SEED004_ALPHA, true)
    }

    pub fn estimate(&self) -> Option<Bandwidth> {
        self.estimator.estimate()
    }
}

impl AbrRule for ThroughputRule {
    fn name(&self) -> &'static str {
        "throughput"
    }

    fn decide(&mut self, ctx: &AbrContext) -> SwitchRequest {
        if ctx.segments_downloaded == 0 {
            return SwitchRequest::new(0, SwitchReason::FirstSegmentLowest);
        }
        let Some(estimate) = self.estimator.estimate() else {
            return SwitchRequest::new(0, SwitchReason::NoEstimate);
        };
        let size = |q: usize| match ctx.segment_sizes {
            Some(sizes) if q < sizes.len() => sizes[q],
            _ => ctx.ladder.bitrate(q).bytes_in(ctx.segment_duration),
        };
        let fits = |q: usize| -> Option<Duration> {
            let t = estimate.transmit_time(size(q));
            (t <= ctx.segment_duration).then_some(t)
        };
        for q in (0..ctx.ladder.len()).rev() {
            if let Some(download_time) = fits(q) {
                return SwitchRequest::new(
                    q,
                    SwitchReason::ThroughputFits {
                        estimate,
                        download_time,
                    },
                );
            }
        }
        SwitchRequest::new(0, SwitchReason::NothingFits { estimate })
    }

    fn on_download(&mut self, sample: &DownloadSample) {
        self.estimator
            .on_sample(sample.bytes, sample.download_time());
    }

    fn wants_segment_sizes(&self) -> bool {
        self.probe_sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;
    use crate::video::abr::testing::ctx;
    use crate::video::content::Ladder;

    fn done(rule: &mut ThroughputRule, start_s: f64, secs: f64, bytes: u64, quality: usize) {
        let requested = Time::from_nanos((start_s * 1e9) as u64);
        let done = Time::from_nanos(((start_s + secs) * 1e9) as u64);
        rule.on_download(&DownloadSample {
            requested,
            done,
            bytes,
            quality,
            buffer_level: Duration::ZERO,
        });
    }

    /// Scripted downloads, ladder 250/500/750/1000/1500/3000 kbit/s, d = 2 s, α = 0.1:
    ///
    /// - segment 0: first segment → q0. It takes 62 500 B in 0.25 s = 2 Mbit/s; estimate 2 Mbit/s.
    /// - segment 1, HEAD sizes 60 000/130 000/190 000/245 000/380 000/760 000 B: download times
    ///   at 2 Mbit/s are 0.24/0.52/0.76/0.98/1.52/3.04 s → q4 (1.52 s ≤ 2 s; q5's 3.04 s does not fit).
    ///   It takes 380 000 B in 2.0 s = 1.52 Mbit/s; estimate 0.1·2 + 0.9·1.52 = 1.568 Mbit/s.
    /// - segment 2, HEAD sizes 62 500/125 000/187 500/250 000/400 000/800 000 B: q4 needs
    ///   3.2 Mbit / 1.568 Mbit/s = 2.041 s > 2 s, q3 needs 2 / 1.568 = 1.276 s → q3 (with nominal
    ///   sizes q4 = 375 000 B would fit at 1.913 s: the HEAD matters). It takes 250 000 B in 0.5 s
    ///   = 4 Mbit/s; estimate 0.1·1.568 + 0.9·4 = 3.7568 Mbit/s.
    /// - segment 3, no HEAD (nominal sizes): q5 = 750 000 B needs 6 / 3.7568 = 1.597 s → q5.
    #[test]
    fn picks_the_hand_computed_quality_on_a_scripted_download_sequence() {
        let ladder = Ladder::seed004();
        let target = Duration::from_secs(2);
        let mut rule = ThroughputRule::seed004();
        assert!(rule.wants_segment_sizes());

        let c0 = ctx(&ladder, 0, Duration::ZERO, target, None, None);
        assert_eq!(rule.decide(&c0).quality, 0);
        done(&mut rule, 0.0, 0.25, 62_500, 0);
        assert_eq!(rule.estimate(), Some(Bandwidth::from_bps(2_000_000)));

        let sizes1 = [60_000, 130_000, 190_000, 245_000, 380_000, 760_000];
        let c1 = AbrContext {
            segment_sizes: Some(&sizes1),
            ..ctx(&ladder, 1, Duration::from_secs(2), target, None, Some(0))
        };
        assert_eq!(rule.decide(&c1).quality, 4);
        done(&mut rule, 2.0, 2.0, 380_000, 4);
        assert_eq!(rule.estimate(), Some(Bandwidth::from_bps(1_568_000)));

        let sizes2 = [62_500, 125_000, 187_500, 250_000, 400_000, 800_000];
        let c2 = AbrContext {
            segment_sizes: Some(&sizes2),
            ..ctx(&ladder, 2, Duration::from_secs(2), target, None, Some(4))
        };
        let d2 = rule.decide(&c2);
        assert_eq!(d2.quality, 3, "{}", d2.reason);
        done(&mut rule, 4.0, 0.5, 250_000, 3);
        assert_eq!(rule.estimate(), Some(Bandwidth::from_bps(3_756_800)));

        let c3 = ctx(&ladder, 3, Duration::from_secs(2), target, None, Some(3));
        assert_eq!(rule.decide(&c3).quality, 5);
    }

    #[test]
    fn when_nothing_fits_the_lowest_quality_is_taken() {
        let ladder = Ladder::seed004();
        let mut rule = ThroughputRule::seed004();
        done(&mut rule, 0.0, 4.0, 62_500, 0); // 125 kbit/s: even 250 kbit/s takes 4 s
        let d = rule.decide(&ctx(
            &ladder,
            1,
            Duration::ZERO,
            Duration::from_secs(2),
            None,
            Some(0),
        ));
        assert_eq!(
            (
                d.quality,
                matches!(d.reason, SwitchReason::NothingFits { .. })
            ),
            (0, true)
        );
    }
}
