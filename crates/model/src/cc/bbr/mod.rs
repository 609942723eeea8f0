//! BBR v1: congestion control from a model of the path (Cardwell et al., "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00;
//! mirrors Linux net/ipv4/tcp_bbr.c, the v1 the kernel ships as "bbr").
//!
//! BBR estimates the bottleneck bandwidth (max delivery rate over the last 10 round trips) and the
//! round-trip propagation time (min RTT over the last 10 s), paces at gain × bandwidth and bounds
//! in-flight data at gain × BDP. It does not treat loss as a congestion signal. A small state
//! machine picks the gains:
//!
//! - STARTUP ([`startup`]): pacing and cwnd gain 2/ln2 ≈ 2.885 until three rounds without 25 %
//!   bandwidth growth (the pipe is full); then
//! - DRAIN: pacing gain ln2/2 (1/2.885) until in-flight ≤ BDP; then
//! - PROBE_BW ([`probe_bw`]): the cycle {5/4, 3/4, 1, 1, 1, 1, 1, 1}, one phase per min RTT,
//!   random start phase (never 3/4), cwnd gain 2;
//! - PROBE_RTT ([`probe_rtt`]): when min RTT is 10 s old, cwnd 4 segments for ≥ 200 ms and a
//!   round, then back.
//!
//! Sizing ([`pacing`]): pacing = gain·bw·0.99 (Linux's 1 % margin); cwnd target = gain·BDP + the
//! Linux quantization budget. Rounds ([`round`]) are counted by delivered data as Linux
//! (`prior_delivered` vs `next_rtt_delivered`). Application-limited rate samples enter the max
//! filter ([`windowed_filter`]) only when they exceed it. Loss ([`lt_bw`]): packet conservation
//! on entering fast recovery and the pre-recovery cwnd restored on exit
//! (`bbr_set_cwnd_to_recover_or_restore`), and long-term bandwidth sampling for policers.
//! ACK bursts ([`ack_aggregation`]) earn extra cwnd as in Linux ≥ 5.1.
//! BBR owns recovery: the endpoint does not run PRR and takes [`CongestionControl::cwnd`] as is.
//!
//! Inputs: every ACK's RTT sample, bytes in flight and the endpoint's delivery-rate sample
//! ([`crate::cc::RateSample`], draft-cheng-iccrg-delivery-rate-estimation).
//!
//! Parameters (Linux module constants; overridable per flow):
//! | name | default | unit | Linux |
//! |---|---|---|---|
//! | high_gain | 2.885 | × | `bbr_high_gain` (STARTUP pacing+cwnd; DRAIN pacing = 1/high_gain) |
//! | cwnd_gain | 2 | × | `bbr_cwnd_gain` (PROBE_BW) |
//! | bw_win_rounds | 10 | rounds | `bbr_bw_rtts` |
//! | min_rtt_win_sec | 10 | s | `bbr_min_rtt_win_sec` |
//! | probe_rtt_mode_ms | 200 | ms | `bbr_probe_rtt_mode_ms` |
//! | cwnd_min_target | 4 | segments | `bbr_cwnd_min_target` |
//! | full_bw_thresh | 1.25 | × | `bbr_full_bw_thresh` |
//! | full_bw_cnt | 3 | rounds | `bbr_full_bw_cnt` |
//! | pacing_margin_percent | 1 | % | `bbr_pacing_margin_percent` |
//! | cycle_rand | 7 | phases | `bbr_cycle_rand` |
//! | lt_bw | 1 | bool | long-term bw sampling on (Linux always on) |
//! | extra_acked_gain | 1 | × | `bbr_extra_acked_gain` ([`ack_aggregation`]) |
//! | extra_acked_win_rtts | 5 | rounds | `bbr_extra_acked_win_rtts` |
//! | extra_acked_max_ms | 100 | ms | `bbr_extra_acked_max_us` |
//! | seed | 0 | - | seed of the PRNG that picks the PROBE_BW start phase |
//! | send_quantum_segs | 0 | segments | 0: `bbr_tso_segs_goal` from the pacing rate (Linux); > 0: a fixed quantum (not Linux: ns-3 TcpBbr's `m_sendQuantum` is 1 MSS) |
//!
//! Deviations from Linux (each also noted where it happens):
//! - "in flight at the earliest departure time" (`bbr_packets_in_net_at_edt`) uses in-flight now
//!   (plus the TSO goal when probing up): the model does not see the endpoint's pacing timestamp.
//! - The min-RTT stamp starts at the first event rather than at connection setup, and delayed-ACK
//!   samples are not told apart ([`min_rtt`]). The value starts, as Linux `bbr_init`, from the
//!   connection's min RTT (`tcp_min_rtt`: the handshake RTT), taken on the first ACK with an RTT
//!   sample (the endpoint's `min_rtt` is a placeholder before that).
//! - Linux marks the connection application-limited on every ACK in PROBE_RTT (`tp->app_limited`
//!   in `bbr_update_min_rtt`), a flag of the endpoint's rate sampler. The model keeps the marked
//!   span of delivered bytes itself and treats a sample as application-limited when its packet
//!   was sent inside that span (`prior_delivered` in it), which is what the flag does in Linux
//!   ([`probe_rtt`]).
//! - `seed` replaces the kernel's `prandom_u32_max`. Without an explicit `seed` parameter the
//!   endpoint's per-connection seed ([`CongestionControl::on_init`]) is used, so flows differ.
//! - The Loss state after an RTO (where Linux restores the saved cwnd only on leaving it) is
//!   tracked by data: it ends once the bytes in flight at the RTO have been delivered, an
//!   approximation of snd_una ≥ high_seq, because the endpoint does not flag RTO recovery.

pub mod ack_aggregation;
pub mod lt_bw;
pub mod min_rtt;
pub mod pacing;
pub mod probe_bw;
pub mod probe_rtt;
pub mod round;
pub mod startup;
pub mod windowed_filter;

use std::time::Duration;

use super::reno::SegmentWindow;
use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::{Bandwidth, Time};

use ack_aggregation::AckAggregation;
use lt_bw::{LtAction, LtBw, LtInput};
use min_rtt::MinRtt;
use pacing::UNIT;
use probe_bw::{SplitMix64, CYCLE_LEN, PACING_GAIN};
use probe_rtt::ProbeRtt;
use round::RoundCounter;
use startup::FullPipe;
use windowed_filter::WindowedMaxFilter;

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "high_gain", default: 2.885, unit: "x", doc: "STARTUP pacing and cwnd gain (2/ln2); DRAIN paces at its inverse" },
    ParamInfo { name: "cwnd_gain", default: 2.0, unit: "x", doc: "PROBE_BW cwnd gain: cwnd = cwnd_gain * BDP" },
    ParamInfo { name: "bw_win_rounds", default: 10.0, unit: "rounds", doc: "window of the max-bandwidth filter" },
    ParamInfo { name: "min_rtt_win_sec", default: 10.0, unit: "s", doc: "min-RTT lifetime; expiry triggers PROBE_RTT" },
    ParamInfo { name: "probe_rtt_mode_ms", default: 200.0, unit: "ms", doc: "minimum PROBE_RTT duration at cwnd_min_target (0 disables PROBE_RTT)" },
    ParamInfo { name: "cwnd_min_target", default: 4.0, unit: "segments", doc: "cwnd floor, and cwnd in PROBE_RTT" },
    ParamInfo { name: "full_bw_thresh", default: 1.25, unit: "x", doc: "bandwidth growth per round that means the pipe is not yet full" },
    ParamInfo { name: "full_bw_cnt", default: 3.0, unit: "rounds", doc: "rounds without growth that end STARTUP" },
    ParamInfo { name: "pacing_margin_percent", default: 1.0, unit: "%", doc: "pace this much below gain * bw" },
    ParamInfo { name: "cycle_rand", default: 7.0, unit: "phases", doc: "PROBE_BW start phase drawn among this many (7: any but the 3/4 phase)" },
    ParamInfo { name: "lt_bw", default: 1.0, unit: "bool", doc: "long-term bandwidth sampling (token-bucket policer detection)" },
    ParamInfo { name: "extra_acked_gain", default: 1.0, unit: "x", doc: "gain on the ACK-aggregation cwnd allowance (0 disables, as Linux before 5.1)" },
    ParamInfo { name: "extra_acked_win_rtts", default: 5.0, unit: "rounds", doc: "window of the ACK-aggregation max filter" },
    ParamInfo { name: "extra_acked_max_ms", default: 100.0, unit: "ms", doc: "cap of the ACK-aggregation allowance, as time at the bandwidth estimate" },
    ParamInfo { name: "seed", default: 0.0, unit: "-", doc: "seed of the PRNG choosing the PROBE_BW start phase (set per flow)" },
    ParamInfo { name: "send_quantum_segs", default: 0.0, unit: "segments", doc: "segments per send quantum in the cwnd budget (3 quanta); 0 = Linux bbr_tso_segs_goal (~1 ms at the pacing rate, >= 2); ns-3 TcpBbr uses 1" },
];

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "bbr",
    summary: "BBR v1: paces at the max-filtered delivery rate, cwnd = 2 BDP, STARTUP/DRAIN/PROBE_BW/PROBE_RTT (Linux tcp_bbr)",
    reference: "Cardwell et al. ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00; Linux net/ipv4/tcp_bbr.c",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(Bbr::with_params(cfg, p)),
};

/// BBR's state machine (Linux `enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The endpoint's congestion state as Linux `icsk_ca_state` orders it (Disorder and CWR do not
/// occur in our endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum CaState {
    Open,
    Recovery,
    Loss,
}

#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    initial_cwnd: u64,
    w: SegmentWindow,
    mode: Mode,
    round: RoundCounter,
    bw: WindowedMaxFilter,
    bw_win_rounds: u64,
    min_rtt: MinRtt,
    full: FullPipe,
    probe_rtt: ProbeRtt,
    probe_rtt_duration: Duration,
    lt: LtBw,
    aggregation: AckAggregation,
    cycle_idx: usize,
    cycle_stamp: Time,
    pacing_gain: u64,
    cwnd_gain: u64,
    high_gain: u64,
    drain_gain: u64,
    probe_bw_cwnd_gain: u64,
    margin_percent: u64,
    cwnd_min_target: u64,
    cycle_rand: u32,
    rng: SplitMix64,
    /// The scenario set `seed` explicitly: [`CongestionControl::on_init`] then keeps it.
    seed_explicit: bool,
    pacing: Bandwidth,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    packet_conservation: bool,
    prev_ca_state: CaState,
    /// An RTO started the current recovery episode (Linux TCP_CA_Loss rather than Recovery).
    in_loss: bool,
    /// Delivered bytes at which the Loss episode is over (Linux: snd_una reaches high_seq).
    loss_end_delivered: u64,
    idle_restart: bool,
    lost_total_bytes: u64,
    delivered_total_bytes: u64,
    /// Fixed send quantum in segments (`send_quantum_segs`); 0 = Linux's TSO goal.
    send_quantum_segs: u64,
    /// Span of delivered-byte counts during which Linux's `tp->app_limited` is set by PROBE_RTT:
    /// packets sent while `delivered` was in `[start, end]` carry the app-limited mark.
    probe_rtt_app_limited: Option<(u64, u64)>,
}

fn param(p: &Params, name: &str) -> f64 {
    let info = PARAMS.iter().find(|i| i.name == name).expect("known BBR parameter");
    p.get(info)
}

impl Bbr {
    pub fn new(cfg: &CcConfig) -> Bbr {
        Bbr::with_params(cfg, &Params::default())
    }

    pub fn with_params(cfg: &CcConfig, p: &Params) -> Bbr {
        let high = param(p, "high_gain").max(1.0);
        let w = SegmentWindow::new(cfg);
        let margin = param(p, "pacing_margin_percent").clamp(0.0, 100.0) as u64;
        // Linux: bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1, bbr_drain_gain = BBR_UNIT * 1000 / 2885.
        let high_gain = pacing::gain_to_unit(high) + 1;
        let drain_gain = pacing::gain_to_unit(1.0 / high);
        let pacing = pacing::initial_pacing_rate(w.cwnd, w.mss_bytes, None, high_gain, margin);
        Bbr {
            mss: w.mss_bytes,
            initial_cwnd: cfg.initial_cwnd_segments.max(1),
            w,
            mode: Mode::Startup,
            round: RoundCounter::default(),
            bw: WindowedMaxFilter::new(),
            bw_win_rounds: param(p, "bw_win_rounds").max(1.0) as u64,
            min_rtt: MinRtt::new(Duration::from_secs_f64(param(p, "min_rtt_win_sec").max(0.0))),
            full: FullPipe::new(param(p, "full_bw_thresh"), param(p, "full_bw_cnt").max(1.0) as u64),
            probe_rtt: ProbeRtt::default(),
            probe_rtt_duration: Duration::from_secs_f64(param(p, "probe_rtt_mode_ms").max(0.0) / 1000.0),
            lt: LtBw::new(param(p, "lt_bw") != 0.0),
            aggregation: AckAggregation::new(
                pacing::gain_to_unit(param(p, "extra_acked_gain").max(0.0)),
                param(p, "extra_acked_win_rtts").max(1.0) as u64,
                Duration::from_secs_f64(param(p, "extra_acked_max_ms").max(0.0) / 1000.0),
            ),
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            pacing_gain: high_gain,
            cwnd_gain: high_gain,
            high_gain,
            drain_gain,
            probe_bw_cwnd_gain: pacing::gain_to_unit(param(p, "cwnd_gain")),
            margin_percent: margin,
            cwnd_min_target: param(p, "cwnd_min_target").max(1.0) as u64,
            cycle_rand: param(p, "cycle_rand").clamp(1.0, (CYCLE_LEN - 1) as f64) as u32,
            rng: SplitMix64::new(param(p, "seed") as u64),
            seed_explicit: p.0.contains_key("seed"),
            pacing,
            has_seen_rtt: false,
            prior_cwnd: 0,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            in_loss: false,
            loss_end_delivered: 0,
            idle_restart: false,
            lost_total_bytes: 0,
            delivered_total_bytes: 0,
            send_quantum_segs: param(p, "send_quantum_segs").max(0.0) as u64,
            probe_rtt_app_limited: None,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Index into the PROBE_BW gain cycle.
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }
    /// Current pacing gain (1.0 = pace at the bandwidth estimate).
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain as f64 / UNIT as f64
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full.reached
    }
    /// Max-filtered bottleneck bandwidth (Linux `bbr_max_bw`).
    pub fn max_bw(&self) -> Bandwidth {
        Bandwidth::from_bps(self.bw.get())
    }
    /// Bandwidth used for sizing: the long-term estimate when a policer was detected (Linux `bbr_bw`).
    pub fn bw(&self) -> Bandwidth {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.value
    }
    pub fn rounds(&self) -> u64 {
        self.round.count
    }

    fn segs_ceil(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    fn tso_goal(&self) -> u64 {
        if self.send_quantum_segs > 0 {
            return self.send_quantum_segs;
        }
        pacing::tso_segs_goal(self.pacing, self.mss)
    }

    /// The packet behind a rate sample was sent while PROBE_RTT had the connection marked
    /// application-limited (Linux: its `tx.is_app_limited` came from `tp->app_limited`).
    fn sent_in_probe_rtt_mark(&self, prior_delivered: u64) -> bool {
        matches!(self.probe_rtt_app_limited, Some((start, end)) if prior_delivered >= start && prior_delivered <= end)
    }

    /// Linux `bbr_update_min_rtt` in PROBE_RTT: `tp->app_limited = delivered + in_flight`, so the
    /// low-rate samples of PROBE_RTT (and of the round after it) do not lower the bandwidth
    /// filter or count as plateau rounds. The mark is cleared by Linux once `delivered` passes
    /// it; a mark set after that starts a new span.
    fn mark_probe_rtt_app_limited(&mut self, delivered: u64, in_flight: u64) {
        let end = (delivered + in_flight).max(1);
        self.probe_rtt_app_limited = match self.probe_rtt_app_limited {
            Some((start, old_end)) if delivered <= old_end => Some((start, end)),
            _ => Some((delivered, end)),
        };
    }

    /// Linux `bbr_inflight`: BDP at `gain` plus the quantization budget.
    fn inflight_target(&self, bw: Bandwidth, gain: u64) -> u64 {
        let bdp = pacing::bdp_segments(bw, self.min_rtt.value, gain, self.mss, self.initial_cwnd);
        pacing::quantization_budget(bdp, self.tso_goal(), self.mode == Mode::ProbeBw && self.cycle_idx == 0)
    }

    /// Linux `bbr_packets_in_net_at_edt`, with the departure time taken as now (see header).
    fn in_net_at_edt(&self, inflight: u64) -> u64 {
        if self.pacing_gain > UNIT {
            inflight + self.tso_goal()
        } else {
            inflight
        }
    }

    /// Linux `bbr_save_cwnd`: remember cwnd before recovery or PROBE_RTT cuts it.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.w.cwnd);
        }
    }

    fn reset_probe_bw_mode(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = probe_bw::random_start_phase(&mut self.rng, self.cycle_rand);
        self.cycle_stamp = now;
    }

    fn reset_mode(&mut self, now: Time) {
        if self.full.reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Linux `bbr_update_bw` (+ `bbr_lt_bw_sampling`): round accounting and the max filter.
    fn update_bw(&mut self, ack: &AckEvent) {
        self.round.round_start = false;
        let Some(rs) = ack.rate else { return };
        if rs.interval.is_zero() {
            return;
        }
        if self.round.on_ack(ack) {
            self.packet_conservation = false;
        }
        let lt_in = LtInput {
            now: ack.now,
            round_start: self.round.round_start,
            losses: rs.newly_lost_bytes > 0,
            app_limited: rs.is_app_limited,
            delivered_total: ack.delivered_total_bytes,
            lost_total: self.lost_total_bytes,
        };
        match self.lt.on_ack(&lt_in, self.mode == Mode::ProbeBw) {
            LtAction::None => {}
            LtAction::StartedUsing => self.pacing_gain = UNIT,
            LtAction::StopAndReprobe => self.reset_probe_bw_mode(ack.now),
        }
        let bw = rs.bandwidth();
        // App-limited samples understate the path unless they beat the current estimate.
        if !rs.is_app_limited || bw.bits_per_sec >= self.bw.get() {
            self.bw.update(self.bw_win_rounds, self.round.count, bw.bits_per_sec);
        }
    }

    /// Linux `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, ack: &AckEvent) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = match self.min_rtt.value {
            Some(rtt) => ack.now.saturating_since(self.cycle_stamp) > rtt,
            None => false,
        };
        let losses = ack.rate.is_some_and(|r| r.newly_lost_bytes > 0);
        let inflight = self.in_net_at_edt(self.segs_ceil(ack.prior_in_flight_bytes));
        let max_bw = self.max_bw();
        let target_1 = self.inflight_target(max_bw, UNIT);
        let target_gain = self.inflight_target(max_bw, self.pacing_gain);
        if probe_bw::is_next_phase(self.pacing_gain, full_length, losses, inflight, target_1, target_gain) {
            self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
            self.cycle_stamp = ack.now;
        }
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, ack: &AckEvent) {
        if self.mode == Mode::Startup && self.full.reached {
            self.mode = Mode::Drain;
            self.w.ssthresh = self.inflight_target(self.max_bw(), UNIT);
        }
        if self.mode == Mode::Drain {
            let inflight = self.in_net_at_edt(self.segs_ceil(ack.bytes_in_flight));
            if inflight <= self.inflight_target(self.max_bw(), UNIT) {
                self.reset_probe_bw_mode(ack.now);
            }
        }
    }

    /// Linux `bbr_update_min_rtt`: the min-RTT filter and PROBE_RTT entry/exit.
    fn update_min_rtt(&mut self, ack: &AckEvent) {
        let expired = self.min_rtt.update(ack.now, ack.rtt_sample);
        if !self.probe_rtt_duration.is_zero() && expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt.enter();
        }
        if self.mode == Mode::ProbeRtt {
            self.mark_probe_rtt_app_limited(ack.delivered_total_bytes, ack.bytes_in_flight);
            let inflight = self.segs_ceil(ack.bytes_in_flight);
            let delivered = ack.delivered_total_bytes;
            let round = &mut self.round;
            let done = self
                .probe_rtt
                .on_ack(ack.now, inflight, self.cwnd_min_target, self.probe_rtt_duration, round.round_start, || round.restart(delivered));
            if done {
                self.probe_rtt_done(ack.now);
            }
        }
        if ack.rate.is_some_and(|r| r.delivered_bytes > 0) {
            self.idle_restart = false;
        }
    }

    /// Linux `bbr_check_probe_rtt_done` once due.
    fn probe_rtt_done(&mut self, now: Time) {
        self.min_rtt.stamp = Some(now); // wait another 10 s before the next PROBE_RTT
        self.w.cwnd = self.w.cwnd.max(self.prior_cwnd);
        self.reset_mode(now);
    }

    /// Linux `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.high_gain, self.high_gain),
            Mode::Drain => (self.drain_gain, self.high_gain),
            Mode::ProbeBw => (if self.lt.use_bw { UNIT } else { PACING_GAIN[self.cycle_idx] }, self.probe_bw_cwnd_gain),
            Mode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// Linux `bbr_set_pacing_rate`: never lower the rate before the pipe is known full.
    fn set_pacing_rate(&mut self, bw: Bandwidth, gain: u64, srtt: Duration) {
        let rate = pacing::pacing_rate(bw, gain, self.margin_percent);
        if !self.has_seen_rtt && !srtt.is_zero() {
            self.has_seen_rtt = true;
            self.pacing = pacing::initial_pacing_rate(self.w.cwnd, self.mss, Some(srtt), self.high_gain, self.margin_percent);
        }
        if self.full.reached || rate > self.pacing {
            self.pacing = rate;
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: packet conservation for the first round of
    /// fast recovery, the saved cwnd back when recovery ends. Returns (cwnd, conserving).
    fn recover_or_restore(&mut self, ack: &AckEvent, acked: u64, losses: u64, state: CaState) -> (u64, bool) {
        let prev = self.prev_ca_state;
        let inflight = self.segs_ceil(ack.bytes_in_flight);
        let mut cwnd = self.w.cwnd;
        if losses > 0 {
            cwnd = cwnd.saturating_sub(losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // Entering fast recovery: send one segment per segment delivered, for one round.
            self.packet_conservation = true;
            self.round.restart(ack.delivered_total_bytes);
            cwnd = inflight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(inflight + acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd` (named apart from the trait's `set_cwnd`, which forces the window).
    fn update_cwnd(&mut self, ack: &AckEvent, acked: u64, losses: u64, bw: Bandwidth, state: CaState) {
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(ack, acked, losses, state);
            if !conserving {
                let bdp = pacing::bdp_segments(bw, self.min_rtt.value, self.cwnd_gain, self.mss, self.initial_cwnd);
                let bdp = bdp + self.aggregation.cwnd_allowance(self.full.reached, bw, self.mss);
                let target = pacing::quantization_budget(bdp, self.tso_goal(), self.mode == Mode::ProbeBw && self.cycle_idx == 0);
                if self.full.reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ack.delivered_total_bytes < self.initial_cwnd * self.mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.cwnd_min_target);
            }
            self.w.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            self.w.cwnd = self.w.cwnd.min(self.cwnd_min_target);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// Linux `bbr_main`: update the model, then pacing rate and cwnd.
    fn on_ack(&mut self, ack: &AckEvent) {
        // A sample from a packet sent during PROBE_RTT is application-limited, as in Linux.
        let mut ack = *ack;
        if let Some(r) = ack.rate.as_mut() {
            r.is_app_limited |= self.sent_in_probe_rtt_mark(r.prior_delivered_bytes);
        }
        let ack = &ack;
        self.min_rtt.start(ack.now);
        // Linux bbr_init: min_rtt_us = tcp_min_rtt(tp), the connection's min RTT when it is
        // established, i.e. the handshake (SYN/ACK) RTT. A flow that starts while the queue is
        // still short keeps that value even if its first data already waits behind a grown
        // queue. The endpoint's `min_rtt` is that value (and real) once it has any RTT sample.
        if self.min_rtt.value.is_none() && ack.rtt_sample.is_some() && !ack.min_rtt.is_zero() {
            self.min_rtt.value = Some(ack.min_rtt);
        }
        self.delivered_total_bytes = ack.delivered_total_bytes;
        let acked = self.w.acked_segments(ack.acked_bytes);
        let lost_bytes = ack.rate.map_or(0, |r| r.newly_lost_bytes);
        self.lost_total_bytes += lost_bytes;
        let losses = self.segs_ceil(lost_bytes);
        // The Loss state lasts until everything outstanding at the RTO is delivered. Endpoints
        // differ on whether `in_recovery` is set during RTO recovery (crates/sim says no, as
        // Linux's tcp_cong_control only holds cwnd in Recovery), so track it by data.
        if self.in_loss && ack.delivered_total_bytes >= self.loss_end_delivered && !ack.in_recovery {
            self.in_loss = false;
        }
        let state = if self.in_loss {
            CaState::Loss
        } else if ack.in_recovery {
            CaState::Recovery
        } else {
            CaState::Open
        };
        let app_limited = ack.rate.is_some_and(|r| r.is_app_limited);

        self.update_bw(ack);
        if ack.rate.is_some_and(|r| !r.interval.is_zero()) {
            let (bw, cwnd) = (self.bw(), self.w.cwnd);
            self.aggregation.update(ack.now, acked, self.round.round_start, bw, self.mss, cwnd);
        }
        self.update_cycle_phase(ack);
        self.full.check(self.round.round_start, app_limited, self.max_bw());
        self.check_drain(ack);
        self.update_min_rtt(ack);
        self.update_gains();

        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, ack.srtt);
        self.update_cwnd(ack, acked, losses, bw, state);
    }

    /// Linux `bbr_ssthresh` (save cwnd, keep ssthresh) and, on RTO, `tcp_enter_loss` +
    /// `bbr_set_state(TCP_CA_Loss)`.
    fn on_congestion_event(&mut self, now: Time, signal: CongestionSignal, bytes_in_flight: u64) {
        self.min_rtt.start(now);
        self.save_cwnd();
        if signal == CongestionSignal::Timeout {
            self.w.enter_loss();
            self.on_timeout_in_loss_episode(now, bytes_in_flight);
        }
    }

    /// Linux `tcp_enter_loss` (high_seq = snd_nxt) and `bbr_set_state(TCP_CA_Loss)`, on every RTO
    /// including one inside a loss episode.
    fn on_timeout_in_loss_episode(&mut self, now: Time, bytes_in_flight: u64) {
        self.in_loss = true;
        // Approximation of high_seq: what was in flight at the RTO must be delivered.
        self.loss_end_delivered = self.delivered_total_bytes + bytes_in_flight;
        self.prev_ca_state = CaState::Loss;
        self.full.full_bw = Bandwidth::ZERO; // Linux bbr_set_state: full_bw = 0 only
                                             // Linux treats an RTO like the end of a round and feeds the lt sampler a loss.
        let x = LtInput {
            now,
            round_start: true,
            losses: true,
            app_limited: false,
            delivered_total: self.delivered_total_bytes,
            lost_total: self.lost_total_bytes,
        };
        if self.lt.on_ack(&x, self.mode == Mode::ProbeBw) == LtAction::StopAndReprobe {
            self.reset_probe_bw_mode(now);
        }
    }

    /// Linux `tcp_end_cwnd_reduction` does nothing for `cong_control` algorithms; the saved cwnd
    /// comes back on the next ACK (`bbr_set_cwnd_to_recover_or_restore`).
    fn on_recovery_exit(&mut self, _now: Time) {}

    /// Linux `bbr_undo_cwnd`: forget plateau detection and lt sampling; cwnd unchanged.
    fn on_spurious_congestion(&mut self, now: Time) {
        self.full.reset_detection();
        self.lt.reset(now, self.delivered_total_bytes, self.lost_total_bytes);
    }

    /// The connection's seed replaces the kernel's per-flow randomness (`get_random_u32_below`) in
    /// the PROBE_BW start phase, unless the scenario set the `seed` parameter explicitly.
    fn on_init(&mut self, seed: u64) {
        if !self.seed_explicit {
            self.rng = SplitMix64::new(seed);
        }
    }

    /// Linux `bbr_cwnd_event(CA_EVENT_TX_START)`: after idle, pace at 1×bw in PROBE_BW and possibly
    /// finish PROBE_RTT. cwnd is NOT reduced: Linux skips `tcp_cwnd_restart` for algorithms with
    /// `cong_control`. Only when application-limited, as Linux (after an RTO of a bulk flow nothing
    /// happens).
    fn on_tx_start(&mut self, now: Time, app_limited: bool) {
        if !app_limited {
            return;
        }
        self.idle_restart = true;
        self.aggregation.restart(now);
        match self.mode {
            Mode::ProbeBw => {
                let bw = self.bw();
                self.set_pacing_rate(bw, UNIT, Duration::ZERO);
            }
            Mode::ProbeRtt if self.probe_rtt.done(now) => self.probe_rtt_done(now),
            _ => {}
        }
    }

    /// Linux never runs `tcp_cwnd_restart` for `cong_control` algorithms, and BBR ignores
    /// `CA_EVENT_CWND_RESTART`: nothing to do.
    fn on_restart_after_idle(&mut self, _now: Time, _restart_window_bytes: u64) {}

    fn cwnd(&self) -> u64 {
        self.w.cwnd_bytes()
    }

    fn set_cwnd(&mut self, bytes: u64) {
        self.w.set_cwnd_bytes(bytes);
    }

    fn ssthresh(&self) -> u64 {
        self.w.ssthresh_bytes()
    }

    fn pacing_rate(&self) -> Option<Bandwidth> {
        Some(self.pacing)
    }

    fn owns_recovery(&self) -> bool {
        true
    }

    fn in_slow_start(&self) -> bool {
        self.mode == Mode::Startup
    }

    fn state_label(&self) -> &'static str {
        match self.mode {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

#[cfg(test)]
mod tests;
