//! Is tail-loss probing on at this server? Deciding the single-segment re-sends at the end of
//! the analysis (issue 16).
//!
//! With one segment outstanding, a tail-loss probe and an RTO re-send the same bytes at the same
//! instant: Linux's PTO is 2·SRTT + TCP_RTO_MIN when `packets_out == 1`
//! (`tcp_schedule_loss_probe`, tcp_output.c), never later than the RTO (`rto_delta_us`), and
//! Linux's RTO is SRTT + max(4·mdev, TCP_RTO_MIN) (`tcp_set_rto`), so the PTO is clamped to the
//! RTO instant. `tlp.rs` rule 4 (a probe leaves before 0.9·RTO) cannot separate them: the
//! crowdlive study's voice-/I-only connections (one small frame outstanding at a time) had their
//! probes typed as RTOs. Two things on the wire do separate them:
//!
//! 1. **The server's setting.** TLP is a per-host (per network namespace) sysctl
//!    (`net.ipv4.tcp_early_retrans` 3 or 4; SACK required, `tcp_is_sack`). A timer-driven re-send
//!    of the highest segment while ≥ 2 segments are outstanding in the Open state is a probe and
//!    nothing else (an RTO re-sends the first unacknowledged segment, `tcp_retransmit_timer` →
//!    `tcp_retransmit_skb(tcp_rtx_queue_head)`): one such re-send in *any* flow of a server
//!    says TLP is on there. Conversely, with TLP on, an ACK in the Open state arms the PTO
//!    (`tcp_ack` → `tcp_set_xmit_timer` → `tcp_schedule_loss_probe`), so an RTO of the first
//!    segment with ≥ 2 outstanding that comes as the first transmission more than
//!    1.25·(2·SRTT) + 2 ms after that ACK would have been preceded by a probe: it says TLP is
//!    off there. Probes seen ≥ RTOs of that shape ⇒ on; more such RTOs ⇒ off.
//! 2. **What follows the re-send** (per re-send, stronger than the server's setting): if the
//!    same bytes are re-sent again by the timer with no client packet in between, the gap says
//!    which timer sent the first: after a probe Linux re-arms the RTO at its current value from
//!    the probe (`tcp_send_loss_probe` clears `icsk_pending` then `tcp_rearm_rto`), so the next
//!    re-send comes ≈ 1·RTO later; after an RTO the timer is backed off
//!    (`tcp_retransmit_timer`: `icsk_rto = min(icsk_rto << 1, TCP_RTO_MAX)`), so ≈ 2·RTO. Both
//!    are measured against the silence before the first re-send (≈ 1·RTO either way), so the
//!    ratio needs no RTO estimate: below 1.5 ⇒ probe, else RTO.
//!    (An RTO also collapses cwnd to 1 — `tcp_enter_loss` — while a probe leaves it; on an
//!    application-limited single-segment connection the next flight is one frame either way,
//!    so that cue is not used.)
//!
//! 3. **The window after it** (`rto_window.rs`, session 19): an RTO of the only outstanding
//!    segment leaves a window of one packet that grows by slow start; a flight above that says
//!    probe — per re-send, and as a server vote like an unambiguous probe.
//!
//! Order: the window cue, the follow-up cue, then the server's setting, then `tlp.rs` rule 4's
//! timing (the provisional decision made while the flow ran).
//!
//! Deviation / limits: the flow's own state ran with the provisional decision (an RTO backs off
//! the analyzer's RTO estimate and opens a loss episode; a probe does neither), and a re-decided
//! re-send does not replay it: later stall thresholds and timing rules of that flow can differ
//! slightly from a run that knew the setting from the start. RACK on/off (`net.ipv4.tcp_recovery`)
//! is inferred the same way in `rack_inference.rs` (run after this module).

use std::collections::HashMap;

use crate::flow::FlowOut;
use crate::retrans::{self, RetransKind, TimeoutEvidence, TimeoutType};
use crate::rto_window::WindowCue;
use crate::stall::StallKind;

/// What a timer-driven re-send says about the server's TLP setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlpEvidence {
    /// Unambiguous probes: the highest segment re-sent by a timer with ≥ 2 segments out.
    pub probes: u32,
    /// RTOs of the first of ≥ 2 segments in the Open state, with no probe in a silence longer
    /// than the PTO.
    pub rtos_without_probe: u32,
}

impl TlpEvidence {
    /// Add another flow's votes (the setting is the server's, decided from all its flows).
    pub fn absorb(&mut self, other: &TlpEvidence) {
        self.probes += other.probes;
        self.rtos_without_probe += other.rtos_without_probe;
    }

    /// TLP on (Some(true)), off (Some(false)) or unknown.
    pub fn tlp_on(&self) -> Option<bool> {
        match (self.probes, self.rtos_without_probe) {
            (0, 0) => None,
            (p, r) => Some(p >= r),
        }
    }
}

/// Share of 2·SRTT (the PTO) a silence must exceed before an RTO says "no probe was armed".
pub const PTO_MARGIN: f64 = 1.25;
/// Linux TCP_TIMEOUT_MIN (2 jiffies) added to the PTO with ≥ 2 segments out.
pub const PTO_SLACK_NS: u64 = 2_000_000;
/// Ratio (next timer re-send gap / silence before the first) below which the first was a probe.
const FOLLOW_UP_RATIO: f64 = 1.5;

/// Is this RTO of the first unacknowledged segment evidence that no probe was armed?
/// `silence_ns`: since the last client packet, with no server transmission since it.
pub fn rto_says_no_probe(silence_ns: u64, srtt_ns: Option<u64>) -> bool {
    srtt_ns.is_some_and(|srtt| silence_ns as f64 > PTO_MARGIN * 2.0 * srtt as f64 + PTO_SLACK_NS as f64)
}

/// One timer-driven re-send of the single outstanding segment (rule 4 of `tlp.rs`), decided
/// provisionally while the flow ran.
#[derive(Clone, Debug)]
pub struct AmbiguousResend {
    /// Index of its retransmission row.
    pub rec: usize,
    pub ts_ns: u64,
    pub seq: u64,
    /// Time since the last transmission or client packet before it.
    pub silence_ns: u64,
    /// Gap to the next timer-driven re-send of the same bytes with no client packet between.
    pub next_resend_gap_ns: Option<u64>,
    /// The flight after it exceeded what an RTO's window allows, and when (rto_window.rs).
    pub window: Option<WindowCue>,
    /// Timeout evidence, known at the end of the flow (for either decision).
    pub evidence: Option<TimeoutEvidence>,
    /// The stall the re-send ended: its index, class if a probe, class if an RTO.
    pub stall: Option<(usize, StallKind, StallKind)>,
}

impl AmbiguousResend {
    /// The window cue alone: the flight after the re-send proves it a probe (rto_window.rs).
    /// Past the covering ACK an RTO could have been undone, which needs a spurious re-send.
    pub fn window_says_probe(&self) -> bool {
        match self.window {
            Some(WindowCue::BeforeAck) => true,
            Some(WindowCue::AfterAck) => !self.evidence.is_some_and(|e| e.spurious),
            None => false,
        }
    }

    /// The follow-up cue alone: Some(true) probe, Some(false) RTO, None no follow-up.
    pub fn follow_up_says_probe(&self) -> Option<bool> {
        let next = self.next_resend_gap_ns?;
        (self.silence_ns > 0).then_some((next as f64) < FOLLOW_UP_RATIO * self.silence_ns as f64)
    }
}

/// The final decision for one ambiguous re-send (module comment, "Order").
pub fn decide(a: &AmbiguousResend, server_tlp_on: Option<bool>, provisional: RetransKind) -> RetransKind {
    let probe = a.window_says_probe() || a.follow_up_says_probe().or(server_tlp_on).unwrap_or(provisional == RetransKind::Tlp);
    if probe {
        RetransKind::Tlp
    } else {
        RetransKind::Timeout
    }
}

/// One flow's votes on its server's TLP setting: its unambiguous probes and probe-less RTOs,
/// and the single-segment re-sends whose window proves them probes (as unambiguous as a probe
/// with ≥ 2 segments out).
pub fn flow_votes(f: &FlowOut) -> TlpEvidence {
    let window_probes = f.ambiguous.iter().filter(|a| a.window_says_probe()).count() as u32;
    TlpEvidence { probes: f.tlp_evidence.probes + window_probes, ..f.tlp_evidence }
}

/// Re-decide every ambiguous re-send with the evidence of all flows of its server, and recount
/// the flow's probe/timeout counters, timeout types and the class of the stall it ended.
pub fn resolve(flows: &mut [FlowOut]) {
    let mut by_server: HashMap<u128, TlpEvidence> = HashMap::new();
    for f in flows.iter() {
        by_server.entry(f.server.0).or_default().absorb(&flow_votes(f));
    }
    for f in flows.iter_mut() {
        let on = by_server.get(&f.server.0).and_then(TlpEvidence::tlp_on);
        let ambiguous = std::mem::take(&mut f.ambiguous);
        for a in &ambiguous {
            let was = f.retrans[a.rec].kind;
            let now = decide(a, on, was);
            if now != was {
                relabel(f, a, now);
            }
        }
        f.ambiguous = ambiguous;
    }
}

fn type_index(t: TimeoutType) -> usize {
    TimeoutType::ALL.iter().position(|&x| x == t).unwrap_or(TimeoutType::ALL.len() - 1)
}

/// Move one re-send between `Timeout` and `Tlp`, with every count that depends on it.
fn relabel(f: &mut FlowOut, a: &AmbiguousResend, kind: RetransKind) {
    let fi = f.retrans[a.rec].frame.index();
    match kind {
        RetransKind::Tlp => {
            if let Some(t) = f.retrans[a.rec].timeout_type {
                let slot = &mut f.timeout_types_by_frame[fi][type_index(t)];
                *slot = slot.saturating_sub(1);
            }
            f.timeout_retrans = f.timeout_retrans.saturating_sub(1);
            f.frame_pkts[fi].timeouts = f.frame_pkts[fi].timeouts.saturating_sub(1);
            f.tlp_retrans += 1;
            let r = &mut f.retrans[a.rec];
            r.kind = RetransKind::Tlp;
            r.timeout_type = None;
            r.evidence = None;
            if let Some((si, if_probe, _)) = a.stall {
                f.stalls[si].retrans = None;
                f.stalls[si].kind_down = if_probe;
            }
        }
        _ => {
            f.tlp_retrans = f.tlp_retrans.saturating_sub(1);
            count_as_timeout(f, a.rec, a.evidence, a.stall);
        }
    }
}

/// Make retransmission row `rec` a timeout: its type from `evidence`, the per-frame and flow
/// timeout counts, and the stall it ended (`stall`: index, class if not an RTO, class if an RTO).
/// The caller takes it out of the count of the kind it had (TLP here, fast in `rack_inference`).
pub(crate) fn count_as_timeout(
    f: &mut FlowOut,
    rec: usize,
    evidence: Option<TimeoutEvidence>,
    stall: Option<(usize, StallKind, StallKind)>,
) {
    let fi = f.retrans[rec].frame.index();
    let ev = evidence.unwrap_or_default();
    let t = retrans::classify_timeout(&ev);
    f.timeout_types_by_frame[fi][type_index(t)] += 1;
    f.timeout_retrans += 1;
    f.frame_pkts[fi].timeouts += 1;
    let r = &mut f.retrans[rec];
    r.kind = RetransKind::Timeout;
    r.timeout_type = Some(t);
    r.evidence = Some(ev);
    if let Some((si, _, if_rto)) = stall {
        f.stalls[si].retrans = Some(rec);
        f.stalls[si].kind_down = if_rto;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resend(silence_ms: u64, next_ms: Option<u64>) -> AmbiguousResend {
        AmbiguousResend {
            rec: 0,
            ts_ns: 0,
            seq: 0,
            silence_ns: silence_ms * 1_000_000,
            next_resend_gap_ns: next_ms.map(|m| m * 1_000_000),
            window: None,
            evidence: None,
            stall: None,
        }
    }

    #[test]
    fn a_next_resend_one_rto_later_marks_a_probe_and_two_rtos_later_an_rto() {
        assert_eq!(resend(300, Some(310)).follow_up_says_probe(), Some(true));
        assert_eq!(resend(300, Some(600)).follow_up_says_probe(), Some(false));
        assert_eq!(resend(300, None).follow_up_says_probe(), None);
    }

    #[test]
    fn the_follow_up_wins_over_the_server_setting_which_wins_over_timing() {
        assert_eq!(decide(&resend(300, Some(600)), Some(true), RetransKind::Tlp), RetransKind::Timeout);
        assert_eq!(decide(&resend(300, None), Some(true), RetransKind::Timeout), RetransKind::Tlp);
        assert_eq!(decide(&resend(300, None), Some(false), RetransKind::Tlp), RetransKind::Timeout);
        assert_eq!(decide(&resend(300, None), None, RetransKind::Tlp), RetransKind::Tlp);
    }

    #[test]
    fn the_server_setting_follows_the_majority_of_unambiguous_re_sends() {
        assert_eq!(TlpEvidence::default().tlp_on(), None);
        assert_eq!(TlpEvidence { probes: 1, rtos_without_probe: 0 }.tlp_on(), Some(true));
        assert_eq!(TlpEvidence { probes: 0, rtos_without_probe: 2 }.tlp_on(), Some(false));
    }

    #[test]
    fn an_rto_says_no_probe_only_after_a_silence_longer_than_the_pto() {
        assert!(!rto_says_no_probe(200_000_000, Some(100_000_000)));
        assert!(rto_says_no_probe(300_000_000, Some(100_000_000)));
        assert!(!rto_says_no_probe(300_000_000, None));
    }
}
