//! Fixed quality: every segment in one quality (seed 004 §IV runs all clients at quality 1,
//! 500 kbit/s). A quality above the ladder's top is clamped to the top.
//!
//! Parameters: `quality` (index into the ladder, default 1 as seed 004 §IV).

use super::{
    AbrContext, AbrInfo, AbrRule, AbrSetup, ParamInfo, Params, SwitchReason, SwitchRequest,
};
use crate::video::error::VideoError;

pub const PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "quality",
    default: 1.0,
    unit: "index",
    doc: "quality index, 0 = lowest (seed 004 §IV: 1 = 500 kbit/s)",
}];

pub const INFO: AbrInfo = AbrInfo {
    name: "fixed",
    summary: "one fixed quality for every segment",
    reference: "seed 004 §IV (single quality, 500 kbit/s)",
    params: PARAMS,
    build: |setup: &AbrSetup, p: &Params| {
        let q = p.get(&PARAMS[0]);
        if !(q >= 0.0 && q.fract() == 0.0 && (q as usize) < setup.ladder.len()) {
            return Err(VideoError::invalid(
                "abr_params.quality",
                format!("must be a quality index 0..{}, got {q}", setup.ladder.top()),
            ));
        }
        Ok(Box::new(Fixed {
            quality: q as usize,
        }))
    },
};

/// Always the same quality.
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    pub quality: usize,
}

impl AbrRule for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn decide(&mut self, ctx: &AbrContext) -> SwitchRequest {
        SwitchRequest::new(self.quality.min(ctx.ladder.top()), SwitchReason::Fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::abr::build;
    use crate::video::abr::testing::setup;
    use std::time::Duration;

    #[test]
    fn a_quality_outside_the_ladder_is_rejected_by_key() {
        let mut p = Params::default();
        p.0.insert("quality".into(), 6.0);
        let e = build("abr", "fixed", &setup(Duration::from_secs(2)), &p)
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "abr_params.quality: must be a quality index 0..5, got 6"
        );
    }
}
