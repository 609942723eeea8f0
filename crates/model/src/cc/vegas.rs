//! TCP Vegas, as Linux `net/ipv4/tcp_vegas.c` (6.x) runs it.
//!
//! What it models: Brakmo & Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995, §3.2 (congestion avoidance) and §3.3 (modified slow start).
//! Vegas estimates how many of its own segments sit in the bottleneck queue and keeps that number
//! between α and β: once per RTT it compares the window with what the base RTT (the smallest RTT
//! ever seen, the propagation delay) would need, Diff = cwnd·(RTT − BaseRTT)/BaseRTT, using as
//! RTT the *minimum* sample of the last round (filters delayed ACKs). Diff < α: +1 segment;
//! Diff > β: −1 segment; otherwise hold. In slow start, Diff > γ ends slow start and sets cwnd to
//! the rate actually achieved, cwnd·BaseRTT/RTT + 1. Losses are handled as Reno (halve). This is
//! the algorithm seed 004 (Kupka et al.) found to avoid the queue overflows that CUBIC and BIC
//! cause for synchronized on-off live-segment downloads.
//!
//! Linux specifics we mirror:
//! - Diff divides by BaseRTT (Linux `diff = cwnd*(rtt-baseRTT)/baseRTT`); the paper's
//!   (Expected − Actual)·BaseRTT equals cwnd·(RTT − BaseRTT)/RTT. The Linux form is larger by the
//!   factor RTT/BaseRTT, so Linux Vegas holds slightly fewer than α..β segments in the queue.
//! - RTT samples are µs + 1; the once-per-RTT step happens on the first ACK beyond the `snd_nxt`
//!   recorded at the previous step. With ≤ 2 RTT samples in that round (likely all delayed ACKs)
//!   the step is a plain Reno step (`tcp_reno_cong_avoid`).
//! - Slow start doubles every RTT like Reno (Linux: "to avoid the performance penalty imposed by
//!   increasing cwnd only every-other RTT"), not every other RTT as in the paper; the paper's
//!   behaviour is available with `slow_start_every_other_rtt` = 1.
//! - Vegas runs only in the Open state: during recovery it is off, and when it comes back it waits
//!   a full round of fresh samples. After idle (`CA_EVENT_TX_START`, `CA_EVENT_CWND_RESTART`) it
//!   restarts from scratch, *forgetting BaseRTT* — which matters for on-off traffic: every
//!   segment download re-learns the base RTT from its first round (and measures any standing
//!   queue of other flows as propagation delay). A window restart (slow start after idle) first
//!   raises ssthresh to ¾ of the old cwnd, as Linux `tcp_cwnd_restart` does.
//! - Between round boundaries only slow start grows the window; congestion avoidance changes it
//!   only at the boundary. Leaving slow start and each −1 step set ssthresh = min(ssthresh,
//!   cwnd) (`tcp_vegas_ssthresh`, 6.x; older kernels cwnd − 1); after each step
//!   ssthresh = max(ssthresh, ¾·cwnd) (`tcp_current_ssthresh`). cwnd ≥ 2. Loss:
//!   ssthresh = max(cwnd/2, 2) (`tcp_reno_ssthresh`).
//!
//! What this means on a shared bottleneck (as in Linux, and seen on the seed-004 dumbbell, 10
//! flows at 100 Mbit/s): slow start doubles per RTT and the round minimum RTT lags the queue, so
//! the first flows leave slow start one doubling late, and the window they keep is reduced by one
//! segment per RTT only. Flows that start while that queue stands take it into their BaseRTT for
//! good and hold it (Low, Peterson & Wang, JACM 2002), so the queue can persist for minutes.
//! Vegas also depends on ≥ 3 RTT samples per round: a receiver that sends stretch ACKs (one per
//! delayed-ACK timeout) puts it on its Reno fallback, which only grows.
//!
//! Parameters: `alpha` = 2, `beta` = 4, `gamma` = 1 (segments queued),
//! `slow_start_every_other_rtt` = 0 (bool, not in Linux), and three knobs that are NOT Linux and
//! exist only to reproduce ns-3 3.44's `TcpVegas` for validation (bench/cc_vs_ns3.py), all 0 =
//! Linux by default:
//! - `rtt_from_srtt` (bool): Vegas's RTT input is the smoothed RTT on every ACK. ns-3's
//!   `TcpSocketBase::ProcessAck` calls `PktsAcked(tcb, segsAcked, m_tcb->m_srtt)`, so ns-3's
//!   baseRTT is the minimum SRTT and its "minimum RTT of the round" is the minimum SRTT, and every
//!   ACK counts as a sample (its `cntRTT <= 2` Reno fallback practically never triggers). Linux
//!   hands `tcp_vegas_pkts_acked` the RTT of the newest segment this ACK delivered (`ca_rtt_us`).
//!   This is what changes the dynamics most: the per-ACK minimum of a round sees no queue until
//!   the window exceeds the pipe for a whole round, so Linux leaves slow start late on a large
//!   queue; an average rises within the round with the queue each slow-start burst builds, so
//!   ns-3 leaves slow start early, before any standing queue — and later flows never measure one
//!   into their base RTT.
//! - `diff_over_rtt` (bool): ns-3's diff = cwnd − ⌊cwnd·baseRTT/RTT⌋, i.e. divided by the RTT and
//!   rounded up, against Linux's ⌊cwnd·(RTT − baseRTT)/baseRTT⌋.
//! - `slow_start_one_per_ack` (bool): ns-3's `TcpNewReno::SlowStart` adds one segment per ACK
//!   (×1.5 per RTT with delayed ACKs), Linux `tcp_slow_start` the segments ACKed (×2).
//!
//! Deviations from Linux: sequence numbers are emulated from bytes (a round ends when the bytes
//! delivered, counted from `acked_bytes`, exceed delivered + in-flight at the previous boundary);
//! Vegas re-enables on the first ACK outside recovery (Linux: at the switch to `TCP_CA_Open`,
//! within the same ACK), and CA_Disorder (dupACKs without loss) is not visible here, so Vegas keeps
//! running in it.

use super::reno::{SegmentWindow, UndoMarker};
use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::Time;

const RTT_INFINITE_US: u64 = 0x7fff_ffff;

const PARAM_ALPHA: ParamInfo =
    ParamInfo { name: "alpha", default: 2.0, unit: "segments", doc: "grow when fewer than this many segments are queued" };
const PARAM_BETA: ParamInfo =
    ParamInfo { name: "beta", default: 4.0, unit: "segments", doc: "shrink when more than this many segments are queued" };
const PARAM_GAMMA: ParamInfo =
    ParamInfo { name: "gamma", default: 1.0, unit: "segments", doc: "leave slow start when more than this many are queued" };
const PARAM_SLOW_START_EVERY_OTHER_RTT: ParamInfo = ParamInfo {
    name: "slow_start_every_other_rtt",
    default: 0.0,
    unit: "bool",
    doc: "grow in slow start only every other RTT (Brakmo & Peterson; Linux does not)",
};
const PARAM_RTT_FROM_SRTT: ParamInfo = ParamInfo {
    name: "rtt_from_srtt",
    default: 0.0,
    unit: "bool",
    doc: "not Linux: feed Vegas the smoothed RTT on every ACK instead of the ACK's RTT sample (ns-3 3.44)",
};
const PARAM_DIFF_OVER_RTT: ParamInfo = ParamInfo {
    name: "diff_over_rtt",
    default: 0.0,
    unit: "bool",
    doc: "not Linux: diff = cwnd - floor(cwnd*base/rtt) instead of cwnd*(rtt-base)/base (ns-3)",
};
const PARAM_SLOW_START_ONE_PER_ACK: ParamInfo = ParamInfo {
    name: "slow_start_one_per_ack",
    default: 0.0,
    unit: "bool",
    doc: "not Linux: slow start adds 1 segment per ACK, not the segments ACKed (ns-3 TcpNewReno)",
};

pub const PARAMS: &[ParamInfo] = &[
    PARAM_ALPHA,
    PARAM_BETA,
    PARAM_GAMMA,
    PARAM_SLOW_START_EVERY_OTHER_RTT,
    PARAM_RTT_FROM_SRTT,
    PARAM_DIFF_OVER_RTT,
    PARAM_SLOW_START_ONE_PER_ACK,
];

/// Vegas's parameters, typed: read from the scenario's by-name values once ([`PARAMS`] documents them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasParams {
    pub alpha: u64,
    pub beta: u64,
    pub gamma: u64,
    pub every_other_rtt: bool,
    pub rtt_from_srtt: bool,
    pub diff_over_rtt: bool,
    pub slow_start_one_per_ack: bool,
}

impl VegasParams {
    /// Read the by-name values (defaults where absent) once, converting and clamping each as
    /// the algorithm uses it.
    pub fn from_params(p: &Params) -> VegasParams {
        VegasParams {
            alpha: p.get(&PARAM_ALPHA).max(0.0) as u64,
            beta: p.get(&PARAM_BETA).max(0.0) as u64,
            gamma: p.get(&PARAM_GAMMA).max(0.0) as u64,
            every_other_rtt: p.get(&PARAM_SLOW_START_EVERY_OTHER_RTT) != 0.0,
            rtt_from_srtt: p.get(&PARAM_RTT_FROM_SRTT) != 0.0,
            diff_over_rtt: p.get(&PARAM_DIFF_OVER_RTT) != 0.0,
            slow_start_one_per_ack: p.get(&PARAM_SLOW_START_ONE_PER_ACK) != 0.0,
        }
    }
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams::from_params(&Params::default())
    }
}

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "vegas",
    summary: "TCP Vegas: keep alpha..beta segments queued, from RTT vs base RTT (Linux tcp_vegas)",
    reference: "Brakmo & Peterson, IEEE JSAC 1995; Linux net/ipv4/tcp_vegas.c",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(Vegas::with_params(cfg, p)),
};

#[derive(Clone, Debug)]
pub struct Vegas {
    w: SegmentWindow,
    alpha: u64,
    beta: u64,
    gamma: u64,
    every_other_rtt: bool,
    rtt_from_srtt: bool,
    diff_over_rtt: bool,
    slow_start_one_per_ack: bool,

    doing_vegas_now: bool,
    /// Emulated `beg_snd_nxt`: delivered + in flight (bytes) at the last round boundary.
    beg_snd_nxt_bytes: u64,
    /// RTT samples in this round (Linux `cntRTT`).
    cnt_rtt: u32,
    /// Smallest RTT of this round, µs + 1 (Linux `minRTT`).
    min_rtt_us: u64,
    /// Smallest RTT since the last (re)start, µs + 1 (Linux `baseRTT`).
    base_rtt_us: u64,

    ss_grow_this_round: bool,
    delivered_bytes: u64,
    /// cwnd and ssthresh before the last congestion event, for an undo.
    undo: UndoMarker,
}

impl Vegas {
    pub fn new(cfg: &CcConfig) -> Vegas {
        Vegas::with_params(cfg, &Params::default())
    }

    pub fn with_params(cfg: &CcConfig, p: &Params) -> Vegas {
        Self::with_typed_params(cfg, &VegasParams::from_params(p))
    }

    /// Build from parameters already read and converted ([`VegasParams::from_params`]).
    pub fn with_typed_params(cfg: &CcConfig, t: &VegasParams) -> Vegas {
        let mut v = Vegas {
            w: SegmentWindow::new(cfg),
            alpha: t.alpha,
            beta: t.beta,
            gamma: t.gamma,
            every_other_rtt: t.every_other_rtt,
            rtt_from_srtt: t.rtt_from_srtt,
            diff_over_rtt: t.diff_over_rtt,
            slow_start_one_per_ack: t.slow_start_one_per_ack,
            doing_vegas_now: false,
            beg_snd_nxt_bytes: 0,
            cnt_rtt: 0,
            min_rtt_us: RTT_INFINITE_US,
            base_rtt_us: RTT_INFINITE_US,
            ss_grow_this_round: true,
            delivered_bytes: 0,
            undo: UndoMarker::default(),
        };
        v.init(0);
        v
    }

    /// Base RTT (µs) Vegas currently measures against, if it has one.
    pub fn base_rtt_us(&self) -> Option<u64> {
        (self.base_rtt_us != RTT_INFINITE_US).then_some(self.base_rtt_us)
    }

    /// Linux `tcp_vegas_init`: forget BaseRTT and start a fresh round.
    fn init(&mut self, snd_nxt_bytes: u64) {
        self.base_rtt_us = RTT_INFINITE_US;
        self.enable(snd_nxt_bytes);
    }

    /// Linux `vegas_enable`.
    fn enable(&mut self, snd_nxt_bytes: u64) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt_bytes = snd_nxt_bytes;
        self.cnt_rtt = 0;
        self.min_rtt_us = RTT_INFINITE_US;
    }

    /// Linux `tcp_reno_cong_avoid`.
    fn reno_cong_avoid(&mut self, mut acked: u64, cwnd_limited: bool) {
        if !cwnd_limited || acked == 0 {
            return;
        }
        if self.w.in_slow_start() {
            if self.slow_start_one_per_ack {
                self.w.slow_start(acked.min(1));
                return;
            }
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.w.cwnd;
        self.w.cong_avoid_ai(cwnd, acked);
    }

    fn slow_start(&mut self, acked: u64) {
        if !self.every_other_rtt || self.ss_grow_this_round {
            // ns-3 TcpNewReno::SlowStart: one segment per ACK that acknowledges anything.
            let acked = if self.slow_start_one_per_ack { acked.min(1) } else { acked };
            self.w.slow_start(acked);
        }
    }

    /// Linux 6.x `tcp_vegas_ssthresh`: min(ssthresh, cwnd). (Older kernels, with the
    /// `in_flight` cong_avoid interface, used cwnd − 1; the window is in congestion avoidance
    /// either way, since slow start is cwnd < ssthresh.)
    fn vegas_ssthresh(&self) -> u64 {
        self.w.ssthresh.min(self.w.cwnd)
    }

    /// Once-per-RTT Vegas step (the body of Linux `tcp_vegas_cong_avoid` at a round boundary).
    fn vegas_step(&mut self, acked: u64) {
        let rtt = self.min_rtt_us;
        let base = self.base_rtt_us.max(1);
        let cwnd = self.w.cwnd;
        let target_cwnd = cwnd * base / rtt.max(1);
        let diff = if self.diff_over_rtt {
            // ns-3: segCwnd − ⌊segCwnd·baseRtt/minRtt⌋ = ⌈cwnd·(rtt − base)/rtt⌉ (roughly).
            cwnd - target_cwnd.min(cwnd)
        } else {
            cwnd * rtt.saturating_sub(base) / base
        };
        if diff > self.gamma && self.w.in_slow_start() {
            // Going too fast: leave slow start at the rate actually achieved.
            self.w.cwnd = cwnd.min(target_cwnd + 1);
            self.w.ssthresh = self.vegas_ssthresh();
        } else if self.w.in_slow_start() {
            self.slow_start(acked);
        } else if diff > self.beta {
            self.w.cwnd -= 1;
            self.w.ssthresh = self.vegas_ssthresh();
        } else if diff < self.alpha {
            self.w.cwnd += 1;
        }
        self.w.cwnd = self.w.cwnd.max(2);
        // tcp_current_ssthresh (Open state).
        self.w.ssthresh = self.w.current_ssthresh();
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let acked = self.w.acked_segments(ack.acked_bytes);
        self.delivered_bytes += ack.acked_bytes;
        // Linux tcp_vegas_pkts_acked: runs on every ACK with an RTT sample.
        // ns-3 3.44 TcpSocketBase hands PktsAcked m_tcb->m_srtt (never zero after the handshake),
        // so with `rtt_from_srtt` every ACK is a "sample" of the smoothed RTT.
        let sample = if self.rtt_from_srtt { Some(ack.srtt) } else { ack.rtt_sample };
        if let Some(rtt) = sample {
            let vrtt = rtt.as_micros() as u64 + 1;
            self.base_rtt_us = self.base_rtt_us.min(vrtt);
            self.min_rtt_us = self.min_rtt_us.min(vrtt);
            self.cnt_rtt += 1;
        }
        if ack.in_recovery {
            return;
        }
        let snd_nxt = self.delivered_bytes + ack.bytes_in_flight;
        if !self.doing_vegas_now {
            // Back in Open after a congestion event: tcp_vegas_state(TCP_CA_Open).
            self.enable(snd_nxt);
        }
        if self.delivered_bytes > self.beg_snd_nxt_bytes {
            self.beg_snd_nxt_bytes = snd_nxt;
            if self.cnt_rtt <= 2 {
                // Too few samples to trust (probably delayed ACKs only): behave as Reno.
                self.reno_cong_avoid(acked, ack.cwnd_limited);
            } else {
                self.vegas_step(acked);
            }
            self.cnt_rtt = 0;
            self.min_rtt_us = RTT_INFINITE_US;
            self.ss_grow_this_round = !self.ss_grow_this_round;
        } else if self.w.in_slow_start() && acked > 0 {
            self.slow_start(acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, signal: CongestionSignal, _bytes_in_flight: u64) {
        let cwnd = self.w.cwnd;
        self.undo.save(&self.w);
        // tcp_reno_ssthresh, then tcp_vegas_state(Recovery/Loss) switches Vegas off.
        self.w.ssthresh = (cwnd / 2).max(2);
        self.w.cwnd_cnt = 0;
        self.doing_vegas_now = false;
        if signal == CongestionSignal::Timeout {
            self.w.enter_loss();
        }
    }

    fn on_spurious_congestion(&mut self, _now: Time) {
        self.undo.undo(&mut self.w);
    }

    /// Linux `tcp_vegas_cwnd_event(CA_EVENT_TX_START)`: tcp_vegas_init. Nothing is in flight.
    fn on_tx_start(&mut self, _now: Time, _app_limited: bool) {
        let snd_nxt = self.delivered_bytes;
        self.init(snd_nxt);
    }

    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
        // CA_EVENT_CWND_RESTART: tcp_vegas_init too. Nothing is in flight.
        let snd_nxt = self.delivered_bytes;
        self.init(snd_nxt);
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
        let t = VegasParams::default();
        assert_eq!((t.alpha, t.beta, t.gamma), (2, 4, 1));
        assert!(!t.rtt_from_srtt && !t.diff_over_rtt && !t.slow_start_one_per_ack);
        let mut p = Params::default();
        p.0.insert("alpha".into(), 3.0);
        assert_eq!(VegasParams::from_params(&p).alpha, 3);
    }
    use crate::cc::testing::{ack, AckClock};
    use crate::cc::testing_path::SharedPath;
    use crate::units::Bandwidth;
    use std::time::Duration;

    const MSS: u64 = 1448;

    /// One synthetic round: every segment of the window ACKed at `rtt` spacing, RTT samples only
    /// on the first `samples` ACKs (the rest Karn-excluded).
    fn round(cc: &mut Vegas, start: Time, rtt: Duration, samples: usize) -> Time {
        let segs = cc.cwnd() / MSS;
        let step = rtt / segs as u32;
        let mut t = start;
        let mut clock = AckClock::new(rtt);
        clock.send(segs * MSS);
        for i in 0..segs as usize {
            t += step;
            let mut a = clock.ack(t, MSS);
            if i >= samples {
                a.rtt_sample = None;
            }
            cc.on_ack(&a);
        }
        t
    }

    fn in_congestion_avoidance_at(cwnd: u64) -> Vegas {
        let mut cc = Vegas::new(&CcConfig::default());
        cc.w.cwnd = cwnd;
        cc.w.ssthresh = cwnd;
        cc
    }

    #[test]
    fn queue_stays_between_alpha_and_beta_once_converged() {
        // 12 Mbit/s, 40 ms: BDP ≈ 42 segments; a 300-segment buffer never overflows. Slow start
        // overshoots (the round-minimum RTT lags the queue), then Vegas drains 1 segment per RTT.
        let mut path = SharedPath::new(Bandwidth::from_mbps(12), 300, MSS);
        path.add_flow(Box::new(Vegas::new(&CcConfig::default())), Duration::from_millis(40), Time::ZERO);
        let mut waiting = Vec::new();
        path.run_until(Time::from_secs(25), |p, _| {
            if p.now > Time::from_secs(15) {
                // Segments waiting behind the one in service: what Vegas' Diff estimates.
                waiting.push(p.queue_len().saturating_sub(1) as f64);
            }
        });
        assert_eq!(path.flows[0].sender.drops, 0);
        let mean = waiting.iter().sum::<f64>() / waiting.len() as f64;
        let (lo, hi) = waiting.iter().fold((f64::MAX, 0.0f64), |(l, h), &q| (l.min(q), h.max(q)));
        assert!((2.0..=4.0).contains(&mean), "mean queue {mean:.2}");
        assert!(lo >= 1.0 && hi <= 5.0, "queue range {lo}..{hi} (α - 1 ..= β + 1)");
        // And the link stays busy: the queue never empties.
        let mbit = (path.flows[0].sender.delivered * MSS * 8) as f64 / 1e6;
        assert!(mbit >= 0.95 * 12.0 * 24.5, "{mbit:.1} Mbit delivered");
    }

    #[test]
    fn congestion_avoidance_steps_by_one_segment_per_round_on_diff() {
        let base = Duration::from_millis(50);
        // diff = cwnd·(rtt−base)/base: 40·(60−50)/50 = 8 > β → −1.
        let mut cc = in_congestion_avoidance_at(40);
        let t = round(&mut cc, Time::ZERO, base, 40); // learn base RTT (diff 0 → +1)
        assert_eq!(cc.cwnd() / MSS, 40, "first boundary is the first ACK of the next round");
        let t = round(&mut cc, t, Duration::from_millis(60), 41);
        assert_eq!(cc.cwnd() / MSS, 41, "boundary used the 50 ms round: diff 0 < α → +1");
        round(&mut cc, t, Duration::from_millis(60), 41);
        assert_eq!(cc.cwnd() / MSS, 40, "60 ms round: diff 8 > β → −1");
        // diff = 40·(53−50)/50 = 2.4 → 2 ∈ [α, β]: hold.
        let mut cc = in_congestion_avoidance_at(40);
        let t = round(&mut cc, Time::ZERO, base, 40);
        let t = round(&mut cc, t, Duration::from_millis(53), 41);
        let before = cc.cwnd();
        round(&mut cc, t, Duration::from_millis(53), 41);
        assert_eq!(cc.cwnd(), before);
    }

    #[test]
    fn leaving_slow_start_and_shrinking_set_ssthresh_to_cwnd() {
        // Linux 6.x tcp_vegas_ssthresh = min(ssthresh, cwnd) (older kernels: cwnd − 1);
        // tcp_current_ssthresh then keeps max(that, ¾·cwnd) = cwnd.
        let base = Duration::from_millis(50);
        let mut cc = Vegas::new(&CcConfig::default());
        let mut t = Time::ZERO;
        while cc.in_slow_start() {
            // 70 ms rounds after the first: diff = cwnd·20/50 > γ at the first boundary.
            let rtt = if t == Time::ZERO { base } else { Duration::from_millis(70) };
            t = round(&mut cc, t, rtt, usize::MAX);
            assert!(t < Time::from_secs(2), "never left slow start");
        }
        assert_eq!(cc.ssthresh(), cc.cwnd(), "cwnd {}", cc.cwnd() / MSS);
        let before = cc.cwnd() / MSS;
        round(&mut cc, t, Duration::from_millis(70), usize::MAX);
        assert_eq!(cc.cwnd() / MSS, before - 1, "diff > β: −1");
        assert_eq!(cc.ssthresh() / MSS, before - 1);
    }

    #[test]
    fn too_few_rtt_samples_fall_back_to_reno() {
        let base = Duration::from_millis(50);
        let mut cc = in_congestion_avoidance_at(40);
        let mut t = round(&mut cc, Time::ZERO, base, 40);
        t = round(&mut cc, t, Duration::from_millis(80), 2);
        for _ in 0..5 {
            t = round(&mut cc, t, Duration::from_millis(80), 2);
        }
        // With 3 samples per round the same RTT inflation shrinks the window every round.
        assert!(cc.cwnd() / MSS >= 40, "Reno fallback never shrinks: {}", cc.cwnd() / MSS);
        let mut cc = in_congestion_avoidance_at(40);
        let mut t = round(&mut cc, Time::ZERO, base, 40);
        for _ in 0..6 {
            t = round(&mut cc, t, Duration::from_millis(80), 3);
        }
        assert!(cc.cwnd() / MSS <= 36, "Vegas shrinks: {}", cc.cwnd() / MSS);
    }

    #[test]
    fn slow_start_ends_on_queueing_delay_where_reno_overflows_the_buffer() {
        let run = |cc: Box<dyn CongestionControl>| {
            let mut path = SharedPath::new(Bandwidth::from_mbps(12), 150, MSS);
            path.add_flow(cc, Duration::from_millis(40), Time::ZERO);
            let mut exit = None;
            path.run_until(Time::from_secs(3), |p, i| {
                if exit.is_none() && !p.flows[i].cc.in_slow_start() {
                    exit = Some((p.flows[i].sender.drops, p.queue_len()));
                }
            });
            (exit, path.flows[0].sender.drops)
        };
        let (exit, drops) = run(Box::new(Vegas::new(&CcConfig::default())));
        let (drops_at_exit, queue_at_exit) = exit.expect("Vegas left slow start");
        assert_eq!((drops_at_exit, drops), (0, 0), "no loss at all");
        assert!(queue_at_exit > 1, "left on a standing queue (Diff > γ): {queue_at_exit}");
        let (_, reno_drops) = run(Box::new(crate::cc::reno::Reno::new(&CcConfig::default())));
        assert!(reno_drops > 0, "Reno overflows the same 150-segment buffer");
    }

    #[test]
    fn every_other_rtt_slow_start_is_slower_than_linux_default() {
        let rtt = Duration::from_millis(50);
        let run = |p: &Params| {
            let mut cc = Vegas::with_params(&CcConfig::default(), p);
            let mut t = Time::ZERO;
            for _ in 0..4 {
                t = round(&mut cc, t, rtt, usize::MAX);
            }
            cc.cwnd() / MSS
        };
        let linux = run(&Params::default());
        let paper = run(&Params([("slow_start_every_other_rtt".to_string(), 1.0)].into_iter().collect()));
        assert_eq!(linux, 160, "doubling every RTT");
        assert!(paper <= 60, "every other RTT: {paper}");
    }

    #[test]
    fn restart_after_idle_forgets_the_base_rtt() {
        let mut cc = in_congestion_avoidance_at(40);
        let mut t = round(&mut cc, Time::ZERO, Duration::from_millis(50), 40);
        t = round(&mut cc, t, Duration::from_millis(50), 40);
        assert_eq!(cc.base_rtt_us(), Some(50_001));
        // The path now has 80 ms (e.g. a standing queue of other flows). After an idle restart
        // Vegas measures against 80 ms and does not back off.
        t += Duration::from_secs(2);
        cc.on_tx_start(t, true);
        assert_eq!(cc.base_rtt_us(), None);
        let before = cc.cwnd() / MSS;
        for _ in 0..4 {
            t = round(&mut cc, t, Duration::from_millis(80), 40);
        }
        assert!(cc.cwnd() / MSS >= before, "{} < {before}", cc.cwnd() / MSS);
        assert_eq!(cc.base_rtt_us(), Some(80_001));
        // With slow start after idle the window restarts and ssthresh keeps 3/4 of the old one.
        cc.set_cwnd(80 * MSS);
        cc.on_restart_after_idle(t + Duration::from_secs(2), 10 * MSS);
        assert_eq!((cc.cwnd() / MSS, cc.ssthresh() / MSS), (10, 60));
    }

    #[test]
    fn loss_halves_like_reno_and_pauses_vegas_until_recovery_ends() {
        let mut cc = in_congestion_avoidance_at(40);
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 40 * MSS);
        assert_eq!(cc.ssthresh(), 20 * MSS);
        assert!(!cc.doing_vegas_now);
        cc.on_recovery_exit(Time::ZERO);
        assert_eq!(cc.cwnd(), 20 * MSS);
        cc.on_ack(&ack(Time::from_millis(1), MSS, Duration::from_millis(50), 20 * MSS));
        assert!(cc.doing_vegas_now);
    }

    fn with(knobs: &[(&str, f64)]) -> Params {
        Params(knobs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    #[test]
    fn srtt_knob_feeds_the_smoothed_rtt_and_counts_every_ack() {
        // Every ACK carries srtt = 80 ms while its own RTT sample says 50 ms (or has none).
        let feed = |p: &Params, sample: Option<Duration>| {
            let mut cc = Vegas::with_params(&CcConfig::default(), p);
            cc.w.cwnd = 40;
            cc.w.ssthresh = 40;
            let mut t = Time::ZERO;
            for _ in 0..4 {
                let mut clock = AckClock::new(Duration::from_millis(50));
                clock.send(40 * MSS);
                for _ in 0..40u64 {
                    t += Duration::from_millis(2);
                    let mut a = clock.ack(t, MSS);
                    a.rtt_sample = sample;
                    a.srtt = Duration::from_millis(80);
                    cc.on_ack(&a);
                }
            }
            cc
        };
        let linux = feed(&Params::default(), Some(Duration::from_millis(50)));
        let ns3 = feed(&with(&[("rtt_from_srtt", 1.0)]), Some(Duration::from_millis(50)));
        assert_eq!(linux.base_rtt_us(), Some(50_001));
        assert_eq!(ns3.base_rtt_us(), Some(80_001));
        // No RTT sample at all (e.g. every ACK Karn-excluded): Linux counts no sample and runs its
        // Reno fallback; with the smoothed RTT every ACK counts as one (ns-3 PktsAcked).
        let linux = feed(&Params::default(), None);
        let ns3 = feed(&with(&[("rtt_from_srtt", 1.0)]), None);
        assert_eq!(linux.base_rtt_us(), None);
        assert_eq!(ns3.base_rtt_us(), Some(80_001));
        assert!(ns3.cnt_rtt > 2, "every ACK is a sample: {}", ns3.cnt_rtt);
    }

    #[test]
    fn ns3_diff_divides_by_the_rtt_and_rounds_the_target_down() {
        // base 50 ms, round-minimum 56 ms, cwnd 40. Linux: 40·6/50 = 4.8 → 4 ≤ β: hold.
        // ns-3: 40 − ⌊40·50/56⌋ = 40 − 35 = 5 > β: −1.
        let run = |p: &Params| {
            let mut cc = Vegas::with_params(&CcConfig::default(), p);
            cc.w.cwnd = 40;
            cc.w.ssthresh = 40;
            let t = round(&mut cc, Time::ZERO, Duration::from_millis(50), 40);
            let t = round(&mut cc, t, Duration::from_millis(56), 41);
            let before = cc.cwnd() / MSS;
            round(&mut cc, t, Duration::from_millis(56), 41);
            (before, cc.cwnd() / MSS)
        };
        let (b, a) = run(&Params::default());
        assert_eq!(a, b, "Linux holds");
        let (b, a) = run(&with(&[("diff_over_rtt", 1.0)]));
        assert_eq!(a, b - 1, "ns-3 shrinks");
    }

    #[test]
    fn ns3_slow_start_adds_one_segment_per_ack_not_per_segment_acked() {
        // One round of the initial 10-segment window, ACKed by 5 delayed ACKs of 2 segments.
        let run = |p: &Params| {
            let mut cc = Vegas::with_params(&CcConfig::default(), p);
            let rtt = Duration::from_millis(50);
            let mut t = Time::ZERO;
            let mut clock = AckClock::new(rtt);
            clock.send(10 * MSS);
            for _ in 0..5u64 {
                t += Duration::from_millis(10);
                cc.on_ack(&clock.ack(t, 2 * MSS));
            }
            cc.cwnd() / MSS
        };
        // The first ACK is a round boundary with one sample: Reno slow start either way.
        assert_eq!(run(&Params::default()), 20, "Linux tcp_slow_start: +2 per ACK");
        assert_eq!(run(&with(&[("slow_start_one_per_ack", 1.0)])), 15, "ns-3: +1 per ACK");
    }

    #[test]
    fn smoothed_rtt_input_leaves_slow_start_before_the_queue_stands() {
        // One flow, 12 Mbit/s, 40 ms (BDP ≈ 42 segments), a buffer that never overflows. With
        // per-ACK samples the round minimum sees no queue until the window exceeds the pipe for a
        // whole round, so Linux leaves slow start late, on a large queue; the smoothed RTT rises
        // with the queue each slow-start burst builds inside the round (ns-3 3.44's input), so
        // the exit comes earlier and with a much smaller queue.
        let exit_queue = |p: &Params| {
            let mut path = SharedPath::new(Bandwidth::from_mbps(12), 1000, MSS);
            path.add_flow(Box::new(Vegas::with_params(&CcConfig::default(), p)), Duration::from_millis(40), Time::ZERO);
            let mut max_q = 0;
            let mut exit = None;
            path.run_until(Time::from_secs(3), |p, i| {
                if exit.is_none() {
                    max_q = max_q.max(p.queue_len());
                    if !p.flows[i].cc.in_slow_start() {
                        exit = Some(p.flows[i].cc.cwnd() / MSS);
                    }
                }
            });
            assert_eq!(path.flows[0].sender.drops, 0);
            (max_q, exit.expect("left slow start"))
        };
        let (linux_q, linux_cwnd) = exit_queue(&Params::default());
        let (ns3_q, ns3_cwnd) = exit_queue(&with(&[("rtt_from_srtt", 1.0)]));
        assert!(linux_q >= 42, "Linux: queue {linux_q} before the exit (cwnd {linux_cwnd})");
        assert!(2 * ns3_q <= linux_q, "smoothed RTT: queue {ns3_q} vs Linux {linux_q}");
        assert!(ns3_cwnd < linux_cwnd, "exit window {ns3_cwnd} vs Linux {linux_cwnd}");
    }

    #[test]
    fn two_flows_converge_to_a_fair_share_of_a_shared_bottleneck() {
        // 20 Mbit/s, 20 ms, one-BDP drop-tail buffer; the second flow joins 5 s later.
        let link = crate::units::Bandwidth::from_mbps(20);
        let shares = crate::cc::testing_path::two_flow_shares(
            || Box::new(Vegas::new(&CcConfig::default())),
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

    #[test]
    fn flow_whose_base_rtt_includes_the_others_burst_takes_the_larger_share() {
        // Both flows start at t = 0: flow 1's first ten segments queue behind flow 0's, so its
        // BaseRTT is 10 × 0.58 ms too high (26.4 ms instead of 20.6 ms) for ever; it then reads
        // part of its own queue as propagation delay and keeps more segments queued. This is the
        // classic Vegas BaseRTT error (Low, Peterson & Wang, JACM 2002), and what synchronized
        // on-off clients that restart together (seed 004) run into on every segment.
        let shares = crate::cc::testing_path::two_flow_shares(
            || Box::new(Vegas::new(&CcConfig::default())),
            Bandwidth::from_mbps(20),
            Duration::from_millis(20),
            35,
            Time::ZERO,
            Time::from_secs(20),
            Time::from_secs(60),
        );
        assert!(shares[1] > 2 * shares[0], "{shares:?}");
    }
}
