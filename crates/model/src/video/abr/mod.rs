//! Adaptive bitrate (ABR): one trait, one file per rule, one registry.
//!
//! The layout follows dash.js (`src/streaming/rules/abr/`: each rule a small unit fed a rules
//! context, returning a `SwitchRequest`) and hls.js (the bandwidth estimator in its own file,
//! `ewma-bandwidth-estimator.ts`). A rule sees plain data — buffer level as a duration, the
//! throughput estimate as a rate, the ladder, the next segment's sizes when a HEAD fetched them —
//! and answers a quality with a reason. Rules learn through timestamped calls from the player
//! ([`AbrRule::on_download`], [`AbrRule::on_stall`]), not through an event bus, so a simulator app
//! and a real player run the same code.
//!
//! Where to look: [`throughput`] (seed 004's rule), [`bba`] (Huang et al. 2014), [`bola`]
//! (dash.js BolaRule), [`fixed`]; [`estimator`] (seed 004's EWMA). Rules register in
//! [`ABR_RULES`] with their parameters (same shape as `cc::ALGORITHMS`), which is what a scenario's
//! `abr = "..."` and `abr_params = {...}` select.

use std::fmt;
use std::time::Duration;

pub use crate::cc::{ParamInfo, Params};
use crate::units::{Bandwidth, Time};

use super::content::Ladder;
use super::error::VideoError;

pub mod bba;
pub mod bola;
pub mod estimator;
pub mod fixed;
pub mod throughput;

/// Everything a rule may look at for one decision. Plain data, borrowed from the player.
#[derive(Clone, Copy, Debug)]
pub struct AbrContext<'a> {
    /// When the decision is taken.
    pub now: Time,
    /// Index of the segment about to be requested.
    pub segment: u64,
    /// How many segments this player has already downloaded (0 for its first request).
    pub segments_downloaded: u64,
    /// The representations.
    pub ladder: &'a Ladder,
    /// Media duration of one segment.
    pub segment_duration: Duration,
    /// Media buffered and not yet played.
    pub buffer_level: Duration,
    /// The player's buffer target (segments × duration): it fetches while below it.
    pub buffer_target: Duration,
    /// The throughput estimate (seed 004 EWMA), `None` before the first download finished.
    pub throughput: Option<Bandwidth>,
    /// Quality of the previous segment, `None` for the first request.
    pub last_quality: Option<usize>,
    /// Sizes of `segment` in every quality (bytes), when the player probed them with HEAD.
    pub segment_sizes: Option<&'a [u64]>,
}

/// Why a rule chose its quality (for the per-segment table and for debugging a decision).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SwitchReason {
    /// First segment: lowest quality for a fast start (seed 004 §V).
    FirstSegmentLowest,
    /// No throughput estimate yet: lowest quality.
    NoEstimate,
    /// Highest quality whose estimated download time fits one segment duration.
    ThroughputFits {
        estimate: Bandwidth,
        download_time: Duration,
    },
    /// Not even the lowest quality fits; the lowest is taken anyway.
    NothingFits { estimate: Bandwidth },
    /// BBA: buffer at or below the reservoir.
    BufferReservoir { buffer: Duration },
    /// BBA: buffer in the cushion; `map_rate` is f(B).
    BufferCushion {
        buffer: Duration,
        map_rate: Bandwidth,
    },
    /// BBA: buffer above reservoir + cushion.
    BufferFull { buffer: Duration },
    /// BOLA startup (dash.js BOLA_STATE_STARTUP): throughput-based pick.
    BolaStartup { safe_throughput: Bandwidth },
    /// BOLA steady state: argmax of the BOLA score at buffer + placeholder.
    BolaScore { effective_buffer: Duration },
    /// BOLA-O: an increase beyond the sustainable throughput was held back.
    BolaOscillationGuard { effective_buffer: Duration },
    /// A fixed quality.
    Fixed,
}

impl fmt::Display for SwitchReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchReason::FirstSegmentLowest => write!(f, "first segment at the lowest quality"),
            SwitchReason::NoEstimate => write!(f, "no throughput estimate yet"),
            SwitchReason::ThroughputFits {
                estimate,
                download_time,
            } => {
                write!(
                    f,
                    "fits: {:.3} s at {estimate}",
                    download_time.as_secs_f64()
                )
            }
            SwitchReason::NothingFits { estimate } => write!(f, "nothing fits at {estimate}"),
            SwitchReason::BufferReservoir { buffer } => {
                write!(f, "reservoir (buffer {:.3} s)", buffer.as_secs_f64())
            }
            SwitchReason::BufferCushion { buffer, map_rate } => {
                write!(
                    f,
                    "cushion (buffer {:.3} s, f(B) = {map_rate})",
                    buffer.as_secs_f64()
                )
            }
            SwitchReason::BufferFull { buffer } => {
                write!(f, "upper reservoir (buffer {:.3} s)", buffer.as_secs_f64())
            }
            SwitchReason::BolaStartup { safe_throughput } => {
                write!(f, "BOLA startup at {safe_throughput}")
            }
            SwitchReason::BolaScore { effective_buffer } => {
                write!(f, "BOLA score at {:.3} s", effective_buffer.as_secs_f64())
            }
            SwitchReason::BolaOscillationGuard { effective_buffer } => {
                write!(
                    f,
                    "BOLA-O held back at {:.3} s",
                    effective_buffer.as_secs_f64()
                )
            }
            SwitchReason::Fixed => write!(f, "fixed quality"),
        }
    }
}

/// A rule's answer (dash.js `SwitchRequest`): the quality and why, plus an optional pause before
/// the request (BOLA's "do not overfill the buffer with low quality", dash.js
/// `setTimeToLoadDelay`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwitchRequest {
    pub quality: usize,
    pub reason: SwitchReason,
    /// Wait this long before sending the request (zero for every rule but BOLA).
    pub delay: Duration,
}

impl SwitchRequest {
    pub fn new(quality: usize, reason: SwitchReason) -> SwitchRequest {
        SwitchRequest {
            quality,
            reason,
            delay: Duration::ZERO,
        }
    }
}

/// One finished segment download, as rules learn it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DownloadSample {
    /// When the request was sent.
    pub requested: Time,
    /// When the last byte arrived.
    pub done: Time,
    pub bytes: u64,
    pub quality: usize,
    /// Media buffered when the last byte arrived, before this segment joins the buffer (what
    /// dash.js's BOLA reads at MEDIA_FRAGMENT_LOADED).
    pub buffer_level: Duration,
}

impl DownloadSample {
    /// Request to last byte (seed 004's download time; dash.js measures the same span).
    pub fn download_time(&self) -> Duration {
        self.done.saturating_since(self.requested)
    }
}

/// The ABR callback table.
pub trait AbrRule: Send {
    /// Registered name.
    fn name(&self) -> &'static str;
    /// Choose the quality of `ctx.segment`.
    fn decide(&mut self, ctx: &AbrContext) -> SwitchRequest;
    /// A segment finished downloading. Default: nothing.
    fn on_download(&mut self, _sample: &DownloadSample) {}
    /// Playback stalled at `now` (dash.js BUFFER_EMPTY). Default: nothing.
    fn on_stall(&mut self, _now: Time) {}
    /// True if the rule wants the next segment's sizes (a HEAD per segment, seed 004 §V).
    fn wants_segment_sizes(&self) -> bool {
        false
    }
}

/// What a rule is built for.
#[derive(Clone, Debug, PartialEq)]
pub struct AbrSetup {
    pub ladder: Ladder,
    pub segment_duration: Duration,
    /// The player's buffer target (segments × duration).
    pub buffer_target: Duration,
    /// True for a live stream (dash.js uses it to pick throughput windows; BOLA here does not).
    pub live: bool,
}

/// Registry entry: a rule, its source and its parameters.
pub struct AbrInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamInfo],
    pub build: BuildRule,
}

/// Constructor of a registered rule from its setup and parameter overrides.
pub type BuildRule = fn(&AbrSetup, &Params) -> Result<Box<dyn AbrRule>, VideoError>;

/// Every ABR rule tcpvideo provides.
pub static ABR_RULES: &[AbrInfo] = &[throughput::INFO, bba::INFO, bola::INFO, fixed::INFO];

/// Look a rule up by name (case-insensitive).
pub fn find(name: &str) -> Option<&'static AbrInfo> {
    ABR_RULES.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

/// Build a rule by name with parameter overrides; `key` names the scenario key in errors.
pub fn build(
    key: &str,
    name: &str,
    setup: &AbrSetup,
    params: &Params,
) -> Result<Box<dyn AbrRule>, VideoError> {
    let info = find(name).ok_or_else(|| VideoError::UnknownAbr {
        key: key.to_string(),
        name: name.to_string(),
        known: ABR_RULES
            .iter()
            .map(|a| a.name)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    for p in params.0.keys() {
        if !info.params.iter().any(|i| i.name == p) {
            return Err(VideoError::UnknownAbrParam {
                key: key.to_string(),
                rule: info.name.to_string(),
                param: p.clone(),
                known: info
                    .params
                    .iter()
                    .map(|i| i.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    (info.build)(setup, params)
}

#[cfg(test)]
pub(crate) mod testing {
    //! One-line fixtures for scripted decisions.
    use super::*;

    pub fn setup(buffer_target: Duration) -> AbrSetup {
        AbrSetup {
            ladder: Ladder::seed004(),
            segment_duration: Duration::from_secs(2),
            buffer_target,
            live: true,
        }
    }

    /// A context at `buffer` with `throughput`, for segment `segment` after `segment` downloads.
    pub fn ctx<'a>(
        ladder: &'a Ladder,
        segment: u64,
        buffer: Duration,
        buffer_target: Duration,
        throughput: Option<Bandwidth>,
        last_quality: Option<usize>,
    ) -> AbrContext<'a> {
        AbrContext {
            now: Time::from_secs(segment * 2),
            segment,
            segments_downloaded: segment,
            ladder,
            segment_duration: Duration::from_secs(2),
            buffer_level: buffer,
            buffer_target,
            throughput,
            last_quality,
            segment_sizes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_rule_is_one_line_naming_key_and_known_rules() {
        let e = build(
            "client.abr",
            "festive",
            &testing::setup(Duration::from_secs(10)),
            &Params::default(),
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "client.abr: unknown ABR rule \"festive\" (known: throughput, bba, bola, fixed)"
        );
    }

    #[test]
    fn unknown_parameter_is_rejected() {
        let mut p = Params::default();
        p.0.insert("alpha_typo".into(), 0.5);
        let e = build(
            "client.abr",
            "throughput",
            &testing::setup(Duration::from_secs(10)),
            &p,
        )
        .err()
        .unwrap();
        assert!(matches!(e, VideoError::UnknownAbrParam { .. }), "{e}");
    }

    #[test]
    fn every_registered_rule_builds_with_defaults_and_answers_a_valid_quality() {
        let setup = testing::setup(Duration::from_secs(10));
        for info in ABR_RULES {
            let mut rule = build("abr", info.name, &setup, &Params::default()).unwrap();
            assert_eq!(rule.name(), info.name);
            let c = testing::ctx(
                &setup.ladder,
                3,
                Duration::from_secs(4),
                setup.buffer_target,
                Some(Bandwidth::from_mbps(1)),
                Some(1),
            );
            assert!(
                rule.decide(&c).quality < setup.ladder.len(),
                "{}",
                info.name
            );
        }
    }
}
