//! BBA-0, the buffer-based rule of Huang, Johari, McKeown, Trunnell, Watson, "A Buffer-Based
//! Approach to Rate Adaptation: Evidence from a Large Video Streaming Service", SIGCOMM 2014, §4
//! (Algorithm 1 and Fig. 6).
//!
//! The rate map `f(B)` is `R_min` up to the reservoir `r`, rises linearly across the cushion `cu`
//! to `R_max`, and stays at `R_max` above `r + cu`. With `R_prev` the previous rate, `R+` the
//! next rung above it and `R−` the next rung below:
//! - `B ≤ r` → `R_min`;  `B ≥ r + cu` → `R_max`;
//! - `f(B) ≥ R+` → the highest rung strictly below `f(B)`;
//! - `f(B) ≤ R−` → the lowest rung strictly above `f(B)`;
//! - otherwise stay at `R_prev` (the hysteresis that keeps BBA from oscillating).
//!
//! Deviation: the paper's reservoir (90 s) and cushion (126 s) are for a 240 s buffer; live
//! clients here hold 1–15 segments, so the defaults keep the paper's *proportions* of the buffer
//! target: reservoir = 0.375 · target, cushion = 0.525 · target (the upper 10 % is the paper's
//! upper reservoir).
//!
//! Parameters: `reservoir_fraction`, `cushion_fraction` (of the player's buffer target).

use std::time::Duration;

use super::{
    AbrContext, AbrInfo, AbrRule, AbrSetup, ParamInfo, Params, SwitchReason, SwitchRequest,
};
use crate::units::Bandwidth;
use crate::video::error::VideoError;

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "reservoir_fraction",
        default: 0.375,
        unit: "of buffer target",
        doc: "reservoir r (paper: 90 s of 240 s)",
    },
    ParamInfo {
        name: "cushion_fraction",
        default: 0.525,
        unit: "of buffer target",
        doc: "cushion cu (paper: 126 s of 240 s)",
    },
];

pub const INFO: AbrInfo = AbrInfo {
    name: "bba",
    summary: "BBA-0 buffer-based rate map with reservoir and cushion",
    reference: "Huang et al., SIGCOMM 2014, Algorithm 1",
    params: PARAMS,
    build: |setup: &AbrSetup, p: &Params| {
        let r = p.get(&PARAMS[0]);
        let c = p.get(&PARAMS[1]);
        if !(0.0..1.0).contains(&r) {
            return Err(VideoError::invalid(
                "abr_params.reservoir_fraction",
                format!("must be in [0, 1), got {r}"),
            ));
        }
        if !(c > 0.0 && r + c <= 1.0) {
            return Err(VideoError::invalid(
                "abr_params.cushion_fraction",
                format!("must be > 0 with reservoir + cushion ≤ 1, got {c}"),
            ));
        }
        Ok(Box::new(Bba::new(
            setup.buffer_target.mul_f64(r),
            setup.buffer_target.mul_f64(c),
        )))
    },
};

/// BBA-0 with its reservoir and cushion.
#[derive(Clone, Debug)]
pub struct Bba {
    reservoir: Duration,
    cushion: Duration,
}

impl Bba {
    pub fn new(reservoir: Duration, cushion: Duration) -> Bba {
        Bba { reservoir, cushion }
    }

    /// f(B): the rate the buffer level maps to (linear across the cushion).
    fn map_rate(&self, buffer: Duration, r_min: Bandwidth, r_max: Bandwidth) -> f64 {
        let over = buffer.saturating_sub(self.reservoir).as_secs_f64();
        let frac = (over / self.cushion.as_secs_f64()).min(1.0);
        r_min.bits_per_sec as f64 + (r_max.bits_per_sec - r_min.bits_per_sec) as f64 * frac
    }
}

impl AbrRule for Bba {
    fn name(&self) -> &'static str {
        "bba"
    }

    fn decide(&mut self, ctx: &AbrContext) -> SwitchRequest {
        let rates = ctx.ladder.bitrates();
        let top = ctx.ladder.top();
        let buffer = ctx.buffer_level;
        if buffer <= self.reservoir {
            return SwitchRequest::new(0, SwitchReason::BufferReservoir { buffer });
        }
        if buffer >= self.reservoir + self.cushion {
            return SwitchRequest::new(top, SwitchReason::BufferFull { buffer });
        }
        let prev = ctx.last_quality.unwrap_or(0).min(top);
        let f = self.map_rate(buffer, rates[0], rates[top]);
        let reason = SwitchReason::BufferCushion {
            buffer,
            map_rate: Bandwidth::from_bps(f.round() as u64),
        };
        let rate_plus = rates[(prev + 1).min(top)].bits_per_sec as f64;
        let rate_minus = rates[prev.saturating_sub(1)].bits_per_sec as f64;
        let q = if f >= rate_plus {
            // highest rung strictly below f(B)
            rates
                .iter()
                .rposition(|r| (r.bits_per_sec as f64) < f)
                .unwrap_or(0)
        } else if f <= rate_minus {
            // lowest rung strictly above f(B)
            rates
                .iter()
                .position(|r| (r.bits_per_sec as f64) > f)
                .unwrap_or(top)
        } else {
            prev
        };
        SwitchRequest::new(q, reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::abr::testing::{ctx, setup};
    use crate::video::abr::{build, Params};

    /// Buffer target 20 s → r = 0.375·20 = 7.5 s, cu = 0.525·20 = 10.5 s, r + cu = 18 s.
    /// Ladder 250 … 3000 kbit/s, f(B) = 250 + 2750·(B − 7.5)/10.5 kbit/s. The trajectory:
    ///
    /// | B (s) | prev | f(B) kbit/s | R+ / R−    | rule                          | next |
    /// |-------|------|-------------|------------|-------------------------------|------|
    /// | 0     | –    | –           | –          | B ≤ r                         | q0   |
    /// | 9.0   | q0   | 642.86      | 500 / 250  | f ≥ R+ → max R < 642.86 = 500 | q1   |
    /// | 10.0  | q1   | 904.76      | 750 / 250  | f ≥ R+ → 750                  | q2   |
    /// | 10.5  | q2   | 1035.71     | 1000 / 500 | f ≥ R+ → 1000                 | q3   |
    /// | 11.0  | q3   | 1166.67     | 1500 / 750 | between → stay                | q3   |
    /// | 8.0   | q3   | 380.95      | 1500 / 750 | f ≤ R− → min R > 380.95 = 500 | q1   |
    /// | 7.0   | q1   | –           | –          | B ≤ r                         | q0   |
    /// | 19.0  | q0   | –           | –          | B ≥ r + cu                    | q5   |
    #[test]
    fn decisions_on_a_scripted_buffer_trajectory_match_hand_computation() {
        let s = setup(Duration::from_secs(20));
        let mut rule = build("abr", "bba", &s, &Params::default()).unwrap();
        let steps: [(f64, Option<usize>, usize); 8] = [
            (0.0, None, 0),
            (9.0, Some(0), 1),
            (10.0, Some(1), 2),
            (10.5, Some(2), 3),
            (11.0, Some(3), 3),
            (8.0, Some(3), 1),
            (7.0, Some(1), 0),
            (19.0, Some(0), 5),
        ];
        for (i, (buffer_s, prev, want)) in steps.into_iter().enumerate() {
            let c = ctx(
                &s.ladder,
                i as u64,
                Duration::from_secs_f64(buffer_s),
                s.buffer_target,
                None,
                prev,
            );
            let d = rule.decide(&c);
            assert_eq!(
                d.quality, want,
                "step {i}: buffer {buffer_s} s, {}",
                d.reason
            );
        }
    }

    #[test]
    fn a_reservoir_and_cushion_beyond_the_buffer_are_rejected() {
        let mut p = Params::default();
        p.0.insert("cushion_fraction".into(), 0.9);
        let e = build("abr", "bba", &setup(Duration::from_secs(20)), &p)
            .err()
            .unwrap();
        assert!(
            e.to_string().starts_with("abr_params.cushion_fraction:"),
            "{e}"
        );
    }
}
