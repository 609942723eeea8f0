//! CCPLCA — CCP with Limited Congestion Avoidance (Cavendish et al. §V, "LimitedCongestionAvoidance").
//!
//! In congestion avoidance the window is `max(cwnd_vr, cwnd_ccp)`: `cwnd_ccp` is CCP's Eq. 4
//! ([`super::ccp`]) and `cwnd_vr = VR · rtt / MSS` the smallest window that, at the RTT of the
//! current ACK, delivers the video rendering rate VR. The throughput is never regulated below
//! the rendering rate. (Seed 001 writes `cwnd_vr = VR/rtt`; dimensionally a rate times a time
//! is meant, and "the throughput matching the video rendering rate" is `cwnd/rtt = VR`.)
//! Seed 001 found this the worst variant: being liberal with cwnd hurts when the playout buffer
//! cannot take the data.
//!
//! VR comes from the application ([`AppInfo::video_rate`] via `on_app_info`), or from the
//! `video_rate_mbps` parameter when the application does not report one. Without either, CCPLCA
//! is CCP. The floor applies in congestion avoidance only, as the seed says ("in congestion
//! avoidance computes…"); slow start is CCP's (Reno's).
//!
//! Parameters: CCP's (`kp` 2, `storage_segments` 0 = estimated, `capacity_win_rounds` 10,
//! `capacity_estimator` 1 = delivery rate, `backlog_estimator` 0 = latest sample, `min_cwnd` 2
//! segments) plus
//! | name | default | unit | meaning |
//! |---|---|---|---|
//! | video_rate_mbps | 0 | Mbit/s | rendering rate when the application reports none (0 = none) |

use super::ccp::{CcpCore, CcpFamily, Variant, BACKLOG_ESTIMATOR, CAPACITY_ESTIMATOR, CAPACITY_WIN, KP, MIN_CWND, STORAGE};
use super::{AlgorithmInfo, AppInfo, ParamInfo, Params};
use crate::units::Bandwidth;

pub const VIDEO_RATE: ParamInfo = ParamInfo {
    name: "video_rate_mbps",
    default: 0.0,
    unit: "Mbit/s",
    doc: "video rendering rate if the application reports none (0 = none)",
};

pub const PARAMS: &[ParamInfo] = &[KP, STORAGE, CAPACITY_WIN, CAPACITY_ESTIMATOR, BACKLOG_ESTIMATOR, MIN_CWND, VIDEO_RATE];

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "ccplca",
    summary: "CCPLCA: CCP whose congestion-avoidance window never falls below video rate x RTT",
    reference: "seed 001 (Cavendish et al.) section V, LimitedCongestionAvoidance",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(CcpLca::with_params(cfg, p, Lca::new(p))),
};

pub type CcpLca = CcpFamily<Lca>;

#[derive(Clone, Debug)]
pub struct Lca {
    /// Rendering rate VR: the application's report, else the parameter.
    pub video_rate: Option<Bandwidth>,
}

impl Lca {
    pub fn new(p: &Params) -> Lca {
        let mbps = p.get(&VIDEO_RATE);
        Lca { video_rate: (mbps > 0.0).then(|| Bandwidth::from_bps((mbps * 1e6) as u64)) }
    }

    /// cwnd_vr in segments at the core's latest RTT.
    pub fn vr_window(&self, core: &CcpCore) -> Option<f64> {
        let (vr, rtt) = (self.video_rate?, core.rtt?);
        Some(vr.bytes_in(rtt) as f64 / core.mss() as f64)
    }
}

impl Variant for Lca {
    const NAME: &'static str = "ccplca";

    fn window(&self, law: f64, core: &CcpCore) -> f64 {
        match self.vr_window(core) {
            Some(vr) => law.max(vr.ceil()),
            None => law,
        }
    }

    fn on_app_info(&mut self, info: &AppInfo) {
        if let Some(vr) = info.video_rate {
            self.video_rate = Some(vr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ccp::tests::{path, MSS};
    use crate::cc::testing_path::DropTailPath;
    use crate::cc::{CcConfig, CongestionControl};
    use crate::units::Time;

    #[test]
    fn window_never_falls_below_video_rate_times_rtt_in_congestion_avoidance() {
        // CCP alone settles near BDP + a few segments (~75). A 16 Mbit/s video needs 16/20 of
        // the pipe at base RTT and more as the queue grows: the floor must bind and hold.
        let mut cc = CcpLca::with_params(&CcConfig::default(), &Params::default(), Lca::new(&Params::default()));
        cc.on_app_info(&AppInfo { video_rate: Some(Bandwidth::from_mbps(16)), ..Default::default() });
        let mut p = DropTailPath::new(path(100));
        let mut checked = 0;
        let mut bound = 0;
        p.run(&mut cc, Time::from_secs(6), |s, cc| {
            if !cc.in_slow_start() {
                let vr_segments = Bandwidth::from_mbps(16).bytes_in(s.rtt) as f64 / MSS as f64;
                assert!(s.cwnd as f64 / MSS as f64 >= vr_segments, "cwnd {} < VR window {vr_segments:.1} at {}", s.cwnd / MSS, s.now);
                checked += 1;
                let law = cc.core.law(s.in_flight as f64 / MSS as f64).unwrap_or(f64::MAX);
                if law < vr_segments {
                    bound += 1;
                }
            }
        });
        assert!(checked > 1000);
        assert!(bound > 0, "the VR floor never bound; the test exercises nothing");
    }

    #[test]
    fn without_a_video_rate_it_is_ccp() {
        let run = |lca: bool| {
            let mut p = DropTailPath::new(path(100));
            let mut trace = Vec::new();
            if lca {
                let mut cc = CcpLca::with_params(&CcConfig::default(), &Params::default(), Lca::new(&Params::default()));
                p.run(&mut cc, Time::from_secs(2), |s, _| trace.push(s.cwnd));
            } else {
                let mut cc = crate::cc::ccp::Ccp::with_params(&CcConfig::default(), &Params::default(), crate::cc::ccp::Plain);
                p.run(&mut cc, Time::from_secs(2), |s, _| trace.push(s.cwnd));
            }
            trace
        };
        assert_eq!(run(true), run(false));
    }
}
