//! CCPLB — CCP with Large Buffer (Cavendish et al. §V "LargeBuffer", Eq. 5).
//!
//! ```text
//!   cwnd_k = [Kp(B − x_k) − in_flight_k] / 2 + POB / POBRate
//! ```
//!
//! CCP's law ([`super::ccp`]) plus a share of the client's playout buffer: the buffer is extra
//! storage the path can "use", so the window may hold that much more data. POB is the playout
//! buffer size in segments; POBRate says which fraction of it is used — CCPLB(1) uses all of it,
//! CCPLB(2) half, CCPLB(0.5) twice (overbooking), as in seed 001 Figs. 7–9 (buffers of 448, 897
//! and 1345 packets). The seed stresses that CCPLB does *not* know the instantaneous fill level
//! of the buffer, so by default POB is the configured size (`pob_segments`, default 448, the
//! smallest buffer of seed 001 Table I) and POBRate the configured divisor (`pob_rate`, default 1).
//!
//! Deviation offered as an option, off by default: with `pob_from_app` = 1, POB follows the
//! application's report — `AppInfo::playout_buffer` (seconds of media) × the video rate
//! (`AppInfo::video_rate`) / MSS. `AppInfo::playout_buffer_rate` (a fill *rate*, media seconds per
//! second, possibly negative) is not the paper's POBRate (a fixed divisor) and is not used.
//!
//! The term applies in congestion avoidance, like the law it extends; slow start is CCP's.
//!
//! Parameters: CCP's (`kp` 2, `storage_segments` 0 = estimated, `capacity_win_rounds` 10,
//! `capacity_estimator` 1 = delivery rate, `backlog_estimator` 0 = latest sample, `min_cwnd` 2
//! segments) plus
//! | name | default | unit | meaning |
//! |---|---|---|---|
//! | pob_segments | 448 | segments | playout buffer size POB |
//! | pob_rate | 1 | - | POBRate: the window adds POB / POBRate |
//! | pob_from_app | 0 | bool | take POB from the application's playout-buffer report |

use super::ccp::{CcpCore, CcpFamily, Variant, BACKLOG_ESTIMATOR, CAPACITY_ESTIMATOR, CAPACITY_WIN, KP, MIN_CWND, STORAGE};
use super::{AlgorithmInfo, AppInfo, ParamInfo, Params};

pub const POB: ParamInfo =
    ParamInfo { name: "pob_segments", default: 448.0, unit: "segments", doc: "playout buffer size POB (seed 001: 448, 897, 1345 packets)" };
pub const POB_RATE: ParamInfo =
    ParamInfo { name: "pob_rate", default: 1.0, unit: "-", doc: "POBRate: window adds POB/POBRate (CCPLB(x) in seed 001)" };
pub const POB_FROM_APP: ParamInfo =
    ParamInfo { name: "pob_from_app", default: 0.0, unit: "bool", doc: "1 = POB from the app's playout-buffer report x video rate" };

pub const PARAMS: &[ParamInfo] = &[KP, STORAGE, CAPACITY_WIN, CAPACITY_ESTIMATOR, BACKLOG_ESTIMATOR, MIN_CWND, POB, POB_RATE, POB_FROM_APP];

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "ccplb",
    summary: "CCPLB: CCP window plus POB/POBRate, a share of the client's playout buffer (seed 001 Eq. 5)",
    reference: "seed 001 (Cavendish et al.) section V, LargeBuffer, Eq. 5",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(CcpLb::with_params(cfg, p, Lb::new(p, cfg.mss_bytes))),
};

pub type CcpLb = CcpFamily<Lb>;

#[derive(Clone, Debug)]
pub struct Lb {
    /// POB in segments.
    pub pob_segments: f64,
    pub pob_rate: f64,
    from_app: bool,
    mss: u64,
}

impl Lb {
    pub fn new(p: &Params, mss: u64) -> Lb {
        Lb { pob_segments: p.get(&POB).max(0.0), pob_rate: p.get(&POB_RATE), from_app: p.get(&POB_FROM_APP) != 0.0, mss: mss.max(1) }
    }

    /// The Eq. 5 term POB/POBRate in segments (0 for a non-positive POBRate).
    pub fn term(&self) -> f64 {
        if self.pob_rate > 0.0 {
            self.pob_segments / self.pob_rate
        } else {
            0.0
        }
    }
}

impl Variant for Lb {
    const NAME: &'static str = "ccplb";

    fn window(&self, law: f64, _core: &CcpCore) -> f64 {
        law + self.term()
    }

    fn on_app_info(&mut self, info: &AppInfo) {
        if !self.from_app {
            return;
        }
        if let (Some(buf), Some(vr)) = (info.playout_buffer, info.video_rate) {
            self.pob_segments = vr.bytes_in(buf) as f64 / self.mss as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ccp::tests::{path, MSS};
    use crate::cc::testing_path::DropTailPath;
    use crate::cc::CcConfig;
    use crate::units::{Bandwidth, Time};
    use std::time::Duration;

    /// Mean window (segments) over the last 2 s of a 6 s run on a path with a 2000-segment buffer.
    fn mean_late_cwnd(pob: f64, pob_rate: f64) -> f64 {
        let mut p = Params::default();
        p.0.insert("pob_segments".into(), pob);
        p.0.insert("pob_rate".into(), pob_rate);
        p.0.insert("storage_segments".into(), 120.0);
        let mut cc = CcpLb::with_params(&CcConfig::default(), &p, Lb::new(&p, MSS));
        let mut fp = DropTailPath::new(path(2000));
        let mut sum = 0.0;
        let mut n = 0.0;
        fp.run(&mut cc, Time::from_secs(6), |s, _| {
            if s.now > Time::from_secs(4) {
                sum += s.cwnd as f64 / MSS as f64;
                n += 1.0;
            }
        });
        sum / n
    }

    #[test]
    fn window_grows_with_the_playout_buffer() {
        let (small, large) = (mean_late_cwnd(50.0, 1.0), mean_late_cwnd(200.0, 1.0));
        assert!(large > small + 20.0, "POB 50 -> cwnd {small:.1}, POB 200 -> cwnd {large:.1}");
    }

    #[test]
    fn window_shrinks_as_pob_rate_grows() {
        let w: Vec<f64> = [0.5, 1.0, 2.0, 4.0].iter().map(|&r| mean_late_cwnd(200.0, r)).collect();
        for pair in w.windows(2) {
            assert!(pair[1] < pair[0] - 5.0, "windows for POBRate 0.5,1,2,4: {w:?}");
        }
    }

    #[test]
    fn pob_follows_the_application_report_when_asked() {
        let mut p = Params::default();
        p.0.insert("pob_from_app".into(), 1.0);
        let mut lb = Lb::new(&p, MSS);
        // 2 s of a 5.792 Mbit/s video = 1 448 000 bytes = 1000 segments.
        lb.on_app_info(&AppInfo {
            video_rate: Some(Bandwidth::from_bps(5_792_000)),
            playout_buffer: Some(Duration::from_secs(2)),
            playout_buffer_rate: Some(0.5),
        });
        assert_eq!(lb.pob_segments, 1000.0);
        let mut fixed = Lb::new(&Params::default(), MSS);
        fixed.on_app_info(&AppInfo {
            video_rate: Some(Bandwidth::from_mbps(5)),
            playout_buffer: Some(Duration::from_secs(2)),
            playout_buffer_rate: None,
        });
        assert_eq!(fixed.pob_segments, 448.0, "paper default ignores the fill level");
    }
}
