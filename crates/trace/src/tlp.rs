//! Tail-loss probes seen from the wire (RACK-TLP, RFC 8985 §7; Linux `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`).
//!
//! In the Open state (no loss recovery, nothing SACKed) with data outstanding, Linux arms a probe
//! timeout PTO = 2·SRTT (+ 2 ms, or + 200 ms for a delayed ACK when one segment is out), never
//! later than the RTO, from the last transmission or ACK. When it fires the sender sends new data
//! if it can, else **re-sends the highest segment sent**; it does not back off the RTO, reduce
//! cwnd or enter loss recovery, and sends no second probe until an ACK covers the first
//! (`tlp_high_seq`). Such a re-send is timer-driven but is no RTO; the seed (2016) counts
//! timer-driven re-sends as timeout retransmissions because TLP was new then. We give it its own
//! kind, `tlp` (issue 16: the simulator's truth listed them separately and the analyzer typed all
//! of them as timeouts).
//!
//! Rule: a re-send that is not ACK-clocked is a probe when
//! 1. the sender was in the Open state: no recovery or post-RTO episode, no SACKed data
//!    outstanding, no duplicate ACKs;
//! 2. it covers the highest byte sent (snd_max) — an RTO re-sends the *first* unacknowledged
//!    segment instead;
//! 3. no earlier probe is still unacknowledged;
//! 4. with more than one segment outstanding (the probe and the RTO would re-send different
//!    segments) it is a probe; with one segment outstanding both re-send the same bytes and the
//!    PTO is capped at the RTO, so they leave at the same time: we call it a probe when it left
//!    before the estimated RTO (less than 90 % of it after the last event), else a timeout.
//!
//! Rule 4's timing is only the provisional answer: `tlp_inference.rs` re-decides these re-sends
//! at the end of the analysis from the server's TLP setting and what followed them.
//!
//! Deviation / limit: whether TLP is on (Linux ≥ 3.10 with SACK) is not visible on the wire; a
//! sender without TLP whose RTO re-sends the only outstanding segment early (its RTO estimate
//! below ours) is called a probe.

/// Probe state of one sender.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProbeTracker {
    /// snd_max when the last probe left; cleared when an ACK reaches it or at an RTO.
    high: Option<u64>,
}

/// What the wire shows about the sender when a timer-driven re-send leaves.
#[derive(Debug, Clone, Copy)]
pub struct ResendContext {
    /// No recovery/loss episode, no SACKed data, no duplicate ACKs.
    pub open_state: bool,
    /// The re-sent range ends at the highest byte sent.
    pub covers_snd_max: bool,
    /// The re-sent range starts at the first unacknowledged byte.
    pub at_snd_una: bool,
    /// Time since the last transmission or client packet, whichever is later.
    pub since_last_event_ns: u64,
    /// The analyzer's RTO estimate.
    pub rto_ns: u64,
}

/// Share of the estimated RTO before which a single-segment re-send is a probe (rule 4).
const SINGLE_SEGMENT_RTO_SHARE: f64 = 0.9;

impl ProbeTracker {
    /// Rules 1–4: is this timer-driven re-send a tail-loss probe?
    pub fn is_probe(&self, c: &ResendContext) -> bool {
        if !c.open_state || !c.covers_snd_max || self.high.is_some() {
            return false;
        }
        !c.at_snd_una || (c.since_last_event_ns as f64) < SINGLE_SEGMENT_RTO_SHARE * c.rto_ns as f64
    }

    /// Rule 4's case: the only outstanding segment re-sent in the Open state with no probe
    /// unacknowledged — a probe or an RTO, decided at the end (`tlp_inference.rs`).
    pub fn is_single_segment_case(&self, c: &ResendContext) -> bool {
        c.open_state && c.covers_snd_max && c.at_snd_una && self.high.is_none()
    }

    /// A probe left while the highest byte sent was `snd_max`.
    pub fn on_probe(&mut self, snd_max: u64) {
        self.high = Some(snd_max);
    }

    /// A cumulative ACK to `snd_una` (Linux `tcp_process_tlp_ack` ends the probe episode).
    pub fn on_ack(&mut self, snd_una: u64) {
        if self.high.is_some_and(|h| snd_una >= h) {
            self.high = None;
        }
    }

    /// An RTO ends any probe episode.
    pub fn on_timeout(&mut self) {
        self.high = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ResendContext {
        ResendContext { open_state: true, covers_snd_max: true, at_snd_una: false, since_last_event_ns: 62_000_000, rto_ns: 230_000_000 }
    }

    #[test]
    fn a_timer_resend_of_the_last_of_several_segments_in_the_open_state_is_a_probe() {
        assert!(ProbeTracker::default().is_probe(&ctx()));
    }

    #[test]
    fn a_timer_resend_of_the_first_unacked_of_several_segments_is_no_probe() {
        let c = ResendContext { covers_snd_max: false, at_snd_una: true, ..ctx() };
        assert!(!ProbeTracker::default().is_probe(&c));
    }

    #[test]
    fn no_probe_during_recovery_or_while_a_probe_is_unacknowledged() {
        let c = ResendContext { open_state: false, ..ctx() };
        assert!(!ProbeTracker::default().is_probe(&c));
        let mut t = ProbeTracker::default();
        t.on_probe(10_000);
        assert!(!t.is_probe(&ctx()));
        t.on_ack(9_000);
        assert!(!t.is_probe(&ctx()));
        t.on_ack(10_000);
        assert!(t.is_probe(&ctx()));
    }

    #[test]
    fn a_single_outstanding_segment_is_a_probe_only_before_the_rto() {
        let early = ResendContext { at_snd_una: true, since_last_event_ns: 100_000_000, ..ctx() };
        assert!(ProbeTracker::default().is_probe(&early));
        let at_rto = ResendContext { since_last_event_ns: 229_000_000, ..early };
        assert!(!ProbeTracker::default().is_probe(&at_rto));
    }
}
