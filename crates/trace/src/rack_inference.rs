//! Is RACK on at this server? Deciding the timer-looking "fast" re-sends at the end of the
//! analysis (issue 16, session 8).
//!
//! `rack_timer.rs` assumes RACK (RFC 8985; Linux `net.ipv4.tcp_recovery` bit 1, on by default
//! since 4.18) and so types a re-send as RACK's whenever RACK's reordering timer could have sent
//! it: within SRTT of the first ACK that reported data sent after the segment. With RACK off,
//! Linux finds a loss from ACKs only with `sacked_out + 1 > reordering` (`tcp_time_to_recover`,
//! `tcp_dupack_heuristics`; reordering 3 by default): at least 3 SACKed segments or 3 duplicate
//! ACKs. So a re-send that starts a recovery with fewer than that, sent by a timer (no client
//! packet just before it), is RACK's if RACK is on and the RTO's if it is off. The crowdlive
//! study's `per_type_tlp_off` variant (`rack_tlp = false`) had one: a voice segment, the next one
//! SACKed 23 ms before the re-send, typed `fast`; the truth says RTO (less packet).
//!
//! RACK is a per-host (per network namespace) setting, so the wire decides it per server, like
//! `tlp_inference.rs` decides TLP:
//! - **RACK on**: a re-send of the first unacknowledged segment, in the Open state, with fewer
//!   than 3 SACKed segments and fewer than 3 duplicate ACKs, sent within `RACK_SLACK_NS` of a
//!   client packet. Nothing but RACK sends it there (Linux sends it while processing that ACK;
//!   no timer coincides with an ACK that closely, and classic dupthresh needs 3).
//! - **RACK off**: an RTO of the first unacknowledged segment (never re-sent before, outside any
//!   loss episode, fewer than 3 SACKed segments and duplicate ACKs — with more, a RACK-off
//!   server recovers by dupthresh, so an RTO there says nothing about RACK) that was already overdue when data sent more than SRTT after it was reported
//!   delivered, more than SRTT before the RTO. RACK would have marked it lost at that ACK
//!   (RACK.rtt + reo_wnd ≤ 2·SRTT had passed since its send) and re-sent it at once: Linux
//!   enters recovery in the same ACK processing, and PRR lets the first re-send out whatever
//!   the window (`tcp_cwnd_reduction`: at least one segment when `prr_out` is 0).
//! - **RACK off**, too: a recovery DupThresh starts (the third SACKed segment or duplicate ACK) for
//!   a first-time segment at SND.UNA that was overdue in the same sense — more than SRTT past
//!   RACK's latest deadline when the re-send leaves. RACK on would have re-sent it at the earlier
//!   ACK; a RACK-off server waits for the third SACK (issue 16 session 16: the default study's
//!   per_type_tlp_off server had 14 such re-sends beside its 3 RTOs, the RACK-on variants none).
//!
//! An on-vote is itself a re-send the server's setting decides: with RACK off, nothing ACK-driven
//! sends a first-time head with fewer than 3 SACKs (Linux ≥ 4.11 has no early retransmit), so at
//! a server whose other re-sends say RACK off it was the RTO, and the ACK before it came by
//! chance (the default study's tlp_off has one, 0.7 ms after a SACK; it is a tie there, 1 vote
//! each way, and ties keep RACK on).
//!
//! The same holds for a lost *retransmission* re-sent outside a post-RTO episode (a `double`
//! timeout in the seed's taxonomy): only RACK finds it from ACKs (Linux dropped its other
//! lost-retransmit detection in 4.4), so one sent by a timer within RACK's window is RACK's
//! with RACK on and the RTO's with RACK off (the study's `--full` tlp_off variant had three).
//!
//! Order per ambiguous re-send: the server's setting if the wire told it (more on-evidence than
//! off-evidence ⇒ on), else the provisional `fast` (RACK assumed on, the Linux default).
//!
//! Deviations / limits: Linux before 4.11 also had early retransmit (RFC 5827, a delayed re-send
//! with < 3 SACKs, `tcp_early_retrans` 2/3) — that era's RACK-off servers could send a `fast`
//! re-send with < 3 SACKs; not modelled. As in `tlp_inference.rs`, a re-decided re-send does not
//! replay the flow's state (a `fast` opened a recovery episode, an RTO would have backed off the
//! RTO estimate and opened a loss episode).

use std::collections::HashMap;

use crate::flow::FlowOut;
use crate::retrans::{RetransKind, TimeoutEvidence};
use crate::stall::StallKind;

/// SACKed segments or duplicate ACKs that let Linux recover without RACK (`tcp_reordering`
/// default 3: `sacked_out + 1 > 3`).
pub const DUPTHRESH: u32 = 3;

/// What re-sends of one flow say about its server's RACK setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RackEvidence {
    /// Re-sends only RACK could have sent at an ACK (fewer than 3 SACKs / dupacks).
    pub rack_resends: u32,
    /// RTOs of segments RACK would have re-sent at an earlier ACK.
    pub rtos_rack_would_have_prevented: u32,
    /// Recoveries started by the third SACK or duplicate ACK (DupThresh) for a segment RACK
    /// would have re-sent at an earlier ACK.
    pub dupthresh_resends_rack_would_have_sent_sooner: u32,
}

impl RackEvidence {
    /// Add another flow's votes (the setting is the server's, decided from all its flows).
    pub fn absorb(&mut self, other: &RackEvidence) {
        self.rack_resends += other.rack_resends;
        self.rtos_rack_would_have_prevented += other.rtos_rack_would_have_prevented;
        self.dupthresh_resends_rack_would_have_sent_sooner += other.dupthresh_resends_rack_would_have_sent_sooner;
    }

    /// RACK on (Some(true)), off (Some(false)) or unknown.
    pub fn rack_on(&self) -> Option<bool> {
        match (self.rack_resends, self.rtos_rack_would_have_prevented + self.dupthresh_resends_rack_would_have_sent_sooner) {
            (0, 0) => None,
            (on, off) => Some(on >= off),
        }
    }
}

/// A timer-sent re-send with fewer than 3 SACKs / dupacks, typed `fast` provisionally (RACK
/// assumed on): an RTO if the server turns out to have RACK off.
#[derive(Clone, Debug)]
pub struct RackOnlyResend {
    /// Index of its retransmission row.
    pub rec: usize,
    pub ts_ns: u64,
    /// Timeout evidence, known at the end of the flow (used if it becomes an RTO).
    pub evidence: Option<TimeoutEvidence>,
    /// The stall the re-send ended: its index, class if RACK's, class if an RTO.
    pub stall: Option<(usize, StallKind, StallKind)>,
}

/// Re-decide every RACK-only re-send with the evidence of all flows of its server.
pub fn resolve(flows: &mut [FlowOut]) {
    let mut by_server: HashMap<u128, RackEvidence> = HashMap::new();
    for f in flows.iter() {
        by_server.entry(f.server.0).or_default().absorb(&f.rack_evidence);
    }
    for f in flows.iter_mut() {
        if by_server.get(&f.server.0).and_then(RackEvidence::rack_on) != Some(false) {
            continue;
        }
        let resends = std::mem::take(&mut f.rack_only);
        for a in &resends {
            if f.retrans[a.rec].kind == RetransKind::Fast {
                make_timeout(f, a);
            }
        }
        f.rack_only = resends;
    }
}

/// Move one re-send from `Fast` to `Timeout`, with every count that depends on it.
fn make_timeout(f: &mut FlowOut, a: &RackOnlyResend) {
    f.fast_retrans = f.fast_retrans.saturating_sub(1);
    crate::tlp_inference::count_as_timeout(f, a.rec, a.evidence, a.stall);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_setting_follows_the_majority_of_unambiguous_re_sends_and_ties_keep_rack_on() {
        assert_eq!(RackEvidence::default().rack_on(), None);
        assert_eq!(RackEvidence { rack_resends: 0, rtos_rack_would_have_prevented: 1, ..Default::default() }.rack_on(), Some(false));
        assert_eq!(RackEvidence { rack_resends: 2, rtos_rack_would_have_prevented: 1, ..Default::default() }.rack_on(), Some(true));
        assert_eq!(RackEvidence { rack_resends: 1, rtos_rack_would_have_prevented: 1, ..Default::default() }.rack_on(), Some(true));
    }
}
