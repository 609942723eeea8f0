//! Retransmission detection and the typing of timeout retransmissions (Zhou et al. §3.2, Table 5).
//!
//! A server data segment whose sequence range lies (partly) below the highest sequence already
//! sent is a retransmission. Its *kind* comes from what preceded it at the server:
//! - `Fast`: sent right after (within `ACK_CLOCK_NS`) a client ACK that was a duplicate ACK or
//!   carried SACK information, or during fast recovery — ACK-clocked loss recovery (RFC 5681
//!   §3.2, RFC 6675) — or less than one SRTT after such an ACK (RACK's reordering-window timer,
//!   RFC 8985 §6.2: a segment sent before the SACKed one is at least an RTT old when the SACK
//!   arrives, so the timer fires within the reordering window, at most one SRTT, after it; an
//!   RTO fires at least RTO ≥ SRTT + 200 ms in Linux after the last ACK. Issue 16: the former
//!   1.5·SRTT bound called the simulator's RTOs on 150 ms paths fast retransmissions).
//! - `Recovery`: ACK-clocked retransmission after a timeout, while the sender is still in its
//!   post-RTO loss episode (Linux `TCP_CA_Loss` retransmits the rest of the window as ACKs come).
//! - `Timeout`: not ACK-clocked — the retransmission timer fired (RTO, RFC 6298 §5). This is what
//!   the seed calls "timeout retransmission".
//! - `Tlp`: not ACK-clocked, a tail-loss probe re-sending the highest segment (RFC 8985 §7; rule
//!   in `tlp.rs`). Timer-driven but no RTO: no backoff, no loss episode. The seed (2016) would
//!   count it as a timeout; we keep it apart (issue 16) and do not type it.
//! - `Fast` by RACK's timer: the ACK-clock test fails but RACK could have fired (`rack_timer.rs`:
//!   within about one SRTT of the first ACK that reported data sent after the lost copy).
//! - `Other`: ACK-clocked without loss evidence. Since issue 16 session 7, not when the client
//!   packet just before the re-send cannot have triggered it ([`timer_beside_a_signal_free_ack`]):
//!   no loss signal in it, none outstanding (no dupacks counted, nothing SACKed), no loss episode,
//!   and the segment older than 0.9·RTO — an RTO that fired just after the client's own
//!   retransmitted request (both ends armed their RTO from the same handshake sample and fire
//!   together: the study's per-type connections whose whole first window a short queue dropped).
//!   Narrow on purpose: with dupacks or SACKs seen, an unexplained re-send stays `Other` (at a
//!   client-side vantage point the triggering ACK is a whole RTT before the re-send).
//!
//! Timeout types. The seed's words (§3.2), and the rule we apply:
//! - Double: "If the retransmitted packet by fast retransmit is dropped by the network, timeout
//!   retransmission has to be triggered and this timeout retransmission is referred to as double
//!   retransmission." Rule: the segment had been retransmitted before. (A backed-off second RTO
//!   of the same segment is the same situation — a retransmission lost again — so it is counted
//!   here too; `prior_kind` in the table tells the two apart.)
//! - ACK delay/loss: "The ACK delay/loss [...] will also result in timeout retransmission, as
//!   [...] no dupacks can be produced." Rule: the retransmission was spurious — a D-SACK (RFC
//!   2883) reported the segment twice, or the ACK covering it echoed the original's TSval
//!   (Eifel detection, RFC 3522), or, without timestamps, the covering ACK arrived sooner than
//!   half the minimum RTT after the retransmission (it cannot be for the retransmission). Also
//!   (below) when later segments evidently arrived but their dupacks never reached the server
//!   (no SACK for them came after the timeout either: then they were late, not lost).
//! - Less packet: "Insufficient number of dupacks to trigger fast retransmit may be also due to
//!   that the server sends less than 4 packets out (limited by either congestion window (cwnd)
//!   or rwnd)". Rule: at most 3 packets were outstanding at any time while the lost segment was
//!   (the seed's §3.2 also counts application-limited small frames here: "when sending frame V,
//!   there are often fewer packets in the network"), unless this is the end of the flow.
//! - Tail: "If the lost packet is in the last three packets of the flow, there are not enough
//!   duplicate acknowledgments (dupacks) to trigger fast retransmit". Rule: fewer than 3 segments
//!   were sent after the lost one before the timeout (so at most 2 dupacks could come), or the
//!   lost segment is among the last 3 data segments of the whole flow.
//! - Continuous loss: "all packets sent out being lost". Rule (TAPO's reading): at least 3
//!   segments followed the lost one, no duplicate ACK or SACK came for it (ACKs for data sent
//!   before it may: they say nothing about the later segments), the ACK that finally covered
//!   the retransmission did not reach beyond it and no SACK showed a later segment's first copy
//!   arrived (the receiver had none of the later segments either).
//! - Other: none of the above (e.g. 1–2 dupacks arrived for a large window: partial loss of the
//!   dupacks, or reordering fooled the sender).
//!
//! Order of the rules: double, ACK delay/loss (spurious), less packet, tail, continuous loss,
//! ACK delay/loss (later segments arrived, no dupacks), other.

use serde::Serialize;

/// How a retransmission was triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetransKind {
    Fast,
    Timeout,
    Recovery,
    Other,
    Tlp,
}

impl RetransKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RetransKind::Fast => "fast",
            RetransKind::Timeout => "timeout",
            RetransKind::Recovery => "recovery",
            RetransKind::Other => "other",
            RetransKind::Tlp => "tlp",
        }
    }
}

/// Type of a timeout retransmission (Table 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutType {
    Tail,
    LessPacket,
    Double,
    AckDelayLoss,
    ContinuousLoss,
    Other,
}

impl TimeoutType {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutType::Tail => "tail",
            TimeoutType::LessPacket => "less_packet",
            TimeoutType::Double => "double",
            TimeoutType::AckDelayLoss => "ack_delay_loss",
            TimeoutType::ContinuousLoss => "continuous_loss",
            TimeoutType::Other => "other",
        }
    }
    pub const ALL: [TimeoutType; 6] = [
        TimeoutType::Tail,
        TimeoutType::LessPacket,
        TimeoutType::Double,
        TimeoutType::AckDelayLoss,
        TimeoutType::ContinuousLoss,
        TimeoutType::Other,
    ];
}

/// A retransmission sent within this time after a client packet is ACK-clocked. At the
/// server's vantage point an ACK-triggered retransmission follows its ACK by microseconds; a
/// timer-driven one follows the last event by at least Linux's 10 ms TLP floor or the 200 ms
/// RTO floor.
pub const ACK_CLOCK_NS: u64 = 2_000_000;

/// What is known of a re-send that came within `ACK_CLOCK_NS` of a client packet.
#[derive(Clone, Copy, Debug)]
pub struct QuietResend {
    /// The client packet was a duplicate ACK or carried SACK blocks, or fast recovery is on.
    pub loss_evidence: bool,
    /// The post-RTO episode (Linux `TCP_CA_Loss`), where each ACK releases more re-sends.
    pub in_loss_episode: bool,
    /// Dupacks counted or SACKed data held since the last cumulative advance.
    pub loss_signals_outstanding: bool,
    /// Since the segment's last transmission.
    pub age_ns: u64,
    pub rto_ns: u64,
}

/// Whether a re-send right after a client packet was nevertheless the retransmission timer's:
/// nothing ACK-driven in Linux re-sends without loss signals (dupacks, SACKs) or a loss episode,
/// and the segment had waited about an RTO.
pub fn timer_beside_a_signal_free_ack(r: QuietResend) -> bool {
    !r.loss_evidence && !r.in_loss_episode && !r.loss_signals_outstanding && r.age_ns * 10 >= r.rto_ns * 9
}

/// Everything known about one timeout retransmission, filled in when it is sent and completed
/// when the ACK that covers it arrives (or the flow ends).
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeoutEvidence {
    /// The segment had been retransmitted before.
    pub prior_retrans: bool,
    /// Most packets outstanding at any time while the lost segment was outstanding.
    pub max_outstanding_pkts: u32,
    /// Segments sent after the lost one, before the timeout.
    pub segs_after: u32,
    /// Any ACK from the client arrived after the lost segment was first sent.
    pub ack_after_send: bool,
    /// Duplicate ACKs (for the lost segment's start) that arrived before the timeout.
    pub dupacks: u32,
    /// A segment sent after the lost one had been SACKed before the timeout: the receiver's
    /// dupacks did reach the server (they were counted for an earlier hole, or too few).
    pub sacked_after: bool,
    /// After the timeout, a SACK showed that the first copy of a later segment (sent before the
    /// timeout) had arrived: not every packet sent was lost.
    pub later_arrived: bool,
    /// Spurious: D-SACK, Eifel (TS echo of the original), or an impossibly fast covering ACK.
    pub spurious: bool,
    /// The covering ACK acknowledged data beyond the retransmitted segment.
    pub ack_beyond: bool,
    /// The covering ACK arrived at all.
    pub resolved: bool,
    /// The lost segment is among the last 3 data segments of the flow.
    pub flow_tail: bool,
}

/// Type a timeout retransmission (rules and their order in the module comment).
pub fn classify_timeout(e: &TimeoutEvidence) -> TimeoutType {
    if e.prior_retrans {
        return TimeoutType::Double;
    }
    if e.spurious {
        return TimeoutType::AckDelayLoss;
    }
    if e.max_outstanding_pkts < 4 && !e.flow_tail {
        return TimeoutType::LessPacket;
    }
    if e.segs_after < 3 || e.flow_tail {
        return TimeoutType::Tail;
    }
    // Only duplicate ACKs (or SACKs) say later segments arrived; an ACK for data sent before the
    // lost segment says nothing about those after it (issue 16: the zero-ACK reading turned the
    // simulator's whole-window losses into `other` whenever an earlier segment's ACK was late).
    // SACKs for later data count as dupacks (issue 16: a second hole behind a partial ACK had
    // `dupacks = 0` and was called ACK delay/loss although its SACKs had arrived).
    if e.dupacks == 0 && !e.sacked_after {
        // Continuous loss also needs the later segments' first copies lost (issue 16: a SACK
        // for the last segment, arriving just after the RTO, was called continuous loss).
        if e.resolved && !e.ack_beyond && !e.later_arrived {
            return TimeoutType::ContinuousLoss;
        }
        // The later segments arrived and no dupack came: ACK delay/loss — unless their SACKs
        // came after the timeout (they were late, not lost: the RTO fired within an RTT of the
        // later segments' send; issue 16, a frame sent 59 ms before an RTO on a 95-ms path).
        if e.ack_beyond && !e.later_arrived {
            return TimeoutType::AckDelayLoss;
        }
    }
    TimeoutType::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> TimeoutEvidence {
        TimeoutEvidence { max_outstanding_pkts: 10, segs_after: 6, resolved: true, ..Default::default() }
    }

    #[test]
    fn earlier_retransmission_makes_double() {
        let e = TimeoutEvidence { prior_retrans: true, spurious: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Double);
    }

    #[test]
    fn spurious_retransmission_is_ack_delay_loss() {
        let e = TimeoutEvidence { spurious: true, max_outstanding_pkts: 1, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::AckDelayLoss);
    }

    #[test]
    fn fewer_than_four_outstanding_is_less_packet_unless_flow_ends() {
        let e = TimeoutEvidence { max_outstanding_pkts: 3, segs_after: 0, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::LessPacket);
        let e = TimeoutEvidence { flow_tail: true, ..e };
        assert_eq!(classify_timeout(&e), TimeoutType::Tail);
    }

    #[test]
    fn loss_in_last_three_of_a_large_window_is_tail() {
        let e = TimeoutEvidence { segs_after: 2, ack_after_send: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Tail);
    }

    #[test]
    fn whole_window_lost_is_continuous_loss_and_received_window_is_ack_loss() {
        let e = base();
        assert_eq!(classify_timeout(&e), TimeoutType::ContinuousLoss);
        let e = TimeoutEvidence { ack_beyond: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::AckDelayLoss);
    }

    #[test]
    fn a_late_ack_for_earlier_data_does_not_rule_out_continuous_loss() {
        let e = TimeoutEvidence { ack_after_send: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::ContinuousLoss);
    }

    #[test]
    fn sacks_for_later_data_before_the_timeout_are_dupacks_so_not_ack_loss() {
        let e = TimeoutEvidence { ack_beyond: true, sacked_after: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Other);
    }

    #[test]
    fn a_later_original_arriving_rules_out_continuous_loss() {
        let e = TimeoutEvidence { later_arrived: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Other);
    }

    #[test]
    fn dupacks_that_arrive_after_the_timeout_were_late_not_lost() {
        let e = TimeoutEvidence { ack_beyond: true, later_arrived: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Other);
    }

    #[test]
    fn some_dupacks_for_a_large_window_is_other() {
        let e = TimeoutEvidence { dupacks: 2, ack_after_send: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Other);
    }
}
