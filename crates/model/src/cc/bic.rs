//! BIC-TCP (Binary Increase Congestion control), as Linux `net/ipv4/tcp_bic.c` (6.x) runs it.
//!
//! What it models: Xu, Harfoush, Rhee, "Binary Increase Congestion Control (BIC) for Fast
//! Long-Distance Networks", IEEE INFOCOM 2004, §III. After a loss at W_max the window is cut to
//! β·W_max (β = 0.8) and then *binary searches* for W_max: each RTT it moves towards the midpoint
//! between itself and W_max (here: a quarter of the distance, `BICTCP_B` = 4, which Linux's
//! delayed-ACK ratio turns into about half, see below), but never by more than S_max per RTT
//! ("additive increase" when far away) and by a small S_min when very close ("smooth part"). Once
//! past W_max it *probes* for a new maximum, slowly at first and then faster (mirror image of the
//! search, "max probing"), until it is S_max per RTT again. Below `low_window` segments BIC
//! behaves as Reno (+1 per RTT, halve on loss) to stay fair to Reno at small windows. Fast
//! convergence (§III.C) lowers W_max to W·(1+β)/2 when a loss happens below the previous W_max,
//! releasing bandwidth to newer flows. CUBIC (cubic.rs) replaced BIC as Linux's default in 2.6.19;
//! the seed 004 study (Kupka et al.) compares both for on-off live streaming.
//!
//! How (Linux): the window is in segments; `bictcp_update` turns the search into `cnt` (segments
//! ACKed per +1 segment), applied by [`SegmentWindow::cong_avoid_ai`] (Linux `tcp_cong_avoid_ai`
//! with the stretch-ACK fix of 2020). `cnt` is recomputed only when cwnd changed or HZ/32 passed.
//! Before the first loss `cnt` ≤ 20 (+5 % per RTT). Finally `cnt` is divided by the delayed-ACK
//! ratio `delayed_ack`/16, an EWMA (gain 1/16) of segments per ACK that starts at 2; its integer
//! update `d += pkts − d/16` stalls at 31/16 when every ACK covers one segment, so with per-segment
//! ACKs Linux BIC grows about 1.94× faster than `cnt` alone says. With delayed ACKs (2 segments
//! each) `d` does not move inside 32..47 (ratio 2 to 2.94; odd 1- or 3-segment ACKs walk it
//! there), and since 2020 `tcp_cong_avoid_ai` also counts segments, not ACKs, so Linux BIC with delayed ACKs
//! grows 2–2.9× faster than `cnt` says; stretch ACKs of n segments push the ratio to ~n and
//! `cnt` to 1 (slow-start speed). We keep all of that (it is what Linux does; ns-3's TcpBic has
//! no such ratio, so it grows about half as fast). An RTO (`TCP_CA_Loss`) resets the state,
//! W_max included.
//!
//! Parameters (Linux module parameter names):
//! - `beta` = 0.8 (ratio; Linux 819/1024): multiplicative decrease above `low_window`.
//! - `max_increment` = 16 (segments per RTT, before the delayed-ACK ratio): S_max.
//! - `low_window` = 14 (segments): at or below it, Reno behaviour.
//! - `smooth_part` = 20 (RTTs): the search near W_max advances W/(W·smooth_part/B) = B/20 = 0.2
//!   segment per RTT (S_min) — "# of RTT from W_max−B to W_max".
//! - `fast_convergence` = 1 (bool).
//! - `initial_ssthresh` = 0 (segments, 0 = unlimited; Linux 6.x default).
//!
//! Not Linux parameters: knobs that reproduce ns-3 3.44's `ns3::TcpBic` (src/internet/model/
//! tcp-bic.cc), so that `bench/cc_vs_ns3.py` can show how much of a tcpvideo-vs-ns-3 gap each of
//! ns-3's choices explains. Their defaults are Linux's behaviour; set them only to emulate ns-3.
//! - `delayed_ack_ratio` = 1 (bool): divide `cnt` by the delayed-ACK EWMA as Linux does; 0 = none
//!   (ns-3).
//! - `fast_convergence_ratio` = 0 (ratio, 0 = Linux's (1 + beta)/2): W_max = ratio·cwnd on a loss
//!   below the previous W_max; ns-3 uses beta (0.8).
//! - `ss_one_per_ack` = 0 (bool): 1 = slow start adds one segment per ACK whatever it covers, and
//!   the rest of the ACK goes to congestion avoidance once cwnd reached ssthresh (ns-3's TcpBic;
//!   Linux `tcp_slow_start` adds the segments ACKed).
//! - `ns3_ai_counter` = 0 (bool): 1 = ns-3's additive-increase counter: +1 segment once *more*
//!   than `cnt` segments were ACKed since the last increase, the counter then restarts at 0
//!   (excess discarded), so at most +1 per ACK (Linux `tcp_cong_avoid_ai`: +1 per `cnt`,
//!   remainder kept, several per stretch ACK).
//! - `rto_reset` = 1 (bool): an RTO resets the BIC state, W_max included (Linux `bictcp_state`);
//!   0 keeps it (ns-3's TcpBic has no `CongestionStateSet`).
//!
//! Deviations from Linux: a jiffy is 1 ms (HZ = 1000); `pkts_acked` per ACK is the number of whole
//! segments newly delivered (cumulative + SACKed, from `acked_bytes`); the delayed-ACK EWMA runs
//! only outside recovery (Linux: only in `TCP_CA_Open`, which also excludes CA_Disorder, a state
//! this interface does not expose). Undo restores max(cwnd, prior cwnd) and the prior ssthresh
//! (Linux `tcp_reno_undo_cwnd`).

use super::reno::{SegmentWindow, UndoMarker};
use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::Time;

const BETA_SCALE: u64 = 1024;
/// Binary search goes to (max + min)/B (Linux `BICTCP_B`).
const BICTCP_B: u64 = 4;
const HZ: u64 = 1000;
/// `delayed_ack` is packets/ACK << 4 (Linux `ACK_RATIO_SHIFT`).
const ACK_RATIO_SHIFT: u32 = 4;

const PARAM_BETA: ParamInfo =
    ParamInfo { name: "beta", default: 0.8, unit: "ratio", doc: "multiplicative decrease above low_window (Linux 819/1024)" };
const PARAM_MAX_INCREMENT: ParamInfo = ParamInfo {
    name: "max_increment",
    default: 16.0,
    unit: "segments/RTT",
    doc: "S_max: largest increase per RTT during the binary search and far above W_max",
};
const PARAM_LOW_WINDOW: ParamInfo =
    ParamInfo { name: "low_window", default: 14.0, unit: "segments", doc: "at or below this cwnd, behave as Reno" };
const PARAM_SMOOTH_PART: ParamInfo = ParamInfo {
    name: "smooth_part",
    default: 20.0,
    unit: "RTTs",
    doc: "RTTs to cover the last B segments to W_max (S_min = B/smooth_part per RTT)",
};
const PARAM_FAST_CONVERGENCE: ParamInfo = ParamInfo {
    name: "fast_convergence",
    default: 1.0,
    unit: "bool",
    doc: "on a loss below the previous W_max, set W_max = cwnd*(1+beta)/2",
};
const PARAM_INITIAL_SSTHRESH: ParamInfo =
    ParamInfo { name: "initial_ssthresh", default: 0.0, unit: "segments", doc: "initial ssthresh, 0 = unlimited" };
const PARAM_DELAYED_ACK_RATIO: ParamInfo = ParamInfo {
    name: "delayed_ack_ratio",
    default: 1.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = divide cnt by the delayed-ACK ratio (Linux); 0 = none (ns-3 TcpBic)",
};
const PARAM_FAST_CONVERGENCE_RATIO: ParamInfo = ParamInfo {
    name: "fast_convergence_ratio",
    default: 0.0,
    unit: "ratio",
    doc: "not a Linux knob: W_max = ratio*cwnd on fast convergence; 0 = Linux (1+beta)/2 (ns-3: beta)",
};
const PARAM_SS_ONE_PER_ACK: ParamInfo = ParamInfo {
    name: "ss_one_per_ack",
    default: 0.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = slow start +1 segment per ACK (ns-3 TcpBic); 0 = +segments ACKed (Linux)",
};
const PARAM_NS3_AI_COUNTER: ParamInfo = ParamInfo {
    name: "ns3_ai_counter",
    default: 0.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = +1 segment once more than cnt ACKed, excess discarded (ns-3 TcpBic)",
};
const PARAM_RTO_RESET: ParamInfo = ParamInfo {
    name: "rto_reset",
    default: 1.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = an RTO resets W_max (Linux bictcp_state); 0 = keep it (ns-3 TcpBic)",
};

pub const PARAMS: &[ParamInfo] = &[
    PARAM_BETA,
    PARAM_MAX_INCREMENT,
    PARAM_LOW_WINDOW,
    PARAM_SMOOTH_PART,
    PARAM_FAST_CONVERGENCE,
    PARAM_INITIAL_SSTHRESH,
    PARAM_DELAYED_ACK_RATIO,
    PARAM_FAST_CONVERGENCE_RATIO,
    PARAM_SS_ONE_PER_ACK,
    PARAM_NS3_AI_COUNTER,
    PARAM_RTO_RESET,
];

/// BIC's parameters, typed: read from the scenario's by-name values once ([`PARAMS`] documents them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BicParams {
    pub max_increment: u64,
    pub low_window: u64,
    pub smooth_part: u64,
    pub fast_convergence: bool,
    pub delayed_ack_ratio: bool,
    pub ss_one_per_ack: bool,
    pub ns3_ai_counter: bool,
    pub rto_reset: bool,
    pub initial_ssthresh: u64,
    pub beta: u64,
    pub fc_ratio: f64,
}

impl BicParams {
    /// Read the by-name values (defaults where absent) once, converting and clamping each as
    /// the algorithm uses it.
    pub fn from_params(p: &Params) -> BicParams {
        BicParams {
            max_increment: (p.get(&PARAM_MAX_INCREMENT).max(1.0)) as u64,
            low_window: p.get(&PARAM_LOW_WINDOW).max(0.0) as u64,
            smooth_part: p.get(&PARAM_SMOOTH_PART).max(1.0) as u64,
            fast_convergence: p.get(&PARAM_FAST_CONVERGENCE) != 0.0,
            delayed_ack_ratio: p.get(&PARAM_DELAYED_ACK_RATIO) != 0.0,
            ss_one_per_ack: p.get(&PARAM_SS_ONE_PER_ACK) != 0.0,
            ns3_ai_counter: p.get(&PARAM_NS3_AI_COUNTER) != 0.0,
            rto_reset: p.get(&PARAM_RTO_RESET) != 0.0,
            initial_ssthresh: p.get(&PARAM_INITIAL_SSTHRESH).max(0.0) as u64,
            beta: ((p.get(&PARAM_BETA) * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1),
            fc_ratio: p.get(&PARAM_FAST_CONVERGENCE_RATIO),
        }
    }
}

impl Default for BicParams {
    fn default() -> Self {
        BicParams::from_params(&Params::default())
    }
}

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "bic",
    summary: "BIC-TCP binary search for the last maximum, then max probing (Linux tcp_bic)",
    reference: "Xu, Harfoush, Rhee, INFOCOM 2004; Linux net/ipv4/tcp_bic.c",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(Bic::with_params(cfg, p)),
};

fn jiffies(t: Time) -> u64 {
    t.as_nanos() / (1_000_000_000 / HZ)
}

#[derive(Clone, Debug)]
pub struct Bic {
    w: SegmentWindow,
    beta: u64,
    max_increment: u64,
    low_window: u64,
    smooth_part: u64,
    fast_convergence: bool,
    // ns-3 emulation knobs (see the header); Linux values by default.
    delayed_ack_ratio: bool,
    /// W_max after fast convergence, in 1/1024 of cwnd; `None` = Linux's (1 + beta)/2.
    fast_convergence_ratio: Option<u64>,
    ss_one_per_ack: bool,
    ns3_ai_counter: bool,
    rto_reset: bool,

    cnt: u64,
    /// W_max, segments (0 = no loss yet).
    last_max_cwnd: u64,
    last_cwnd: u64,
    last_time: u64,
    epoch_start: Option<u64>,
    /// Segments per ACK, << 4.
    delayed_ack: u64,

    /// cwnd and ssthresh before the last congestion event, for an undo.
    undo: UndoMarker,
}

impl Bic {
    pub fn new(cfg: &CcConfig) -> Bic {
        Bic::with_params(cfg, &Params::default())
    }

    pub fn with_params(cfg: &CcConfig, p: &Params) -> Bic {
        Self::with_typed_params(cfg, &BicParams::from_params(p))
    }

    /// Build from parameters already read and converted ([`BicParams::from_params`]).
    pub fn with_typed_params(cfg: &CcConfig, t: &BicParams) -> Bic {
        let mut w = SegmentWindow::new(cfg);
        let initial_ssthresh = t.initial_ssthresh;
        if initial_ssthresh > 0 {
            w.ssthresh = initial_ssthresh;
        }
        let beta = t.beta;
        let fc_ratio = t.fc_ratio;
        let mut b = Bic {
            w,
            beta,
            max_increment: t.max_increment,
            low_window: t.low_window,
            smooth_part: t.smooth_part,
            fast_convergence: t.fast_convergence,
            delayed_ack_ratio: t.delayed_ack_ratio,
            fast_convergence_ratio: (fc_ratio > 0.0).then(|| ((fc_ratio * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE)),
            ss_one_per_ack: t.ss_one_per_ack,
            ns3_ai_counter: t.ns3_ai_counter,
            rto_reset: t.rto_reset,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: None,
            delayed_ack: 0,
            undo: UndoMarker::default(),
        };
        b.reset();
        b
    }

    /// W_max in segments (0 before the first congestion event).
    pub fn w_max_segments(&self) -> u64 {
        self.last_max_cwnd
    }

    /// Linux `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.epoch_start = None;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    /// Linux `bictcp_update`.
    fn update(&mut self, now: Time) {
        let cwnd = self.w.cwnd;
        let nj = jiffies(now);
        if self.last_cwnd == cwnd && nj.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = nj;
        if self.epoch_start.is_none() {
            self.epoch_start = Some(nj);
        }
        // Start off as Reno.
        if cwnd <= self.low_window {
            self.cnt = cwnd;
            return;
        }
        let w_max = self.last_max_cwnd;
        self.cnt = if cwnd < w_max {
            // Binary search towards W_max.
            let dist = (w_max - cwnd) / BICTCP_B;
            if dist > self.max_increment {
                cwnd / self.max_increment // additive increase, S_max per RTT
            } else if dist <= 1 {
                cwnd * self.smooth_part / BICTCP_B // S_min per RTT
            } else {
                cwnd / dist
            }
        } else if cwnd < w_max + BICTCP_B {
            cwnd * self.smooth_part / BICTCP_B // just above W_max: slow
        } else if cwnd < w_max + self.max_increment * (BICTCP_B - 1) {
            cwnd * (BICTCP_B - 1) / (cwnd - w_max) // max probing: accelerating
        } else {
            cwnd / self.max_increment
        };
        // Slow start or very low utilization: at least +5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        if self.delayed_ack_ratio {
            self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack;
        }
        self.cnt = self.cnt.max(1);
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let acked = self.w.acked_segments(ack.acked_bytes);
        // Linux bictcp_acked: delayed-ACK ratio, only in the Open state.
        if !ack.in_recovery {
            let d = self.delayed_ack as i64 + acked as i64 - (self.delayed_ack >> ACK_RATIO_SHIFT) as i64;
            self.delayed_ack = d.max(1) as u64;
        }
        if ack.in_recovery || !ack.cwnd_limited || acked == 0 {
            return;
        }
        let mut acked = acked;
        if self.w.in_slow_start() {
            acked = if self.ss_one_per_ack {
                // ns-3 TcpBic: +1 segment for the ACK, not capped at ssthresh.
                self.w.cwnd += 1;
                acked - 1
            } else {
                self.w.slow_start(acked)
            };
            if acked == 0 || self.w.in_slow_start() {
                return;
            }
        }
        self.update(ack.now);
        let cnt = self.cnt;
        if self.ns3_ai_counter {
            self.w.cwnd_cnt += acked;
            if self.w.cwnd_cnt > cnt {
                self.w.cwnd += 1;
                self.w.cwnd_cnt = 0;
            }
        } else {
            self.w.cong_avoid_ai(cnt, acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, signal: CongestionSignal, _bytes_in_flight: u64) {
        let cwnd = self.w.cwnd;
        self.undo.save(&self.w);
        // Linux bictcp_recalc_ssthresh.
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            match self.fast_convergence_ratio {
                Some(r) => cwnd * r / BETA_SCALE,
                None => cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE),
            }
        } else {
            cwnd
        };
        self.w.ssthresh = if cwnd <= self.low_window { (cwnd >> 1).max(2) } else { (cwnd * self.beta / BETA_SCALE).max(2) };
        self.w.cwnd_cnt = 0;
        if signal == CongestionSignal::Timeout {
            self.w.enter_loss();
            self.on_timeout_in_loss_episode(_now, _bytes_in_flight);
        }
    }

    /// Linux `bictcp_state(TCP_CA_Loss)`, on every RTO (also one inside a loss episode).
    fn on_timeout_in_loss_episode(&mut self, _now: Time, _bytes_in_flight: u64) {
        if self.rto_reset {
            self.reset();
        }
    }

    fn on_spurious_congestion(&mut self, _now: Time) {
        self.undo.undo(&mut self.w);
    }

    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
        // BIC has no cwnd_event hook in Linux: only tcp_cwnd_restart applies.
        self.w.cwnd_restart(restart_window_bytes);
    }

    fn cwnd(&self) -> u64 {
        self.w.cwnd_bytes()
    }

    fn set_cwnd(&mut self, bytes: u64) {
        self.w.set_cwnd_bytes(bytes);
    }

    fn ssthresh(&self) -> u64 {
        self.w.ssthresh_bytes()
    }

    fn set_ssthresh(&mut self, bytes: u64) {
        self.w.set_ssthresh_bytes(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_parameters_default_to_the_linux_module_parameters() {
        let t = BicParams::default();
        assert_eq!((t.beta, t.max_increment, t.low_window, t.smooth_part), (819, 16, 14, 20));
        assert!(t.fast_convergence && t.delayed_ack_ratio);
        let over = BicParams::from_params(&params(&[("smooth_part", 0.0), ("low_window", -3.0)]));
        assert_eq!((over.smooth_part, over.low_window), (1, 0), "clamped to at least 1 and 0");
    }
    use crate::cc::testing::{one_round, AckClock};
    use std::time::Duration;

    const MSS: u64 = 1448;
    const RTT: Duration = Duration::from_millis(100);

    /// Loss at `w_max` segments, then `rounds` rounds; returns cwnd (segments) after each round.
    fn trajectory_after_loss(w_max: u64, rounds: usize) -> Vec<u64> {
        let mut cc = Bic::new(&CcConfig::default());
        let mut t = one_round(&mut cc, Time::ZERO, RTT, MSS);
        cc.set_cwnd(w_max * MSS);
        cc.on_congestion_event(t, CongestionSignal::FastRetransmit, w_max * MSS);
        cc.on_recovery_exit(t);
        let mut out = vec![cc.cwnd() / MSS];
        for _ in 0..rounds {
            t = one_round(&mut cc, t, RTT, MSS);
            out.push(cc.cwnd() / MSS);
        }
        out
    }

    #[test]
    fn binary_search_halves_the_distance_to_w_max_then_probes_slowly() {
        let w_max = 1000u64;
        let tr = trajectory_after_loss(w_max, 80);
        assert_eq!(tr[0], 799, "beta = 819/1024");
        // Far below W_max: additive increase bounded by S_max (×31/16 delayed-ACK ratio).
        for win in tr.windows(2).filter(|p| w_max - p[0].min(w_max) > 4 * 16 + 3) {
            assert!(win[1] - win[0] <= 2 * 16 + 1, "step {win:?}");
        }
        // Binary search: within 4·S_max of W_max the distance shrinks geometrically.
        let search: Vec<u64> = tr.iter().map(|&c| w_max.saturating_sub(c)).filter(|&d| (8..=67).contains(&d)).collect();
        assert!(search.len() >= 2 && search.len() <= 6, "log steps, not linear: {search:?} in {tr:?}");
        for d in search.windows(2) {
            let ratio = d[1] as f64 / d[0] as f64;
            assert!((0.3..=0.75).contains(&ratio), "distance {d:?} in {tr:?}");
        }
        // It never overshoots during the search; it lingers around W_max (S_min = 0.2/RTT ×31/16).
        let first_close = tr.iter().position(|&c| c + 8 > w_max).unwrap();
        assert!(tr[..first_close].iter().all(|&c| c <= w_max));
        let lingering = tr.iter().filter(|&&c| c + 8 > w_max && c < w_max + BICTCP_B).count();
        assert!(lingering >= 15, "plateau around W_max lasted {lingering} rounds: {tr:?}");
        // Max probing: past W_max + B the steps grow again.
        let probe_start = tr.iter().position(|&c| c >= w_max + BICTCP_B).expect("probing beyond W_max");
        let steps: Vec<u64> = tr[probe_start..].windows(2).map(|p| p[1] - p[0]).take(6).collect();
        assert!(steps.last() > steps.first() && steps.windows(2).all(|s| s[1] >= s[0]), "accelerating probe {steps:?}");
    }

    fn params(kv: &[(&str, f64)]) -> Params {
        Params(kv.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    /// Segments added in one round of `cwnd` segments ACKed `per_ack` at a time, far below W_max
    /// (cnt = cwnd / max_increment), after `warm` rounds that let the delayed-ACK ratio settle.
    fn growth_per_round(per_ack: u64, warm: usize) -> u64 {
        growth_per_round_with(per_ack, warm, &Params::default())
    }

    fn growth_per_round_with(per_ack: u64, warm: usize, p: &Params) -> u64 {
        let mut cc = Bic::with_params(&CcConfig::default(), p);
        cc.set_cwnd(2000 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.set_cwnd(400 * MSS); // W_max 2000: dist/B > 16, additive increase
        cc.w.ssthresh = 400;
        let mut t = Time::ZERO;
        let mut before = 0;
        for _ in 0..=warm {
            before = cc.cwnd() / MSS;
            let mut clock = AckClock::refilling(RTT, before * MSS);
            for _ in 0..before / per_ack {
                t += Duration::from_micros(100);
                cc.on_ack(&clock.ack(t, per_ack * MSS));
            }
        }
        cc.cwnd() / MSS - before
    }

    #[test]
    fn delayed_ack_ratio_counts_segments_per_ack_as_linux_bictcp_acked() {
        // cnt = cwnd/16 (S_max = 16 per RTT), divided by delayed_ack/16; tcp_cong_avoid_ai counts
        // segments. One segment per ACK: ratio 31/16 -> ~31 per RTT. Two per ACK (delayed ACKs):
        // ratio 2 -> ~32. Eight per ACK (stretch): ratio 8 -> ~128.
        let one = growth_per_round(1, 3);
        let two = growth_per_round(2, 3);
        let eight = growth_per_round(8, 3);
        assert!((30..=32).contains(&one), "1 segment/ACK: +{one}");
        assert!((31..=33).contains(&two), "2 segments/ACK: +{two}");
        assert!((120..=136).contains(&eight), "8 segments/ACK: +{eight}");
    }

    #[test]
    fn ns3_knobs_off_by_default_and_each_changes_growth_as_ns3_tcpbic() {
        // No delayed-ACK ratio: one segment per ACK grows by S_max = 16 per RTT (cnt = 400/16),
        // not ~31 as Linux's ratio of 31/16 makes it.
        let plain = growth_per_round_with(1, 3, &params(&[("delayed_ack_ratio", 0.0)]));
        assert!((15..=17).contains(&plain), "no ratio, 1 segment/ACK: +{plain}");
        // Stretch ACKs of 8: Linux tcp_cong_avoid_ai (no ratio) still adds 400/25 = 16; ns-3's
        // counter adds one segment once more than 25 were ACKed (every 4th ACK, 32 segments) and
        // drops the excess: 400/32 = 12.5 per round (cnt and the carried counter move a little
        // as cwnd grows).
        let ai = growth_per_round_with(8, 3, &params(&[("delayed_ack_ratio", 0.0)]));
        let ns3 = growth_per_round_with(8, 3, &params(&[("delayed_ack_ratio", 0.0), ("ns3_ai_counter", 1.0)]));
        assert!((15..=17).contains(&ai), "Linux counter: +{ai}");
        assert!((12..=14).contains(&ns3) && ns3 < ai, "ns-3 counter: +{ns3}");
    }

    #[test]
    fn ns3_slow_start_adds_one_segment_per_ack() {
        // Delayed ACKs (2 segments each) over one round of 20 segments: Linux doubles to 40,
        // ns-3's TcpBic adds one per ACK: 30.
        for (p, expected) in [(Params::default(), 40), (params(&[("ss_one_per_ack", 1.0)]), 30)] {
            let mut cc = Bic::with_params(&CcConfig::default(), &p);
            cc.set_cwnd(20 * MSS);
            let mut t = Time::ZERO;
            let mut clock = AckClock::refilling(RTT, 20 * MSS);
            for _ in 0..10 {
                t += Duration::from_millis(1);
                cc.on_ack(&clock.ack(t, 2 * MSS));
            }
            assert_eq!(cc.cwnd() / MSS, expected, "{p:?}");
        }
    }

    #[test]
    fn ns3_fast_convergence_ratio_and_rto_keeping_w_max() {
        let mut cc = Bic::with_params(&CcConfig::default(), &params(&[("fast_convergence_ratio", 0.8), ("rto_reset", 0.0)]));
        cc.set_cwnd(1000 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.set_cwnd(900 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        assert!(cc.w_max_segments().abs_diff(720) <= 1, "ns-3: W_max = beta * cwnd, got {}", cc.w_max_segments());
        cc.on_congestion_event(Time::ZERO, CongestionSignal::Timeout, 0);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.w_max_segments(), 900, "ns-3 keeps W_max over an RTO (set from cwnd 900 at the timeout)");
    }

    #[test]
    fn fast_convergence_lowers_w_max_after_a_loss_below_it() {
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(1000 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        assert_eq!(cc.w_max_segments(), 1000);
        cc.set_cwnd(900 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        let expected = (900.0 * (1.0 + 0.8) / 2.0) as u64;
        assert!(cc.w_max_segments().abs_diff(expected) <= 1, "{}", cc.w_max_segments());
    }

    #[test]
    fn small_windows_halve_like_reno() {
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(12 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        assert_eq!(cc.ssthresh(), 6 * MSS);
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(100 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        assert_eq!(cc.ssthresh(), 79 * MSS, "100 * 819/1024");
    }

    #[test]
    fn restart_after_idle_raises_ssthresh_to_three_quarters_of_the_old_window() {
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(100 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.on_recovery_exit(Time::ZERO);
        cc.set_cwnd(160 * MSS);
        cc.on_restart_after_idle(Time::from_secs(3), 10 * MSS);
        assert_eq!((cc.cwnd() / MSS, cc.ssthresh() / MSS), (10, 120));
    }

    #[test]
    fn a_timeout_inside_a_recovery_episode_resets_w_max_without_a_second_cut() {
        // Linux tcp_enter_loss during Recovery: no second ssthresh(), but set_state(TCP_CA_Loss)
        // runs bictcp_reset.
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(100 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        let ssthresh = cc.ssthresh();
        assert_eq!(cc.w_max_segments(), 100);
        cc.on_timeout_in_loss_episode(Time::from_secs(1), 0);
        assert_eq!(cc.w_max_segments(), 0);
        assert_eq!(cc.ssthresh(), ssthresh);
    }

    #[test]
    fn timeout_resets_w_max() {
        let mut cc = Bic::new(&CcConfig::default());
        cc.set_cwnd(100 * MSS);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::Timeout, 0);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.w_max_segments(), 0);
    }

    #[test]
    fn two_flows_converge_to_a_fair_share_of_a_shared_bottleneck() {
        // 20 Mbit/s, 20 ms, one-BDP drop-tail buffer; the second flow joins 5 s later.
        let link = crate::units::Bandwidth::from_mbps(20);
        let shares = crate::cc::testing_path::two_flow_shares(
            || Box::new(Bic::new(&CcConfig::default())),
            link,
            Duration::from_millis(20),
            35,
            Time::from_secs(5),
            Time::from_secs(40),
            Time::from_secs(80),
        );
        let jain = crate::cc::testing_path::jain_index(&shares);
        let utilization = (shares[0] + shares[1]) as f64 * 8.0 / (link.bits_per_sec as f64 * 40.0);
        assert!(jain >= 0.97, "Jain index {jain:.3}, bytes {shares:?}");
        assert!(utilization >= 0.95, "utilization {utilization:.3}");
    }
}
