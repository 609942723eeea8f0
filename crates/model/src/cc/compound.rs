//! Compound TCP (CTCP): Reno plus a scalable delay-based window (draft-sridharan-tcpm-ctcp-02 §3;
//! Tan, Song, Zhang, Sridharan, "A Compound TCP Approach for High-speed and Long Distance
//! Networks", INFOCOM 2006). The Windows default of the seed-001 era; seed 001 Eq. 2–3.
//!
//! The sending window is `win = cwnd + dwnd`. `cwnd` is the loss-based (Reno) component: slow
//! start as Reno, then +1/win per ACK (one segment per window of ACKs, Linux `tcp_cong_avoid_ai`
//! with w = win), halved on loss. `dwnd` is the delay-based component, updated once per round
//! trip from Vegas' backlog estimate `diff = win · (1 − baseRTT/RTT)` (segments queued in the
//! network by this flow):
//!
//! ```text
//!   diff <  γ:  dwnd += max(α·win^k − 1, 0)      (grow like HSTCP while the path is empty)
//!   diff >= γ:  dwnd  = max(dwnd − ζ·diff, 0)     (give back the queue)
//!   loss:       dwnd  = max(win·(1 − β) − cwnd/2, 0)   (so win shrinks by β overall)
//!   timeout:    dwnd  = 0
//! ```
//!
//! Parameters (draft defaults):
//! | name | default | unit | meaning |
//! |---|---|---|---|
//! | alpha | 0.125 | - | α, dwnd growth scale |
//! | beta | 0.5 | - | β, multiplicative decrease of win on loss |
//! | k | 0.75 | - | exponent of the growth law (HSTCP-like scalability) |
//! | gamma | 30 | segments | γ, backlog that counts as "queue building" |
//! | zeta | 1 | - | ζ (η in seed 001), fraction of the backlog removed per round |
//!
//! Choices where the draft leaves room (following the Linux out-of-tree CTCP port by Castellani,
//! Hemminger and Andrew, 2006–2008): RTT in `diff` is the minimum RTT sample of the round
//! (filters delayed ACKs); baseRTT is the minimum over the connection; the delay component is
//! updated only with at least 3 RTT samples in the round, only in the Open state and only in
//! congestion avoidance (dwnd = 0 in slow start, as the draft). The endpoint's reductions are
//! reflected as that port does: if the window is forced below cwnd + dwnd, dwnd goes first.
//!
//! With integer segments, `⌊α·win^k⌋ − 1` is zero until win ≈ 41 segments, so the delay
//! component only engages above that window — the "low_wnd ≈ 41" of CTCP descriptions emerges
//! from the law itself.
//!
//! Not implemented: γ auto-tuning (CTCP-TUBE, draft §3.3 optional).

use std::time::Duration;

use super::bbr::round::RoundCounter;
use super::reno::SegmentWindow;
use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::Time;

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "alpha", default: 0.125, unit: "-", doc: "dwnd growth scale: dwnd += alpha*win^k - 1 per RTT while diff < gamma" },
    ParamInfo { name: "beta", default: 0.5, unit: "-", doc: "multiplicative decrease of the total window on loss" },
    ParamInfo { name: "k", default: 0.75, unit: "-", doc: "exponent of the dwnd growth law" },
    ParamInfo { name: "gamma", default: 30.0, unit: "segments", doc: "backlog threshold separating growth from decrease of dwnd" },
    ParamInfo { name: "zeta", default: 1.0, unit: "-", doc: "fraction of the estimated backlog removed from dwnd per RTT" },
];

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "compound",
    summary: "Compound TCP: Reno window + delay window grown while backlog < gamma (Windows CTCP)",
    reference: "draft-sridharan-tcpm-ctcp-02; Tan et al. INFOCOM 2006; seed 001 Eq. 2-3",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(Compound::with_params(cfg, p)),
};

fn param(p: &Params, name: &str) -> f64 {
    p.get(PARAMS.iter().find(|i| i.name == name).expect("known Compound parameter"))
}

#[derive(Clone, Debug)]
pub struct Compound {
    /// The loss-based component (Reno), in segments.
    w: SegmentWindow,
    /// The delay-based component, in segments.
    dwnd: u64,
    alpha: f64,
    beta: f64,
    k: f64,
    gamma: f64,
    zeta: f64,
    base_rtt: Option<Duration>,
    round: RoundCounter,
    round_min_rtt: Option<Duration>,
    round_samples: u32,
    /// dwnd to install when recovery ends (computed at the congestion event).
    dwnd_after_recovery: u64,
    in_recovery: bool,
}

impl Compound {
    pub fn new(cfg: &CcConfig) -> Compound {
        Compound::with_params(cfg, &Params::default())
    }

    pub fn with_params(cfg: &CcConfig, p: &Params) -> Compound {
        Compound {
            w: SegmentWindow::new(cfg),
            dwnd: 0,
            alpha: param(p, "alpha"),
            beta: param(p, "beta").clamp(0.0, 1.0),
            k: param(p, "k"),
            gamma: param(p, "gamma"),
            zeta: param(p, "zeta"),
            base_rtt: None,
            round: RoundCounter::default(),
            round_min_rtt: None,
            round_samples: 0,
            dwnd_after_recovery: 0,
            in_recovery: false,
        }
    }

    /// Delay window in segments.
    pub fn dwnd(&self) -> u64 {
        self.dwnd
    }

    /// Loss (Reno) window in segments.
    pub fn loss_window(&self) -> u64 {
        self.w.cwnd
    }

    fn win(&self) -> u64 {
        self.w.cwnd + self.dwnd
    }

    /// Once per round: the draft's dwnd control law.
    fn update_dwnd(&mut self) {
        let (Some(base), Some(rtt)) = (self.base_rtt, self.round_min_rtt) else { return };
        if self.round_samples < 3 || self.w.in_slow_start() || rtt.is_zero() {
            return;
        }
        let win = self.win() as f64;
        let diff = win * (1.0 - base.as_secs_f64() / rtt.as_secs_f64());
        if diff < self.gamma {
            let inc = (self.alpha * win.powf(self.k)).floor() - 1.0;
            if inc > 0.0 {
                self.dwnd += inc as u64;
            }
        } else {
            self.dwnd = (self.dwnd as f64 - self.zeta * diff).max(0.0).floor() as u64;
        }
    }
}

impl CongestionControl for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if let Some(r) = ack.rtt_sample {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round_min_rtt = Some(self.round_min_rtt.map_or(r, |m| m.min(r)));
            self.round_samples += 1;
        }
        let mut acked = self.w.acked_segments(ack.acked_bytes);
        if ack.in_recovery {
            // Linux port: CTCP sampling is disabled outside the Open state.
            self.in_recovery = true;
            self.round_samples = 0;
            self.round_min_rtt = None;
            return;
        }
        if self.in_recovery {
            self.in_recovery = false;
        }
        if self.round.on_ack(ack) {
            self.update_dwnd();
            self.round_min_rtt = None;
            self.round_samples = 0;
        }
        if !ack.cwnd_limited || acked == 0 {
            return;
        }
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let win = self.win();
        self.w.cong_avoid_ai(win, acked);
    }

    fn on_congestion_event(&mut self, _now: Time, signal: CongestionSignal, _bytes_in_flight: u64) {
        let win = self.win();
        let half_cwnd = self.w.cwnd / 2;
        self.w.ssthresh = half_cwnd.max(2);
        self.w.cwnd_cnt = 0;
        self.dwnd_after_recovery = ((win as f64 * (1.0 - self.beta)).floor() as u64).saturating_sub(half_cwnd);
        self.round_samples = 0;
        self.round_min_rtt = None;
        if signal == CongestionSignal::Timeout {
            self.dwnd = 0;
            self.dwnd_after_recovery = 0;
            self.w.enter_loss();
        }
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        self.w.cwnd = self.w.ssthresh;
        self.dwnd = self.dwnd_after_recovery;
        self.in_recovery = false;
    }

    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
        // The Linux port restarts CTCP sampling after idle but keeps baseRTT.
        self.round_samples = 0;
        self.round_min_rtt = None;
        let w = self.cwnd().min(restart_window_bytes);
        self.set_cwnd(w);
    }

    /// Total window: loss window + delay window.
    fn cwnd(&self) -> u64 {
        self.win() * self.w.mss_bytes
    }

    /// Forced window (PRR, RTO, restart): the delay window absorbs a reduction first, as the
    /// Linux port reflects external decreases of `snd_cwnd`.
    fn set_cwnd(&mut self, bytes: u64) {
        let total = (bytes / self.w.mss_bytes).max(1);
        if total < self.win() && (self.w.cwnd > total || self.dwnd > total) {
            self.w.cwnd = total;
            self.dwnd = 0;
        } else {
            self.w.cwnd = total.saturating_sub(self.dwnd).max(1);
        }
    }

    /// Target total window after a congestion event (loss ssthresh + post-loss dwnd), which is
    /// what PRR reduces toward.
    fn ssthresh(&self) -> u64 {
        if self.w.ssthresh == u64::MAX {
            u64::MAX
        } else {
            (self.w.ssthresh + self.dwnd_after_recovery) * self.w.mss_bytes
        }
    }

    /// Forced threshold (undo of a spurious congestion event, restart after idle). The total
    /// threshold is split like [`Self::ssthresh`] builds it: the delay window planned for the end
    /// of recovery keeps its share and the loss window's threshold takes the rest, so
    /// `ssthresh()` reads back what was set.
    fn set_ssthresh(&mut self, bytes: u64) {
        if bytes == u64::MAX {
            self.w.ssthresh = u64::MAX;
            return;
        }
        let total = bytes / self.w.mss_bytes;
        self.w.ssthresh = total.saturating_sub(self.dwnd_after_recovery).max(2);
    }

    fn in_slow_start(&self) -> bool {
        self.w.in_slow_start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing_path::{DropTailPath, PathConfig};

    const MSS: u64 = 1448;

    /// 50 Mbit/s, 40 ms (BDP 172.7 segments), deep buffer; an early loss ends slow start at ~15.
    fn run(until_s: u64) -> Vec<(Time, u64, u64)> {
        let mut cfg = PathConfig::new(50, 40, 2000);
        cfg.drop_segments = vec![30];
        let mut path = DropTailPath::new(cfg);
        let mut cc = Compound::new(&CcConfig::default());
        let mut trace = Vec::new();
        path.run(&mut cc, Time::from_secs(until_s), |s, cc| trace.push((s.now, cc.dwnd(), s.queue_bytes / MSS)));
        trace
    }

    #[test]
    fn delay_window_grows_while_the_backlog_is_below_gamma() {
        let trace = run(3);
        let mut grew_with_empty_queue = 0;
        for w in trace.windows(2) {
            if w[1].1 > w[0].1 {
                // The queue measured by the path (this flow is alone) is its backlog.
                assert!(w[1].2 < 45, "dwnd grew from {} to {} with {} segments queued", w[0].1, w[1].1, w[1].2);
                if w[1].2 < 5 {
                    grew_with_empty_queue += 1;
                }
            }
        }
        assert!(grew_with_empty_queue >= 3, "dwnd grew only {grew_with_empty_queue} times on an idle path");
        let peak = trace.iter().map(|x| x.1).max().unwrap();
        assert!(peak > 50, "dwnd peaked at {peak} segments; Reno alone would need minutes to fill 172");
    }

    #[test]
    fn delay_window_shrinks_once_the_backlog_reaches_gamma_and_holds_the_queue_near_it() {
        let trace = run(8);
        let mut shrank = 0;
        for w in trace.windows(2) {
            if w[1].1 < w[0].1 {
                assert!(w[1].2 >= 20, "dwnd shrank from {} to {} with only {} segments queued", w[0].1, w[1].1, w[1].2);
                shrank += 1;
            }
        }
        assert!(shrank >= 1, "dwnd never shrank");
        // After convergence the standing queue stays around gamma (30), far below the 2000 buffer.
        let late_max = trace.iter().filter(|x| x.0 > Time::from_secs(5)).map(|x| x.2).max().unwrap();
        assert!(late_max < 90, "queue reached {late_max} segments after convergence");
    }

    #[test]
    fn loss_cuts_the_total_window_by_beta() {
        let mut cc = Compound::new(&CcConfig::default());
        cc.w.cwnd = 100;
        cc.w.ssthresh = 50;
        cc.dwnd = 60;
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 160 * MSS);
        assert_eq!(cc.ssthresh(), 80 * MSS, "win 160 -> 80");
        cc.on_recovery_exit(Time::ZERO);
        assert_eq!(cc.loss_window(), 50);
        assert_eq!(cc.dwnd(), 30, "dwnd = win(1-beta) - cwnd/2 = 80 - 50");
        assert_eq!(cc.cwnd(), 80 * MSS);
    }

    #[test]
    fn undo_restores_the_threshold_from_before_a_spurious_loss() {
        let mut cc = Compound::new(&CcConfig::default());
        cc.w.cwnd = 100;
        cc.w.ssthresh = 120;
        cc.dwnd = 60;
        let prior = cc.ssthresh();
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 160 * MSS);
        assert!(cc.ssthresh() < prior, "the event lowers the threshold");
        // The endpoint's undo (Linux tcp_undo_cwnd_reduction): ssthresh = max(ssthresh, prior).
        cc.set_ssthresh(prior);
        assert_eq!(cc.ssthresh(), prior);
        cc.on_recovery_exit(Time::ZERO);
        assert!(cc.loss_window() >= 2);
    }

    #[test]
    fn timeout_resets_the_delay_window() {
        let mut cc = Compound::new(&CcConfig::default());
        cc.w.cwnd = 100;
        cc.dwnd = 60;
        cc.on_congestion_event(Time::ZERO, CongestionSignal::Timeout, 160 * MSS);
        assert_eq!(cc.dwnd(), 0);
        assert_eq!(cc.cwnd(), MSS);
    }

    #[test]
    fn slow_start_is_reno_with_no_delay_window() {
        let mut cc = Compound::new(&CcConfig::default());
        let t = crate::cc::testing::one_round(&mut cc, Time::ZERO, Duration::from_millis(50), MSS);
        crate::cc::testing::one_round(&mut cc, t, Duration::from_millis(50), MSS);
        assert_eq!(cc.cwnd(), 40 * MSS);
        assert_eq!(cc.dwnd(), 0);
    }
}
