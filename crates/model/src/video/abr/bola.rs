//! BOLA as dash.js implements it (`src/streaming/rules/abr/BolaRule.js`, dash.js 5.1, read at
//! commit ccf3b95), after Spiteri, Urgaonkar, Sitaraman, "BOLA: Near-Optimal Bitrate Adaptation
//! for Online Videos", INFOCOM 2016 (arXiv 1601.06748).
//!
//! The model (BOLA-BASIC with dash.js's parameter choice):
//! - utilities `u_i = ln(b_i / b_0) + 1` (dash.js normalises the lowest rung to utility 1);
//! - `buffer_time = max(buffer target, 10 s + 2 s · rungs)` (dash.js MINIMUM_BUFFER_S = 10,
//!   MINIMUM_BUFFER_PER_BITRATE_LEVEL_S = 2); `gp = (u_max − 1) / (buffer_time / 10 s − 1)` and
//!   `Vp = 10 s / gp`;
//! - the quality is the argmax of `(Vp·(u_i − 1 + gp) − Q) / b_i` at `Q` = buffer + placeholder
//!   (ties go to the higher rung, as dash.js's `>=`). The `− 1` is dash.js 5's: since its
//!   "Fixes some minor issues with the BOLA rule" (#4536, 2024) the score uses the paper's
//!   utility `ln(b_i / b_0)`; dash.js 3/4 scored with `u_i + gp`, i.e. at a buffer `Vp` higher.
//!   As in dash.js 5, the rung's minimum and maximum buffer levels (used for the placeholder and
//!   the delay) keep the `u_i + gp` form.
//!
//! dash.js's states, kept here:
//! - STARTUP: until a throughput estimate exists the first rung is used; then the highest rung not
//!   above the *safe* throughput (0.9 × estimate, dash.js `bandwidthSafetyFactor`), and the
//!   placeholder buffer is set so that BOLA would have chosen that rung; STEADY once the buffer
//!   holds one segment duration;
//! - STEADY: the placeholder grows by the time the player waited since the last download finished
//!   (live availability, full buffer) and decays by 0.99 per new segment, capped so that with the
//!   buffer at the last request it does not exceed the last rung's maximum level; BOLA-O: a rise
//!   above both the last rung and the safe-throughput rung is held at max(safe rung, last rung);
//!   a buffer above the chosen rung's maximum level is first taken out of the placeholder, then
//!   becomes a request delay (not at the top rung);
//! - a stall (dash.js BUFFER_EMPTY) empties the placeholder.
//!
//! Deviations: dash.js's throughput is its own sliding average with latency; here it is the
//! player's estimate ([`AbrContext::throughput`], seed 004 EWMA). Abandonment, replacement
//! (fast switching) and a changing buffer target are not modelled.

use std::time::Duration;

use super::{
    AbrContext, AbrInfo, AbrRule, AbrSetup, DownloadSample, ParamInfo, Params, SwitchReason,
    SwitchRequest,
};
use crate::units::{Bandwidth, Time};
use crate::video::content::Ladder;

/// dash.js MINIMUM_BUFFER_S: BOLA adds no delay below this buffer.
const MINIMUM_BUFFER_S: f64 = 10.0;
/// dash.js MINIMUM_BUFFER_PER_BITRATE_LEVEL_S.
const MINIMUM_BUFFER_PER_RUNG_S: f64 = 2.0;
/// dash.js PLACEHOLDER_BUFFER_DECAY, applied once per new segment.
const PLACEHOLDER_DECAY: f64 = 0.99;

pub const PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "safety",
    default: 0.9,
    unit: "",
    doc: "bandwidth safety factor (dash.js bandwidthSafetyFactor)",
}];

pub const INFO: AbrInfo = AbrInfo {
    name: "bola",
    summary: "BOLA (Lyapunov buffer-based utility) with dash.js's placeholder buffer and BOLA-O",
    reference: "Spiteri et al., INFOCOM 2016; dash.js BolaRule.js",
    params: PARAMS,
    build: |setup: &AbrSetup, p: &Params| {
        Ok(Box::new(Bola::new(
            &setup.ladder,
            setup.buffer_target,
            p.get(&PARAMS[0]),
        )))
    },
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Startup,
    Steady,
}

/// BOLA state (dash.js `bolaState`).
#[derive(Clone, Debug)]
pub struct Bola {
    bitrates_bps: Vec<f64>,
    utilities: Vec<f64>,
    /// BOLA's gamma·p term, dimensionless.
    gp: f64,
    /// BOLA's V·p, in seconds of buffer.
    vp_s: f64,
    safety: f64,
    state: State,
    placeholder_s: f64,
    last_quality: usize,
    /// Finish of the last download, consumed by the next STEADY decision (dash.js
    /// `lastSegmentFinishTimeMs`).
    last_finish: Option<Time>,
    /// Time of the last STEADY decision (dash.js `lastCallTimeMs`).
    last_call: Option<Time>,
}

impl Bola {
    pub fn new(ladder: &Ladder, buffer_target: Duration, safety: f64) -> Bola {
        let bitrates_bps: Vec<f64> = ladder
            .bitrates()
            .iter()
            .map(|b| b.bits_per_sec as f64)
            .collect();
        let utilities: Vec<f64> = bitrates_bps
            .iter()
            .map(|b| (b / bitrates_bps[0]).ln() + 1.0)
            .collect();
        let buffer_time = buffer_target
            .as_secs_f64()
            .max(MINIMUM_BUFFER_S + MINIMUM_BUFFER_PER_RUNG_S * bitrates_bps.len() as f64);
        let u_max = utilities.iter().copied().fold(1.0, f64::max);
        // one rung: gp = 0 would divide by zero; any positive gp makes the single rung win
        let gp = if u_max > 1.0 {
            (u_max - 1.0) / (buffer_time / MINIMUM_BUFFER_S - 1.0)
        } else {
            1.0
        };
        let vp_s = MINIMUM_BUFFER_S / gp;
        Bola {
            bitrates_bps,
            utilities,
            gp,
            vp_s,
            safety,
            state: State::Startup,
            placeholder_s: 0.0,
            last_quality: 0,
            last_finish: None,
            last_call: None,
        }
    }

    /// dash.js `maxBufferLevelForQuality`: above this buffer a lower rung wins.
    fn max_buffer_for(&self, q: usize) -> f64 {
        self.vp_s * (self.utilities[q] + self.gp)
    }

    /// dash.js `minBufferLevelForQuality`: the buffer from which rung `q` beats every lower rung.
    fn min_buffer_for(&self, q: usize) -> f64 {
        let (bq, uq) = (self.bitrates_bps[q], self.utilities[q]);
        (0..q)
            .filter(|&i| self.utilities[i] < uq)
            .map(|i| {
                self.vp_s
                    * (self.gp
                        + (bq * self.utilities[i] - self.bitrates_bps[i] * uq)
                            / (bq - self.bitrates_bps[i]))
            })
            .fold(0.0, f64::max)
    }

    fn quality_for_buffer(&self, level_s: f64) -> usize {
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (i, b) in self.bitrates_bps.iter().enumerate() {
            let s = (self.vp_s * (self.utilities[i] - 1.0 + self.gp) - level_s) / b;
            if s >= best_score {
                best_score = s;
                best = i;
            }
        }
        best
    }

    fn quality_for_throughput(&self, bps: f64) -> usize {
        self.bitrates_bps
            .iter()
            .rposition(|&b| b <= bps)
            .unwrap_or(0)
    }

    /// dash.js `_updatePlaceholderBuffer`: count the time the player waited since the last
    /// download finished (or since the last decision) as buffer BOLA could have had.
    fn update_placeholder(&mut self, now: Time) {
        if let Some(done) = self.last_finish.take() {
            self.placeholder_s += now.saturating_since(done).as_secs_f64();
        } else if let Some(t) = self.last_call {
            self.placeholder_s += now.saturating_since(t).as_secs_f64();
        }
        self.last_call = Some(now);
    }
}

impl AbrRule for Bola {
    fn name(&self) -> &'static str {
        "bola"
    }

    fn decide(&mut self, ctx: &AbrContext) -> SwitchRequest {
        let buffer_s = ctx.buffer_level.as_secs_f64();
        let Some(throughput) = ctx.throughput else {
            // dash.js answers nothing without a throughput; the player's default is the lowest
            return SwitchRequest::new(0, SwitchReason::NoEstimate);
        };
        let safe_bps = throughput.bits_per_sec as f64 * self.safety;
        match self.state {
            State::Startup => {
                let q = self.quality_for_throughput(safe_bps);
                self.placeholder_s = (self.min_buffer_for(q) - buffer_s).max(0.0);
                self.last_quality = q;
                if ctx.buffer_level >= ctx.segment_duration {
                    self.state = State::Steady;
                }
                SwitchRequest::new(
                    q,
                    SwitchReason::BolaStartup {
                        safe_throughput: Bandwidth::from_bps(safe_bps as u64),
                    },
                )
            }
            State::Steady => {
                self.update_placeholder(ctx.now);
                let effective = buffer_s + self.placeholder_s;
                let mut q = self.quality_for_buffer(effective);
                let effective_buffer = Duration::from_secs_f64(effective);
                let mut reason = SwitchReason::BolaScore { effective_buffer };
                let q_throughput = self.quality_for_throughput(safe_bps);
                if q > self.last_quality && q > q_throughput {
                    q = q_throughput.max(self.last_quality);
                    reason = SwitchReason::BolaOscillationGuard { effective_buffer };
                }
                let mut delay_s = (effective - self.max_buffer_for(q)).max(0.0);
                if delay_s <= self.placeholder_s {
                    self.placeholder_s -= delay_s;
                    delay_s = 0.0;
                } else {
                    delay_s -= self.placeholder_s;
                    self.placeholder_s = 0.0;
                    if q == self.bitrates_bps.len() - 1 {
                        delay_s = 0.0;
                    }
                }
                self.last_quality = q;
                SwitchRequest {
                    quality: q,
                    reason,
                    delay: Duration::from_secs_f64(delay_s),
                }
            }
        }
    }

    /// dash.js `_checkNewSegment` at MEDIA_FRAGMENT_LOADED / METRIC_ADDED: decay the placeholder,
    /// and cap it so that the buffer at the request plus the placeholder stays within the
    /// downloaded rung's maximum level.
    fn on_download(&mut self, sample: &DownloadSample) {
        self.placeholder_s *= PLACEHOLDER_DECAY;
        let quality = sample.quality.min(self.bitrates_bps.len() - 1);
        self.last_quality = quality;
        let buffer_at_request =
            sample.buffer_level.as_secs_f64() + sample.download_time().as_secs_f64();
        let cap = (self.max_buffer_for(quality) - buffer_at_request).max(0.0);
        self.placeholder_s = self.placeholder_s.min(cap);
        self.last_finish = Some(sample.done);
    }

    fn on_stall(&mut self, _now: Time) {
        if self.state == State::Steady {
            self.placeholder_s = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::abr::testing::{ctx, setup};

    /// Hand computation, ladder 250/500/750/1000/1500/3000 kbit/s, buffer target 30 s:
    /// u = ln(b/250) + 1 = 1, 1.6931, 2.0986, 2.3863, 2.7918, 3.4849;
    /// buffer_time = max(30, 10 + 2·6 = 22) = 30; gp = (3.4849 − 1)/(30/10 − 1) = 1.24245;
    /// Vp = 10 / 1.24245 = 8.04859 s.
    /// Score (Vp·(u_i − 1 + gp) − Q)/b_i: rung i beats rung i−1 from
    /// Q = Vp·(gp − 1 + (b_i·u_{i−1} − b_{i−1}·u_i)/(b_i − b_{i−1})):
    /// q1 from 4.421 s, q2 from 9.052 s, q3 from 11.896 s, q4 from 14.631 s, q5 from 18.842 s
    /// (each also beats every lower rung there). Max level per rung Vp·(u_i + gp):
    /// 18.049, 23.627, 26.891, 29.206, 32.470, 38.049 s.
    ///
    /// Script: (1) no estimate → q0. (2) estimate 10 Mbit/s, buffer 2 s = one segment → STARTUP
    /// picks the highest rung ≤ 0.9·10 = 9 Mbit/s = q5, and moves to STEADY. (3) a stall empties
    /// the placeholder. Then STEADY decisions, each right when the previous download finished (no
    /// waiting, so the placeholder stays 0), at 10 Mbit/s (BOLA-O never binds):
    /// Q = 2 → q0; 6 → q1; 10 → q2; 13 → q3; 16 → q4; 25 → q5.
    /// (4) BOLA-O: last q1, Q = 30 wants q5, but at 1 Mbit/s the safe rung is q2 (750 ≤ 900 kbit/s)
    /// → q2 = max(q2, q1), and the buffer above q2's maximum level, 30 − 26.891 = 3.109 s, becomes
    /// a request delay.
    #[test]
    fn decisions_on_a_scripted_buffer_trajectory_match_hand_computation() {
        let s = setup(Duration::from_secs(30));
        let mut rule = Bola::new(&s.ladder, s.buffer_target, 0.9);
        let t = s.buffer_target;
        let ten = Some(Bandwidth::from_mbps(10));

        assert_eq!(
            rule.decide(&ctx(&s.ladder, 0, Duration::ZERO, t, None, None))
                .quality,
            0
        );
        let d = rule.decide(&ctx(&s.ladder, 1, Duration::from_secs(2), t, ten, Some(0)));
        assert_eq!((d.quality, rule.state), (5, State::Steady), "{}", d.reason);
        rule.on_stall(Time::from_secs(3));

        let mut now = Time::from_secs(10);
        for (buffer_s, want) in [
            (2.0, 0),
            (6.0, 1),
            (10.0, 2),
            (13.0, 3),
            (16.0, 4),
            (25.0, 5),
        ] {
            rule.on_download(&DownloadSample {
                requested: Time::from_nanos(now.as_nanos() - 1_000_000_000),
                done: now,
                bytes: 1,
                quality: 0,
                buffer_level: Duration::ZERO,
            });
            let c = AbrContext {
                now,
                ..ctx(
                    &s.ladder,
                    2,
                    Duration::from_secs_f64(buffer_s),
                    t,
                    ten,
                    Some(rule.last_quality),
                )
            };
            let d = rule.decide(&c);
            assert_eq!(d.quality, want, "Q = {buffer_s}: {}", d.reason);
            assert_eq!(d.delay, Duration::ZERO);
            now += Duration::from_secs(2);
        }

        rule.last_quality = 1;
        rule.on_download(&DownloadSample {
            requested: Time::from_nanos(now.as_nanos() - 1_000_000_000),
            done: now,
            bytes: 1,
            quality: 1,
            buffer_level: Duration::ZERO,
        });
        let c = AbrContext {
            now,
            ..ctx(
                &s.ladder,
                9,
                Duration::from_secs(30),
                t,
                Some(Bandwidth::from_mbps(1)),
                Some(1),
            )
        };
        let d = rule.decide(&c);
        assert!(
            matches!(d.reason, SwitchReason::BolaOscillationGuard { .. }),
            "{}",
            d.reason
        );
        assert_eq!(d.quality, 2);
        assert!(
            (d.delay.as_secs_f64() - 3.109).abs() < 0.001,
            "delay {:?}",
            d.delay
        );
    }

    #[test]
    fn waiting_for_a_live_segment_grows_the_placeholder_and_raises_quality() {
        // Same buffer (6 s → q1 without placeholder), but the player waited 4 s after the last
        // download (live availability): effective buffer 10 s → q2 (from 9.052 s).
        let s = setup(Duration::from_secs(30));
        let mut rule = Bola::new(&s.ladder, s.buffer_target, 0.9);
        rule.state = State::Steady;
        rule.last_quality = 1;
        let ten = Some(Bandwidth::from_mbps(10));
        rule.on_download(&DownloadSample {
            requested: Time::from_secs(9),
            done: Time::from_secs(10),
            bytes: 1,
            quality: 1,
            buffer_level: Duration::ZERO,
        });
        let c = AbrContext {
            now: Time::from_secs(14),
            ..ctx(
                &s.ladder,
                5,
                Duration::from_secs(6),
                s.buffer_target,
                ten,
                Some(1),
            )
        };
        assert_eq!(rule.decide(&c).quality, 2);
    }

    /// The scripted session of `testdata/bola_dashjs_trace.txt` (throughput from 0.6 to 8 Mbit/s,
    /// live waits, a stall, BOLA-O and delays) decided by dash.js 5.1.1's own BolaRule.js
    /// (`node bench/bola_vs_dashjs.mjs DASHJS_DIR` wrote the `expect` lines): every decision and
    /// request delay must match.
    #[test]
    fn decisions_match_dash_js_bola_rule_on_a_scripted_session() {
        let trace = include_str!("testdata/bola_dashjs_trace.txt");
        let s = setup(Duration::from_secs(30));
        let mut rule = Bola::new(&s.ladder, s.buffer_target, 0.9);
        let ms = |f: &str| Duration::from_millis(f.parse().expect("milliseconds"));
        let at = |f: &str| Time::from_nanos(ms(f).as_nanos() as u64);
        let mut last: Option<SwitchRequest> = None;
        let mut last_quality = 0;
        let mut checked = 0;
        for (n, line) in trace.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.first().copied() {
                Some("decide") => {
                    let throughput = (f[3] != "-")
                        .then(|| Bandwidth::from_bps(f[3].parse::<u64>().unwrap() * 1000));
                    let c = AbrContext {
                        now: at(f[1]),
                        ..ctx(
                            &s.ladder,
                            n as u64,
                            ms(f[2]),
                            s.buffer_target,
                            throughput,
                            Some(last_quality),
                        )
                    };
                    last = Some(rule.decide(&c));
                }
                Some("download") => {
                    let sample = DownloadSample {
                        requested: at(f[1]),
                        done: at(f[2]),
                        bytes: 1,
                        quality: last_quality,
                        buffer_level: ms(f[3]),
                    };
                    rule.on_download(&sample);
                }
                Some("stall") => rule.on_stall(at(f[1])),
                Some("expect") => {
                    let ours = last.take().expect("an expect line follows a decide line");
                    if f[1] != "-" {
                        let want: usize = f[1].parse().unwrap();
                        assert_eq!(
                            ours.quality,
                            want,
                            "line {}: {line} ({})",
                            n + 1,
                            ours.reason
                        );
                        let want_delay = ms(f[2]).as_secs_f64();
                        assert!(
                            (ours.delay.as_secs_f64() - want_delay).abs() < 0.001,
                            "line {}: delay {:?} vs {line}",
                            n + 1,
                            ours.delay
                        );
                        last_quality = want;
                        checked += 1;
                    }
                }
                _ => {}
            }
        }
        assert!(checked >= 20, "only {checked} decisions compared");
    }
}
