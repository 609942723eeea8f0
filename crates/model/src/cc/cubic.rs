//! CUBIC with HyStart, as Linux `net/ipv4/tcp_cubic.c` (v2.3, Linux 6.x) runs it.
//!
//! What it models: RFC 9438 CUBIC. After a congestion event at window W_max the window follows
//! W_cubic(t) = C·(t − K)³ + W_max with K = ∛(W_max·(1 − β)/C) (RFC 9438 §4.2, "Window Increase
//! Function"), concave below W_max and convex (max probing) above it; a loss below the previous
//! W_max lowers W_max to W·(1 + β)/2 (fast convergence, §4.7); the window never grows slower than
//! an AIMD flow with α = 3(1 − β)/(1 + β) would (the Reno-friendly region, §4.3); and slow start
//! ends early on HyStart's ACK-train or delay-increase signal (Ha & Rhee, "Taming the elephants:
//! New TCP slow start", Computer Networks 2011), setting ssthresh = cwnd.
//!
//! How (Linux, not the RFC pseudo-code): the window is counted in segments; every ACK outside
//! recovery calls `bictcp_update`, which computes the cubic target one `delay_min` ahead
//! (RFC 9438 §4.2 uses "t + RTT" likewise) and turns it into `cnt`, the number of segments to be
//! ACKed per +1 segment, which [`SegmentWindow::cong_avoid_ai`] (Linux `tcp_cong_avoid_ai`)
//! applies. Time inside the cubic is in 1/1024 s units (`BICTCP_HZ`), C and β are fixed point
//! (C = 410/1024 = 0.4004, β = 717/1024 = 0.7002). `cnt` is recomputed at most once per ms and
//! not at all while cwnd is unchanged for less than 1/32 s (µs clock since Linux 6.11, "tcp_cubic:
//! switch ca->last_time to usec resolution"; the epoch itself is still kept in jiffies). The Reno-friendly estimate grows by one
//! segment per `cwnd·beta_scale/8` ACKed segments (beta_scale = 8(1024+β)/3/(1024−β) = 15, i.e.
//! α ≈ 0.53 per RTT), and Linux keeps that α above W_max too (RFC 9438 §4.3 would switch to α = 1
//! there). Before the first loss `cnt` is capped at 20 (+5 % per RTT); `cnt` is at least 2 (cwnd
//! grows at most ×1.5 per RTT in congestion avoidance). Linux 6.x CUBIC keeps no delayed-ACK
//! ratio (BIC still does, see bic.rs), so neither do we. After an idle period
//! (`CA_EVENT_TX_START`, [`CongestionControl::on_tx_start`]) the epoch start is shifted
//! forward by the idle time so the curve resumes where it stopped (Linux commit 30927520dbae);
//! when the endpoint also restarts the window (slow start after idle, `tcp_cwnd_restart`),
//! ssthresh rises to ¾ of the old cwnd first (see [`SegmentWindow::cwnd_restart`]). HyStart is *not* re-armed
//! after idle (Linux resets it only at init and on RTO), so that second slow start runs to ssthresh.
//! An RTO (`TCP_CA_Loss`) resets all CUBIC and HyStart state, W_max included.
//!
//! Parameters (names as the Linux module parameters; units in [`PARAMS`]):
//! - `beta` = 0.7 (ratio; Linux `beta` = 717/1024): multiplicative decrease.
//! - `c` = 0.4 (segments/s³; Linux `bic_scale` = 41, i.e. 410/1024): cubic scaling constant.
//! - `fast_convergence` = 1 (bool), `tcp_friendliness` = 1 (bool).
//! - `hystart` = 1 (bool), `hystart_detect` = 3 (bitmask: 1 ACK train, 2 delay increase),
//!   `hystart_low_window` = 16 (segments), `hystart_ack_delta_us` = 2000 (µs).
//! - `initial_ssthresh` = 0 (segments, 0 = unlimited; as Linux, used only when `hystart` = 0).
//!
//! Not Linux parameters (Linux has them as `#define`s or code): knobs that reproduce ns-3 3.44's
//! `ns3::TcpCubic` (src/internet/model/tcp-cubic.cc), so that `bench/cc_vs_ns3.py` can show how
//! much of a tcpvideo-vs-ns-3 gap each ns-3 choice explains. Defaults are Linux's behaviour.
//! - `hystart_delay_shift` = 3: the delay-increase threshold is (delay_min >> shift) clamped to
//!   [4 ms, `hystart_delay_max_us`] (Linux `HYSTART_DELAY_THRESH(delay_min >> 3)`; ns-3 uses
//!   delay_min itself, shift 0). `hystart_delay_max_us` = 16000 (Linux `HYSTART_DELAY_MAX`; ns-3
//!   `HyStartDelayMax` = 1 s).
//! - `hystart_train_shift` = 1: an ACK train ends slow start once it lasts longer than
//!   (delay_min + ack_delay) >> shift (Linux halves it for unpaced sockets; 0 is Linux's paced
//!   rule, and ns-3's rule up to the ≤ 1 ms ack_delay cushion ns-3 3.44 does not have).
//! - `hystart_first_samples_only` = 0 (bool): 1 = the round's RTT is the minimum of its first 8
//!   samples only, later samples are compared but not folded in (ns-3); Linux folds every sample.
//! - `delay_holdoff_ms` = 1000: RTT samples are ignored this long after an epoch starts (Linux:
//!   HZ, one second; ns-3 `CubicDelta` = 10 ms).
//! - `ca_one_per_ack` = 0 (bool): 1 = congestion avoidance adds at most one segment per ACK, the
//!   counter keeps the rest (ns-3); Linux `tcp_cong_avoid_ai` adds cwnd_cnt / cnt.
//! - `rto_keeps_w_max` = 0 (bool): 1 = an RTO keeps W_max (ns-3's `CubicReset` does not clear
//!   `m_lastMaxCwnd`); Linux `bictcp_reset` zeroes it.
//!
//! Fixed as Linux `#define`s: HyStart needs 8 RTT samples per round (`HYSTART_MIN_SAMPLES`); the
//! delay threshold is delay_min/8 clamped to [4 ms, 16 ms]; the ACK-train threshold is
//! (delay_min + ack_delay)/2 with ack_delay = min(1 ms, 4·GSO max size / pacing rate), where the
//! pacing rate is Linux's default 2·cwnd·MSS/srtt in slow start and the GSO max size 64 KiB; the
//! halving applies because plain CUBIC does not pace (`SK_PACING_NONE`).
//!
//! Version: Linux 6.14+, i.e. including the HyStart round-start fix
//! (rounds are tracked below `hystart_low_window` too, detection only above it). Not modelled:
//! the 2024 proposals by Zhang & Xu (α = 1 once W_est ≥ cwnd_prior, Reno estimate one RTT ahead),
//! which we did not find merged.
//!
//! Deviations from Linux (deliberate, small):
//! - A jiffy (epoch start, `delay_min` added to t) is 1 ms (CONFIG_HZ = 1000); Debian kernels use
//!   HZ = 250, which quantizes the curve's time axis more.
//! - K is the exact integer cube root; Linux uses a table plus one Newton step (≈0.2 % error).
//! - Sequence numbers are emulated from bytes: HyStart's round ends when the bytes delivered
//!   (cumulative plus SACKed, counted here from `acked_bytes`) exceed the bytes delivered plus in
//!   flight when the round began (Linux: `snd_una` after the `snd_nxt` of the round start).
//! - The idle time for `CA_EVENT_TX_START` is measured from the last [`on_packet_sent`] (Linux
//!   `lsndtime`), or from the last ACK if the endpoint never reports sends.
//! - Undo ([`CongestionControl::on_spurious_congestion`]) restores max(cwnd, prior cwnd) and the
//!   prior ssthresh (Linux `tcp_reno_undo_cwnd` + `tcp_undo_cwnd_reduction`); W_max is not
//!   restored, as in Linux.
//!
//! [`on_packet_sent`]: CongestionControl::on_packet_sent

use super::reno::{SegmentWindow, UndoMarker};
use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::Time;

/// Fixed-point scale of β (Linux `BICTCP_BETA_SCALE`).
const BETA_SCALE: u64 = 1024;
/// Cubic time unit: 2^10 per second (Linux `BICTCP_HZ`).
const BICTCP_HZ: u32 = 10;
/// Jiffies per second of the modelled kernel (CONFIG_HZ).
const HZ: u64 = 1000;
const HYSTART_ACK_TRAIN: u32 = 0x1;
const HYSTART_DELAY: u32 = 0x2;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u64 = 4_000;
const HYSTART_DELAY_MAX_US: u64 = 16_000;
/// Linux `sk_gso_max_size` default (GSO_LEGACY_MAX_SIZE), bytes.
const GSO_MAX_SIZE_BYTES: u64 = 65_536;
/// Linux `tcp_pacing_ss_ratio` default (percent) used for the slow-start pacing rate.
const PACING_SS_RATIO_PERCENT: u64 = 200;
/// Linux `tcp_pacing_ca_ratio` default (percent).
const PACING_CA_RATIO_PERCENT: u64 = 120;

const PARAM_BETA: ParamInfo =
    ParamInfo { name: "beta", default: 0.7, unit: "ratio", doc: "multiplicative decrease: ssthresh = beta*cwnd (Linux beta=717/1024)" };
const PARAM_C: ParamInfo =
    ParamInfo { name: "c", default: 0.4, unit: "segments/s^3", doc: "cubic scaling constant C (Linux bic_scale=41, i.e. 410/1024)" };
const PARAM_FAST_CONVERGENCE: ParamInfo = ParamInfo {
    name: "fast_convergence",
    default: 1.0,
    unit: "bool",
    doc: "on a loss below the previous W_max, set W_max = cwnd*(1+beta)/2",
};
const PARAM_TCP_FRIENDLINESS: ParamInfo = ParamInfo {
    name: "tcp_friendliness",
    default: 1.0,
    unit: "bool",
    doc: "never grow slower than AIMD with alpha=3(1-beta)/(1+beta) (Reno-friendly region)",
};
const PARAM_HYSTART: ParamInfo =
    ParamInfo { name: "hystart", default: 1.0, unit: "bool", doc: "hybrid slow start: leave slow start before loss" };
const PARAM_HYSTART_DETECT: ParamInfo = ParamInfo {
    name: "hystart_detect",
    default: 3.0,
    unit: "bitmask",
    doc: "HyStart signals: 1 = ACK train, 2 = delay increase, 3 = both",
};
const PARAM_HYSTART_LOW_WINDOW: ParamInfo =
    ParamInfo { name: "hystart_low_window", default: 16.0, unit: "segments", doc: "HyStart runs only when cwnd >= this" };
const PARAM_HYSTART_ACK_DELTA_US: ParamInfo =
    ParamInfo { name: "hystart_ack_delta_us", default: 2000.0, unit: "us", doc: "largest ACK spacing still counted as one ACK train" };
const PARAM_INITIAL_SSTHRESH: ParamInfo = ParamInfo {
    name: "initial_ssthresh",
    default: 0.0,
    unit: "segments",
    doc: "initial ssthresh, 0 = unlimited; applied only when hystart = 0 (as Linux)",
};
const PARAM_HYSTART_DELAY_SHIFT: ParamInfo = ParamInfo {
    name: "hystart_delay_shift",
    default: 3.0,
    unit: "bits",
    doc: "not a Linux knob: delay threshold = delay_min >> shift, clamped (Linux 3; ns-3 0)",
};
const PARAM_HYSTART_DELAY_MAX_US: ParamInfo = ParamInfo {
    name: "hystart_delay_max_us",
    default: HYSTART_DELAY_MAX_US as f64,
    unit: "us",
    doc: "not a Linux knob: upper clamp of the delay threshold (Linux 16 ms; ns-3 1 s)",
};
const PARAM_HYSTART_TRAIN_SHIFT: ParamInfo = ParamInfo {
    name: "hystart_train_shift",
    default: 1.0,
    unit: "bits",
    doc: "not a Linux knob: ACK train must exceed (delay_min + ack_delay) >> shift (Linux 1 unpaced; ns-3 0)",
};
const PARAM_HYSTART_FIRST_SAMPLES_ONLY: ParamInfo = ParamInfo {
    name: "hystart_first_samples_only",
    default: 0.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = round RTT = min of its first 8 samples only (ns-3); 0 = all (Linux)",
};
const PARAM_DELAY_HOLDOFF_MS: ParamInfo = ParamInfo {
    name: "delay_holdoff_ms",
    default: 1000.0,
    unit: "ms",
    doc: "not a Linux knob: ignore RTT samples this long after an epoch starts (Linux HZ = 1 s; ns-3 10 ms)",
};
const PARAM_CA_ONE_PER_ACK: ParamInfo = ParamInfo {
    name: "ca_one_per_ack",
    default: 0.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = at most +1 segment per ACK in congestion avoidance (ns-3)",
};
const PARAM_RTO_KEEPS_W_MAX: ParamInfo = ParamInfo {
    name: "rto_keeps_w_max",
    default: 0.0,
    unit: "bool",
    doc: "not a Linux knob: 1 = an RTO keeps W_max (ns-3 CubicReset); 0 = zero it (Linux)",
};

pub const PARAMS: &[ParamInfo] = &[
    PARAM_BETA,
    PARAM_C,
    PARAM_FAST_CONVERGENCE,
    PARAM_TCP_FRIENDLINESS,
    PARAM_HYSTART,
    PARAM_HYSTART_DETECT,
    PARAM_HYSTART_LOW_WINDOW,
    PARAM_HYSTART_ACK_DELTA_US,
    PARAM_INITIAL_SSTHRESH,
    PARAM_HYSTART_DELAY_SHIFT,
    PARAM_HYSTART_DELAY_MAX_US,
    PARAM_HYSTART_TRAIN_SHIFT,
    PARAM_HYSTART_FIRST_SAMPLES_ONLY,
    PARAM_DELAY_HOLDOFF_MS,
    PARAM_CA_ONE_PER_ACK,
    PARAM_RTO_KEEPS_W_MAX,
];

/// CUBIC's parameters, typed: read from the scenario's by-name values once ([`PARAMS`] documents them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicParams {
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    pub hystart: bool,
    pub hystart_detect: u32,
    pub hystart_low_window: u64,
    pub hystart_ack_delta_us: u64,
    pub hystart_delay_shift: u32,
    pub hystart_delay_max_us: u64,
    pub hystart_train_shift: u32,
    pub hystart_first_samples_only: bool,
    pub delay_holdoff_ms: u64,
    pub ca_one_per_ack: bool,
    pub rto_keeps_w_max: bool,
    pub beta: u64,
    pub cube_rtt_scale: u64,
    pub initial_ssthresh: u64,
}

impl CubicParams {
    /// Read the by-name values (defaults where absent) once, converting and clamping each as
    /// the algorithm uses it.
    pub fn from_params(p: &Params) -> CubicParams {
        CubicParams {
            fast_convergence: p.get(&PARAM_FAST_CONVERGENCE) != 0.0,
            tcp_friendliness: p.get(&PARAM_TCP_FRIENDLINESS) != 0.0,
            hystart: p.get(&PARAM_HYSTART) != 0.0,
            hystart_detect: p.get(&PARAM_HYSTART_DETECT).max(0.0) as u32,
            hystart_low_window: p.get(&PARAM_HYSTART_LOW_WINDOW).max(0.0) as u64,
            hystart_ack_delta_us: p.get(&PARAM_HYSTART_ACK_DELTA_US).max(0.0) as u64,
            hystart_delay_shift: p.get(&PARAM_HYSTART_DELAY_SHIFT).clamp(0.0, 31.0) as u32,
            hystart_delay_max_us: p.get(&PARAM_HYSTART_DELAY_MAX_US).max(HYSTART_DELAY_MIN_US as f64) as u64,
            hystart_train_shift: p.get(&PARAM_HYSTART_TRAIN_SHIFT).clamp(0.0, 31.0) as u32,
            hystart_first_samples_only: p.get(&PARAM_HYSTART_FIRST_SAMPLES_ONLY) != 0.0,
            delay_holdoff_ms: p.get(&PARAM_DELAY_HOLDOFF_MS).max(0.0) as u64,
            ca_one_per_ack: p.get(&PARAM_CA_ONE_PER_ACK) != 0.0,
            rto_keeps_w_max: p.get(&PARAM_RTO_KEEPS_W_MAX) != 0.0,
            beta: ((p.get(&PARAM_BETA) * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1),
            cube_rtt_scale: ((p.get(&PARAM_C) * 1024.0).round() as u64).max(1),
            initial_ssthresh: p.get(&PARAM_INITIAL_SSTHRESH).max(0.0) as u64,
        }
    }
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams::from_params(&Params::default())
    }
}

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "cubic",
    summary: "CUBIC window growth with HyStart slow-start exit (Linux tcp_cubic, the Linux default)",
    reference: "RFC 9438; Ha, Rhee, Xu 2008; Ha & Rhee 2011 (HyStart); Linux net/ipv4/tcp_cubic.c",
    params: PARAMS,
    build: |cfg, p: &Params| Box::new(Cubic::with_params(cfg, p)),
};

/// Integer floor of the cube root.
fn cube_root(a: u64) -> u64 {
    if a == 0 {
        return 0;
    }
    let mut x = (a as f64).cbrt().round() as u64;
    while x > 0 && (x as u128).pow(3) > a as u128 {
        x -= 1;
    }
    while ((x + 1) as u128).pow(3) <= a as u128 {
        x += 1;
    }
    x
}

fn jiffies(t: Time) -> u64 {
    t.as_nanos() / (1_000_000_000 / HZ)
}

fn usecs_to_jiffies(us: u64) -> u64 {
    us.div_ceil(1_000_000 / HZ)
}

fn micros(t: Time) -> u64 {
    t.as_nanos() / 1_000
}

#[derive(Clone, Debug)]
pub struct Cubic {
    w: SegmentWindow,
    // Parameters, in Linux's fixed point.
    beta: u64,
    cube_rtt_scale: u64,
    cube_factor: u64,
    beta_scale: u64,
    fast_convergence: bool,
    tcp_friendliness: bool,
    hystart: bool,
    hystart_detect: u32,
    hystart_low_window: u64,
    hystart_ack_delta_us: u64,
    // ns-3 emulation knobs (see the header); Linux values by default.
    hystart_delay_shift: u32,
    hystart_delay_max_us: u64,
    hystart_train_shift: u32,
    hystart_first_samples_only: bool,
    delay_holdoff_ms: u64,
    ca_one_per_ack: bool,
    rto_keeps_w_max: bool,

    // struct bictcp
    /// Segments to ACK per +1 segment of cwnd.
    cnt: u64,
    /// W_max in segments (0 = no loss yet).
    last_max_cwnd: u64,
    last_cwnd: u64,
    /// Time of the last `cnt` computation, µs (Linux 6.11+: `tcp_mstamp`, no longer jiffies).
    last_time_us: u64,
    bic_origin_point: u64,
    /// K in 1/1024 s.
    bic_k: u64,
    /// Minimum RTT in µs (0 = none yet).
    delay_min_us: u64,
    /// Jiffy at which the current epoch began (Linux `epoch_start`, 0 ⇔ None).
    epoch_start: Option<u64>,
    ack_cnt: u64,
    /// Reno-friendly window estimate W_est, segments.
    tcp_cwnd: u64,
    // HyStart
    sample_cnt: u32,
    found: bool,
    round_start_us: u64,
    /// Emulated `end_seq`: delivered + in-flight bytes when the round began.
    end_seq_bytes: u64,
    last_ack_us: u64,
    curr_rtt_us: u64,

    // Endpoint facts the kernel has at hand and we reconstruct.
    delivered_bytes: u64,
    last_send: Option<Time>,
    prev_send: Option<Time>,
    last_ack_time: Option<Time>,
    /// cwnd and ssthresh before the last congestion event, for an undo.
    undo: UndoMarker,
}

impl Cubic {
    pub fn new(cfg: &CcConfig) -> Cubic {
        Cubic::with_params(cfg, &Params::default())
    }

    pub fn with_params(cfg: &CcConfig, p: &Params) -> Cubic {
        Self::with_typed_params(cfg, &CubicParams::from_params(p))
    }

    /// Build from parameters already read and converted ([`CubicParams::from_params`]).
    pub fn with_typed_params(cfg: &CcConfig, t: &CubicParams) -> Cubic {
        let beta = t.beta;
        let cube_rtt_scale = t.cube_rtt_scale;
        let mut cc = Cubic {
            w: SegmentWindow::new(cfg),
            beta,
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            fast_convergence: t.fast_convergence,
            tcp_friendliness: t.tcp_friendliness,
            hystart: t.hystart,
            hystart_detect: t.hystart_detect,
            hystart_low_window: t.hystart_low_window,
            hystart_ack_delta_us: t.hystart_ack_delta_us,
            hystart_delay_shift: t.hystart_delay_shift,
            hystart_delay_max_us: t.hystart_delay_max_us,
            hystart_train_shift: t.hystart_train_shift,
            hystart_first_samples_only: t.hystart_first_samples_only,
            delay_holdoff_ms: t.delay_holdoff_ms,
            ca_one_per_ack: t.ca_one_per_ack,
            rto_keeps_w_max: t.rto_keeps_w_max,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time_us: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min_us: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start_us: 0,
            end_seq_bytes: 0,
            last_ack_us: 0,
            curr_rtt_us: u64::MAX,
            delivered_bytes: 0,
            last_send: None,
            prev_send: None,
            last_ack_time: None,
            undo: UndoMarker::default(),
        };
        let initial_ssthresh = t.initial_ssthresh;
        if !cc.hystart && initial_ssthresh > 0 {
            cc.w.ssthresh = initial_ssthresh;
        }
        cc
    }

    /// W_max in segments (0 before the first congestion event).
    pub fn w_max_segments(&self) -> u64 {
        self.last_max_cwnd
    }

    /// Linux `cubictcp_state(TCP_CA_Loss)`: on every RTO, also one inside a loss episode.
    fn loss_state(&mut self, now: Time, bytes_in_flight: u64) {
        let w_max = self.last_max_cwnd;
        self.reset();
        if self.rto_keeps_w_max {
            self.last_max_cwnd = w_max;
        }
        let snd_nxt = self.delivered_bytes + bytes_in_flight;
        self.hystart_reset(now, snd_nxt);
    }

    /// Linux `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time_us = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min_us = 0;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// Linux `bictcp_hystart_reset`: a new HyStart round begins now.
    fn hystart_reset(&mut self, now: Time, snd_nxt_bytes: u64) {
        self.round_start_us = micros(now);
        self.last_ack_us = self.round_start_us;
        self.end_seq_bytes = snd_nxt_bytes;
        self.curr_rtt_us = u64::MAX;
        self.sample_cnt = 0;
    }

    /// Linux `hystart_ack_delay`: cushion for TSO/GRO aggregation, from the default pacing rate.
    fn hystart_ack_delay_us(&self, ack: &AckEvent) -> u64 {
        let srtt_us = ack.srtt.as_micros() as u64;
        if srtt_us == 0 {
            return 0;
        }
        let ratio = if self.w.ssthresh == u64::MAX || self.w.cwnd < self.w.ssthresh / 2 {
            PACING_SS_RATIO_PERCENT
        } else {
            PACING_CA_RATIO_PERCENT
        };
        let rate_bytes_per_sec = (self.w.mss_bytes as u128 * self.w.cwnd as u128 * ratio as u128 * 1_000_000) / (100 * srtt_us as u128);
        if rate_bytes_per_sec == 0 {
            return 0;
        }
        let d = (GSO_MAX_SIZE_BYTES as u128 * 4 * 1_000_000) / rate_bytes_per_sec;
        d.min(1_000) as u64
    }

    /// Linux `hystart_update`.
    fn hystart_update(&mut self, ack: &AckEvent, delay_us: u64) {
        if self.delivered_bytes > self.end_seq_bytes {
            self.hystart_reset(ack.now, self.delivered_bytes + ack.bytes_in_flight);
        }
        // Rounds are tracked at any cwnd; detection runs only from hystart_low_window on
        // (Linux 6.14, "tcp_cubic: fix incorrect HyStart round start detection").
        if self.w.cwnd < self.hystart_low_window {
            return;
        }
        if self.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = micros(ack.now);
            if now.saturating_sub(self.last_ack_us) <= self.hystart_ack_delta_us {
                self.last_ack_us = now;
                // Plain CUBIC does not pace (SK_PACING_NONE), so the threshold is halved.
                let threshold = (self.delay_min_us + self.hystart_ack_delay_us(ack)) >> self.hystart_train_shift;
                if now.saturating_sub(self.round_start_us) > threshold {
                    self.found = true;
                    self.w.ssthresh = self.w.cwnd;
                }
            }
        }
        if self.hystart_detect & HYSTART_DELAY != 0 {
            if !self.hystart_first_samples_only || self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (self.delay_min_us >> self.hystart_delay_shift).clamp(HYSTART_DELAY_MIN_US, self.hystart_delay_max_us);
                if self.curr_rtt_us > self.delay_min_us + thresh {
                    self.found = true;
                    self.w.ssthresh = self.w.cwnd;
                }
            }
        }
    }

    /// Linux `cubictcp_acked` (the `pkts_acked` hook): delay_min and HyStart.
    fn pkts_acked(&mut self, ack: &AckEvent, rtt_us: u64) {
        // Discard delay samples right after fast recovery.
        if let Some(epoch) = self.epoch_start {
            if jiffies(ack.now).saturating_sub(epoch) < self.delay_holdoff_ms * HZ / 1000 {
                return;
            }
        }
        let delay = rtt_us.max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay {
            self.delay_min_us = delay;
        }
        if !self.found && self.w.in_slow_start() && self.hystart {
            self.hystart_update(ack, delay);
        }
    }

    /// Linux `bictcp_update`: recompute `cnt` from the cubic curve and the Reno-friendly estimate.
    fn update(&mut self, now: Time, acked: u64) {
        let cwnd = self.w.cwnd;
        let nj = jiffies(now);
        let now_us = micros(now);
        self.ack_cnt += acked;
        let since_last_us = now_us.saturating_sub(self.last_time_us);
        if self.last_cwnd == cwnd && since_last_us <= 1_000_000 / 32 {
            return;
        }
        // `cnt` is recomputed at most once per ms; the Reno-friendly part always runs.
        if !(self.epoch_start.is_some() && since_last_us < 1_000) {
            self.last_cwnd = cwnd;
            self.last_time_us = now_us;
            let epoch = match self.epoch_start {
                Some(e) => e,
                None => {
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.bic_k = 0;
                        self.bic_origin_point = cwnd;
                    } else {
                        // K = ∛((W_max − cwnd)/C), in 1/1024 s.
                        self.bic_k = cube_root(self.cube_factor.saturating_mul(self.last_max_cwnd - cwnd));
                        self.bic_origin_point = self.last_max_cwnd;
                    }
                    self.epoch_start = Some(nj);
                    nj
                }
            };
            // t = time since epoch start + delay_min, in 1/1024 s: the target one RTT ahead.
            let t = ((nj.saturating_sub(epoch) + usecs_to_jiffies(self.delay_min_us)) << BICTCP_HZ) / HZ;
            let offs = t.abs_diff(self.bic_k) as u128;
            let delta = ((self.cube_rtt_scale as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)).min(u64::MAX as u128) as u64;
            let target =
                if t < self.bic_k { self.bic_origin_point.saturating_sub(delta) } else { self.bic_origin_point.saturating_add(delta) };
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            // Bandwidth still unknown: grow at least 5 % per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        if self.tcp_friendliness {
            let delta = ((cwnd * self.beta_scale) >> 3).max(1);
            if self.ack_cnt > delta {
                let n = (self.ack_cnt - 1) / delta;
                self.ack_cnt -= n * delta;
                self.tcp_cwnd += n;
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }
        // At most +1 segment per 2 ACKed: ×1.5 per RTT.
        self.cnt = self.cnt.max(2);
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_packet_sent(&mut self, now: Time, _bytes: u64, _bytes_in_flight: u64, _app_limited: bool) {
        if self.last_send != Some(now) {
            self.prev_send = self.last_send;
            self.last_send = Some(now);
        }
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let acked = self.w.acked_segments(ack.acked_bytes);
        self.delivered_bytes += ack.acked_bytes;
        self.last_ack_time = Some(ack.now);
        if let Some(rtt) = ack.rtt_sample {
            if ack.acked_bytes > 0 {
                self.pkts_acked(ack, rtt.as_micros() as u64);
            }
        }
        if ack.in_recovery || !ack.cwnd_limited || acked == 0 {
            return;
        }
        let mut acked = acked;
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(ack.now, acked);
        let cnt = self.cnt;
        if self.ca_one_per_ack {
            // ns-3 TcpCubic::IncreaseWindow: one segment per ACK at most, remainder kept.
            self.w.cwnd_cnt += acked;
            if self.w.cwnd_cnt >= cnt {
                self.w.cwnd += 1;
                self.w.cwnd_cnt -= cnt;
            }
        } else {
            self.w.cong_avoid_ai(cnt, acked);
        }
    }

    fn on_congestion_event(&mut self, now: Time, signal: CongestionSignal, _bytes_in_flight: u64) {
        self.undo.save(&self.w);
        // Linux cubictcp_recalc_ssthresh.
        self.epoch_start = None;
        let cwnd = self.w.cwnd;
        self.last_max_cwnd =
            if cwnd < self.last_max_cwnd && self.fast_convergence { cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE) } else { cwnd };
        self.w.ssthresh = (cwnd * self.beta / BETA_SCALE).max(2);
        self.w.cwnd_cnt = 0;
        if signal == CongestionSignal::Timeout {
            self.w.enter_loss();
            self.loss_state(now, _bytes_in_flight);
        }
    }

    fn on_timeout_in_loss_episode(&mut self, now: Time, bytes_in_flight: u64) {
        self.loss_state(now, bytes_in_flight);
    }

    fn on_spurious_congestion(&mut self, _now: Time) {
        self.undo.undo(&mut self.w);
    }

    /// Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`: shift the epoch by the idle time so cwnd
    /// stays on the cubic curve (after any idle period, not only one longer than the RTO).
    fn on_tx_start(&mut self, now: Time, _app_limited: bool) {
        let lsnd = if self.last_send == Some(now) { self.prev_send } else { self.last_send };
        if let (Some(epoch), Some(last)) = (self.epoch_start, lsnd.or(self.last_ack_time)) {
            let nj = jiffies(now);
            let delta = nj.saturating_sub(jiffies(last));
            if delta > 0 {
                self.epoch_start = Some((epoch + delta).min(nj));
            }
        }
    }

    /// Linux `tcp_cwnd_restart` (CUBIC ignores `CA_EVENT_CWND_RESTART`).
    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
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
        let t = CubicParams::default();
        assert_eq!((t.beta, t.cube_rtt_scale), (717, 410), "beta = 717/1024, bic_scale 41 -> 410");
        assert!(t.fast_convergence && t.tcp_friendliness && t.hystart);
        assert_eq!((t.hystart_detect, t.hystart_low_window, t.hystart_ack_delta_us), (3, 16, 2000));
        let over = CubicParams::from_params(&params(&[("beta", 0.5), ("hystart", 0.0), ("hystart_delay_shift", 99.0)]));
        assert_eq!((over.beta, over.hystart, over.hystart_delay_shift), (512, false, 31), "shift clamped to 31");
    }
    use crate::cc::testing::{ack, one_round, AckClock};
    use std::time::Duration;

    const MSS: u64 = 1448;
    const C: f64 = 0.4;
    const BETA: f64 = 0.7;

    /// RFC 9438 eq. 1 and 2 (K = ∛((W_max − cwnd_epoch)/C)), in segments and seconds.
    fn w_cubic(t: f64, w_max: f64, cwnd_epoch: f64) -> f64 {
        let k = ((w_max - cwnd_epoch) / C).cbrt();
        C * (t - k).powi(3) + w_max
    }

    fn params(kv: &[(&str, f64)]) -> Params {
        Params(kv.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    /// A few slow-start rounds so delay_min is known, then a loss at `w_max` segments.
    fn cubic_after_loss_at(w_max: u64, rtt: Duration, p: &Params) -> (Cubic, Time) {
        let mut cc = Cubic::with_params(&CcConfig::default(), p);
        let mut t = Time::ZERO;
        for _ in 0..2 {
            t = one_round(&mut cc, t, rtt, MSS);
        }
        cc.set_cwnd(w_max * MSS);
        cc.on_congestion_event(t, CongestionSignal::FastRetransmit, w_max * MSS);
        cc.on_recovery_exit(t);
        (cc, t)
    }

    #[test]
    fn window_follows_the_rfc9438_cubic_curve_after_a_loss() {
        let rtt = Duration::from_millis(100);
        let w_max = 1000.0;
        let (mut cc, t0) = cubic_after_loss_at(1000, rtt, &Params::default());
        assert_eq!(cc.cwnd(), 700 * MSS, "beta = 0.7");
        let k = (w_max * (1.0 - BETA) / C).cbrt();
        let mut checkpoints = vec![k / 3.0, k, 1.8 * k];
        let mut t = t0;
        while let Some(&cp) = checkpoints.first() {
            t = one_round(&mut cc, t, rtt, MSS);
            let elapsed = (t - t0).as_secs_f64();
            if elapsed >= cp {
                let expected = w_cubic(elapsed, w_max, BETA * w_max);
                let got = (cc.cwnd() / MSS) as f64;
                assert!((got - expected).abs() <= 0.02 * expected, "t = {elapsed:.2}s: cwnd {got} vs W_cubic {expected:.1}");
                checkpoints.remove(0);
            }
        }
    }

    #[test]
    fn fast_convergence_lowers_w_max_after_a_loss_below_the_previous_one() {
        let rtt = Duration::from_millis(100);
        for fc in [1.0, 0.0] {
            let p = params(&[("fast_convergence", fc)]);
            let (mut cc, t) = cubic_after_loss_at(1000, rtt, &p);
            cc.set_cwnd(800 * MSS);
            cc.on_congestion_event(t, CongestionSignal::FastRetransmit, 800 * MSS);
            cc.on_recovery_exit(t);
            let expected_w_max = if fc == 1.0 { 800.0 * (1.0 + BETA) / 2.0 } else { 800.0 };
            assert!((cc.w_max_segments() as f64 - expected_w_max).abs() <= 1.0, "fc={fc}: {}", cc.w_max_segments());
            // The plateau is where the window goes: at t = K(W_max = 680) the window sits at 680
            // with fast convergence, close to 800 without.
            let k = ((680.0 - 560.0) / C).cbrt();
            let mut now = t;
            while (now - t).as_secs_f64() < k {
                now = one_round(&mut cc, now, rtt, MSS);
            }
            let got = (cc.cwnd() / MSS) as f64;
            let expected = w_cubic((now - t).as_secs_f64(), expected_w_max, 560.0);
            assert!((got - expected).abs() <= 0.02 * expected, "fc={fc}: cwnd {got} vs {expected:.1}");
        }
    }

    #[test]
    fn reno_friendly_region_dominates_at_short_rtt_and_small_window() {
        let rtt = Duration::from_millis(2);
        let (mut cc, t0) = cubic_after_loss_at(20, rtt, &Params::default());
        let start = (cc.cwnd() / MSS) as f64;
        let mut t = t0;
        let rounds = 200;
        for _ in 0..rounds {
            t = one_round(&mut cc, t, rtt, MSS);
        }
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        let w_est = start + alpha * rounds as f64;
        let got = (cc.cwnd() / MSS) as f64;
        let cubic_only = w_cubic((t - t0).as_secs_f64(), 20.0, 14.0);
        assert!((got - w_est).abs() <= 0.1 * w_est, "cwnd {got} vs W_est {w_est:.1}");
        assert!(got > 3.0 * cubic_only, "cwnd {got} should be far above W_cubic {cubic_only:.1}");

        let p = params(&[("tcp_friendliness", 0.0)]);
        let (mut cc, t0) = cubic_after_loss_at(20, rtt, &p);
        let mut t = t0;
        for _ in 0..rounds {
            t = one_round(&mut cc, t, rtt, MSS);
        }
        assert!(((cc.cwnd() / MSS) as f64) < 0.5 * w_est, "without friendliness cwnd stays near the curve");
    }

    /// Slow start with a synthetic ACK clock whose RTT is `rtt_of(round)`.
    fn slow_start_rounds(cc: &mut Cubic, rounds: usize, rtt_of: impl Fn(usize) -> Duration) -> Vec<(u64, bool)> {
        let mut t = Time::ZERO;
        let mut trace = Vec::new();
        for r in 0..rounds {
            t = one_round(cc, t, rtt_of(r), MSS);
            trace.push((cc.cwnd() / MSS, cc.in_slow_start()));
        }
        trace
    }

    #[test]
    fn hystart_leaves_slow_start_on_delay_increase_before_any_loss() {
        // 100 ms base RTT; from round 3 on the queue adds 20 ms (> delay_min/8 = 12.5 ms).
        // ACK spacing stays above 2 ms, so the ACK-train signal cannot fire: this is the delay one.
        let mut cc = Cubic::new(&CcConfig::default());
        let trace = slow_start_rounds(&mut cc, 3, |r| Duration::from_millis(if r < 2 { 100 } else { 120 }));
        assert!(trace[1].1, "still in slow start at constant RTT: {trace:?}");
        assert!(!cc.in_slow_start(), "HyStart should have ended slow start: {trace:?}");
        let ss = cc.ssthresh() / MSS;
        assert_eq!(ss, 48, "ssthresh = cwnd at detection (40 + 8 samples before the check)");
        assert_eq!(cc.w_max_segments(), 0, "no congestion event happened");

        // Control: same rounds without the delay increase stay in slow start.
        let mut cc = Cubic::new(&CcConfig::default());
        slow_start_rounds(&mut cc, 3, |_| Duration::from_millis(100));
        assert!(cc.in_slow_start());
        assert_eq!(cc.cwnd(), 80 * MSS);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start_when_acks_span_half_the_min_rtt() {
        // 100 ms RTT and 80 segments: ACKs 1.25 ms apart (< 2 ms) for longer than 50.5 ms.
        let mut cc = Cubic::with_params(&CcConfig::default(), &params(&[("hystart_detect", 1.0)]));
        let trace = slow_start_rounds(&mut cc, 4, |_| Duration::from_millis(100));
        assert!(!cc.in_slow_start(), "{trace:?}");
        let ss = cc.ssthresh() / MSS;
        // Detection in the round that starts at 80: after ~41 ACKs (51.25 ms) cwnd is ~121.
        assert!((115..=125).contains(&ss), "ssthresh {ss}");
        // Disabled HyStart keeps doubling.
        let mut cc = Cubic::with_params(&CcConfig::default(), &params(&[("hystart", 0.0)]));
        slow_start_rounds(&mut cc, 4, |_| Duration::from_millis(100));
        assert!(cc.in_slow_start());
    }

    /// ns-3 3.44 TcpCubic's HyStart choices (NS3_MATCHED_PARAMS["cubic"] in bench/cc_vs_ns3.py).
    fn ns3_hystart() -> Params {
        params(&[
            ("hystart_delay_shift", 0.0),
            ("hystart_delay_max_us", 1_000_000.0),
            ("hystart_train_shift", 0.0),
            ("hystart_first_samples_only", 1.0),
        ])
    }

    #[test]
    fn ns3_hystart_delay_threshold_is_the_whole_min_rtt() {
        // +20 ms on a 100 ms path ends slow start for Linux (threshold 12.5 ms) but not for ns-3
        // (threshold 100 ms); +110 ms ends it for both.
        let mut cc = Cubic::with_params(&CcConfig::default(), &ns3_hystart());
        let trace = slow_start_rounds(&mut cc, 3, |r| Duration::from_millis(if r < 2 { 100 } else { 120 }));
        assert!(cc.in_slow_start(), "ns-3 threshold: still in slow start {trace:?}");
        let mut cc = Cubic::with_params(&CcConfig::default(), &ns3_hystart());
        let trace = slow_start_rounds(&mut cc, 3, |r| Duration::from_millis(if r < 2 { 100 } else { 210 }));
        assert!(!cc.in_slow_start(), "ns-3 threshold: RTT more than doubled {trace:?}");
    }

    #[test]
    fn ns3_hystart_ack_train_must_last_the_whole_min_rtt() {
        // The train of the Linux test above (ACKs 1.25 ms apart over a 100 ms round) lasts ~100 ms:
        // longer than Linux's 50.5 ms but not longer than ns-3's delay_min (+ ack_delay) = 101 ms.
        let p = params(&[("hystart_detect", 1.0), ("hystart_train_shift", 0.0)]);
        let mut cc = Cubic::with_params(&CcConfig::default(), &p);
        let trace = slow_start_rounds(&mut cc, 4, |_| Duration::from_millis(100));
        assert!(cc.in_slow_start(), "{trace:?}");
    }

    #[test]
    fn ns3_hystart_keeps_the_min_of_the_first_eight_samples_only() {
        // One round at cwnd 40: the first 8 RTT samples are 120 ms, the rest 100 ms (delay_min
        // 100 ms from an earlier round). Linux folds the later samples into the round's minimum
        // (100 ms: no exit); ns-3 compares its first-8 minimum (120 ms > 100 + 12.5 ms: exit).
        for (first_only, exits) in [(0.0, false), (1.0, true)] {
            let p = params(&[("hystart_detect", 2.0), ("hystart_first_samples_only", first_only)]);
            let mut cc = Cubic::with_params(&CcConfig::default(), &p);
            let mut t = one_round(&mut cc, Time::ZERO, Duration::from_millis(100), MSS);
            t = one_round(&mut cc, t, Duration::from_millis(100), MSS);
            assert_eq!(cc.cwnd() / MSS, 40);
            let mut clock = AckClock::new(Duration::from_millis(100));
            clock.send(40 * MSS);
            for i in 0..40u64 {
                t += Duration::from_millis(2);
                let rtt = Duration::from_millis(if i < 8 { 120 } else { 100 });
                cc.on_ack(&clock.ack_with_rtt(t, MSS, rtt));
            }
            assert_eq!(!cc.in_slow_start(), exits, "first_samples_only = {first_only}");
        }
    }

    #[test]
    fn ns3_congestion_avoidance_adds_at_most_one_segment_per_ack() {
        // A 20-segment stretch ACK right after a loss (cnt = 2, the floor): Linux adds 10
        // segments, ns-3 one.
        for (one, expected) in [(0.0, 10), (1.0, 1)] {
            let p = params(&[("ca_one_per_ack", one)]);
            let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &p);
            cc.tcp_friendliness = false;
            cc.last_max_cwnd = 10_000; // far below W_max: the cubic target is far ahead, cnt = 2
            cc.epoch_start = None;
            let before = cc.cwnd() / MSS;
            cc.on_ack(&ack(t + Duration::from_millis(1), 20 * MSS, Duration::from_millis(50), 70 * MSS));
            assert_eq!(cc.cwnd() / MSS - before, expected, "ca_one_per_ack = {one}");
        }
    }

    #[test]
    fn ns3_delay_holdoff_and_rto_keeping_w_max() {
        // 1 s after an epoch starts Linux still ignores RTT samples; ns-3 only for 10 ms.
        for (holdoff, expected_min_us) in [(1000.0, 100_000), (10.0, 50_000)] {
            let p = params(&[("delay_holdoff_ms", holdoff)]);
            let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(100), &p);
            cc.on_ack(&ack(t + Duration::from_millis(1), MSS, Duration::from_millis(100), 70 * MSS));
            assert!(cc.epoch_start.is_some());
            cc.on_ack(&ack(t + Duration::from_millis(200), MSS, Duration::from_millis(50), 70 * MSS));
            assert_eq!(cc.delay_min_us, expected_min_us, "holdoff {holdoff} ms");
        }
        let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &params(&[("rto_keeps_w_max", 1.0)]));
        cc.on_congestion_event(t, CongestionSignal::Timeout, 70 * MSS);
        // The RTO's ssthresh step sets W_max = 70 * 1.7 / 2 (fast convergence, 70 < 100) and ns-3
        // keeps it; Linux then zeroes it (tested above).
        assert_eq!((cc.cwnd() / MSS, cc.w_max_segments()), (1, 59));
    }

    #[test]
    fn idle_period_shifts_the_epoch_so_growth_resumes_on_the_curve() {
        let rtt = Duration::from_millis(100);
        let run = |idle: Option<Duration>, notify: bool| {
            let (mut cc, t0) = cubic_after_loss_at(1000, rtt, &Params::default());
            let mut t = t0;
            for _ in 0..20 {
                t = one_round(&mut cc, t, rtt, MSS);
            }
            cc.on_packet_sent(t, MSS, 0, false);
            if let Some(idle) = idle {
                t += idle;
                if notify {
                    cc.on_tx_start(t, true);
                }
                cc.on_packet_sent(t, MSS, 0, false);
            }
            let before = cc.cwnd();
            one_round(&mut cc, t, rtt, MSS);
            cc.cwnd() - before
        };
        let growth_no_idle = run(None, true);
        let growth_after_idle = run(Some(Duration::from_secs(10)), true);
        let diff = growth_no_idle.abs_diff(growth_after_idle) / MSS;
        assert!(diff <= 2, "growth {} vs {} segments", growth_no_idle / MSS, growth_after_idle / MSS);
        // Without the shift, 10 s of idle move the curve past W_max: a jump, not a resume.
        let growth_unshifted = run(Some(Duration::from_secs(10)), false);
        assert!(growth_unshifted > 10 * growth_no_idle.max(MSS), "{}", growth_unshifted / MSS);
    }

    #[test]
    fn restart_after_idle_restarts_slow_start_towards_three_quarters_of_the_old_window() {
        let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &Params::default());
        assert_eq!((cc.cwnd() / MSS, cc.ssthresh() / MSS), (70, 70));
        // The window grew well past ssthresh before the idle period.
        cc.set_cwnd(200 * MSS);
        cc.on_restart_after_idle(t + Duration::from_secs(2), 10 * MSS);
        assert_eq!(cc.cwnd(), 10 * MSS);
        assert_eq!(cc.ssthresh(), 150 * MSS, "tcp_current_ssthresh = max(ssthresh, 3/4 cwnd)");
        assert!(cc.in_slow_start());
        // A restart window at or above cwnd (TX_START only) changes neither.
        cc.on_restart_after_idle(t + Duration::from_secs(4), u64::MAX);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (10 * MSS, 150 * MSS));
    }

    #[test]
    fn a_timeout_inside_a_recovery_episode_resets_the_cubic_state_without_a_second_cut() {
        // Linux tcp_enter_loss during Recovery: no second ssthresh(), but set_state(TCP_CA_Loss)
        // runs bictcp_reset (W_max = 0) and the HyStart reset. ns-3 keeps W_max.
        let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &Params::default());
        let ssthresh = cc.ssthresh();
        assert_eq!(cc.w_max_segments(), 100);
        cc.on_timeout_in_loss_episode(t + Duration::from_secs(1), 70 * MSS);
        assert_eq!(cc.w_max_segments(), 0);
        assert_eq!(cc.ssthresh(), ssthresh);
        let (mut ns3, t) = cubic_after_loss_at(100, Duration::from_millis(50), &params(&[("rto_keeps_w_max", 1.0)]));
        ns3.on_timeout_in_loss_episode(t + Duration::from_secs(1), 70 * MSS);
        assert_eq!(ns3.w_max_segments(), 100);
    }

    #[test]
    fn timeout_resets_w_max_and_collapses_the_window() {
        let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &Params::default());
        assert_eq!(cc.w_max_segments(), 100);
        cc.on_congestion_event(t, CongestionSignal::Timeout, 70 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.ssthresh(), 49 * MSS, "70 * 717/1024");
        assert_eq!(cc.w_max_segments(), 0, "TCP_CA_Loss resets bictcp state");
    }

    #[test]
    fn recovery_acks_do_not_grow_the_window() {
        let (mut cc, t) = cubic_after_loss_at(100, Duration::from_millis(50), &Params::default());
        let mut a = ack(t + Duration::from_millis(1), 10 * MSS, Duration::from_millis(50), 70 * MSS);
        a.in_recovery = true;
        let before = cc.cwnd();
        cc.on_ack(&a);
        assert_eq!(cc.cwnd(), before);
    }

    #[test]
    fn registry_parameters_reach_the_algorithm() {
        for (name, beta, expected) in [("cubic", 0.5, 50), ("cubic", 0.7, 70), ("bic", 0.5, 50), ("bic", 0.8, 79)] {
            let mut cc = crate::cc::build(name, &CcConfig::default(), &params(&[("beta", beta)])).unwrap();
            cc.set_cwnd(100 * MSS);
            cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 100 * MSS);
            assert_eq!(cc.ssthresh() / MSS, expected, "{name} beta={beta}");
        }
    }

    #[test]
    fn cube_root_is_exact_floor() {
        for a in [0u64, 1, 7, 8, 26, 27, 1_000_000, 999_999, u64::MAX / 2] {
            let r = cube_root(a) as u128;
            assert!(r.pow(3) <= a as u128 && (r + 1).pow(3) > a as u128, "{a}");
        }
    }

    #[test]
    fn two_flows_converge_to_a_fair_share_of_a_shared_bottleneck() {
        // 20 Mbit/s, 20 ms, one-BDP drop-tail buffer; the second flow joins 5 s later.
        let link = crate::units::Bandwidth::from_mbps(20);
        let shares = crate::cc::testing_path::two_flow_shares(
            || Box::new(Cubic::new(&CcConfig::default())),
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
