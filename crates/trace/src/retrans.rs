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
//! Timeout types: the seed's taxonomy (§3.2, Table 5), its words and the rule we apply, in the
//! seed's order (double, tail, less packet, ACK delay/loss, continuous loss, other). Issue 16
//! session 11 made the seed's reading of tail and less packet the only one (before, `tail` was
//! "fewer than 3 segments sent after the lost one" and `less_packet` "≤ 3 out the whole time it
//! was out"; the seed's numbers — voice less packet 30.8 %, tail 5.0 % — only make sense with
//! its own reading: with ours every voice less-packet RTO was a tail).
//! - Double: "If the retransmitted packet by fast retransmit is dropped by the network, timeout
//!   retransmission has to be triggered and this timeout retransmission is referred to as double
//!   retransmission." Rule: the segment had been retransmitted before. (A backed-off second RTO
//!   of the same segment is the same situation — a retransmission lost again — so it is counted
//!   here too; `prior_kind` in the table tells the two apart.)
//! - Nothing lost (spurious) is ACK delay/loss *before* tail and less packet: the seed's tail is
//!   about "the lost packet" and its less packet about "insufficient number of dupacks to trigger
//!   fast retransmit" — both presuppose a loss, and a timeout whose segment arrived had only its
//!   ACK late or lost ("The ACK delay/loss [...] will also result in timeout retransmission").
//!   TAPO (the seed's ref [18], `parser/rules.txt`) agrees: TAIL_LOSS and SMALL_CWND/SMALL_RWND
//!   need `lost > 0`, a spurious head without loss is ACK_DELAY_LOSS. Rule: the retransmission
//!   was spurious — a D-SACK (RFC 2883) reported the segment twice, or the ACK covering it echoed
//!   the original's TSval (Eifel detection, RFC 3522), or, without timestamps, the covering ACK
//!   arrived sooner than half the minimum RTT after the retransmission.
//! - Tail: "If the lost packet is in the last three packets of the flow, there are not enough
//!   duplicate acknowledgments (dupacks) to trigger fast retransmit". Rule: the lost segment is
//!   among the last 3 data segments of the whole flow (known at the end of the analysis).
//! - Less packet: "Insufficient number of dupacks to trigger fast retransmit may be also due to
//!   that the server sends less than 4 packets out (limited by either congestion window (cwnd)
//!   or rwnd)". Rule: fewer than 4 segments out at the RTO, counted as the seed's Eq. 1
//!   `packets_out` (snd_una to snd_nxt, SACKed segments and the lost one included; Linux's
//!   `packets_out`, in segments whatever their size). What limited it — cwnd, rwnd or, as for the
//!   seed's voice frames ("when sending frame V, there are often fewer packets in the network"),
//!   the application — the wire cannot always tell and the type does not ask.
//! - ACK delay/loss (the later segments arrived but no dupack came) and continuous loss ("all
//!   packets sent out being lost"), with 4 or more out: no duplicate ACK or SACK came for the
//!   lost segment (ACKs for data sent before it may: they say nothing about the later segments);
//!   then continuous loss if the ACK that finally covered the retransmission did not reach beyond
//!   it and no SACK showed a later segment's first copy arrived (the receiver had none of the
//!   later segments either), ACK delay/loss if it reached beyond and no such SACK came after the
//!   timeout (then they were late, not lost).
//! - Other: none of the above (e.g. 1–2 dupacks arrived for a large window: partial loss of the
//!   dupacks, or reordering fooled the sender).
//!
//! Where TAPO (`parser/rules.txt`, `tcp_state.c`, `tcp_stall_state.c`) differs: it types the
//! *stall* an RTO ends, from the state at the stall; a stall's loss facts come from the whole
//! flow at its end (`lost` = re-sent ranges no D-SACK called spurious). (1) Its tail
//! (TAIL_LOSS, tested before everything but DATA_UNAVAILABLE, double included) is "the last
//! segment sent in the Open state was a FIN, or shorter than the largest segment while the peer
//! window allowed a full one" with any loss between SND.UNA and SND.NXT: the sender ran out of
//! data — at the end of every application write, not only at the flow's end. (2) Double is the
//! head segment re-sent (and not shown spurious) at least three times over the whole flow, this
//! RTO's and later re-sends included (`cur_pkt_lost > 2`); ours: any re-send before this RTO. (3) Its
//! less packet (SMALL_RWND / SMALL_CWND, split by `rwnd <= 3`) tests `outstanding <= 3` with
//! `outstanding` = packets_out − sacked_out + retrans_out (Eq. 1 without lost_out, SACKed segments
//! left out) — in bytes against a segment count (session 6: practically unreachable). (4) It adds
//! LARGE_DUPTHRES (> 3 SACKed; ours: other) and its continuous loss compares a count of lost
//! ranges with bytes outstanding. So on an application-limited stream TAPO's rules make most
//! less-packet RTOs of the seed tail losses (a voice frame's RTO: the last segment before the gap
//! is sub-MSS), while the seed's Table 5 has V tail 5.0 % and less packet 30.8 %: the seed's
//! numbers follow its text, not these rules as published, and we follow the text.

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
    /// Segments out at the RTO: snd_una to snd_nxt (the seed's Eq. 1 `packets_out`), SACKed
    /// ones and the lost one included.
    pub packets_out: u32,
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
    if e.flow_tail {
        return TimeoutType::Tail;
    }
    if e.packets_out < 4 {
        return TimeoutType::LessPacket;
    }
    // Only duplicate ACKs (or SACKs) say later segments arrived; an ACK for data sent before the
    // lost segment says nothing about those after it (issue 16: the zero-ACK reading turned the
    // simulator's whole-window losses into `other` whenever an earlier segment's ACK was late).
    // SACKs for later data count as dupacks (issue 16: a second hole behind a partial ACK had
    // `dupacks = 0` and was called ACK delay/loss although its SACKs had arrived).
    if e.dupacks == 0 && !e.sacked_after {
        // The later segments arrived and no dupack came: ACK delay/loss — unless their SACKs
        // came after the timeout (they were late, not lost: the RTO fired within an RTT of the
        // later segments' send; issue 16, a frame sent 59 ms before an RTO on a 95-ms path).
        if e.ack_beyond && !e.later_arrived {
            return TimeoutType::AckDelayLoss;
        }
        // Continuous loss also needs the later segments' first copies lost (issue 16: a SACK
        // for the last segment, arriving just after the RTO, was called continuous loss).
        if e.resolved && !e.ack_beyond && !e.later_arrived {
            return TimeoutType::ContinuousLoss;
        }
    }
    TimeoutType::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> TimeoutEvidence {
        TimeoutEvidence { packets_out: 10, segs_after: 6, resolved: true, ..Default::default() }
    }

    #[test]
    fn earlier_retransmission_makes_double() {
        let e = TimeoutEvidence { prior_retrans: true, spurious: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Double);
    }

    #[test]
    fn spurious_retransmission_is_ack_delay_loss() {
        let e = TimeoutEvidence { spurious: true, packets_out: 1, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::AckDelayLoss);
    }

    #[test]
    fn fewer_than_four_out_at_the_rto_is_less_packet_unless_the_flows_last_three() {
        let e = TimeoutEvidence { packets_out: 3, segs_after: 2, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::LessPacket);
        let e = TimeoutEvidence { flow_tail: true, ..e };
        assert_eq!(classify_timeout(&e), TimeoutType::Tail);
        // Four out (the lost one and three after it): the dupack rules decide.
        let e = TimeoutEvidence { packets_out: 4, segs_after: 3, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::ContinuousLoss);
    }

    #[test]
    fn the_flows_last_three_are_tail_even_in_a_large_window_and_after_ones_lost_again_double() {
        let e = TimeoutEvidence { flow_tail: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::Tail);
        let e = TimeoutEvidence { prior_retrans: true, packets_out: 1, ..e };
        assert_eq!(classify_timeout(&e), TimeoutType::Double);
    }

    #[test]
    fn nothing_lost_with_few_out_is_ack_delay_not_less_packet() {
        let e = TimeoutEvidence { spurious: true, packets_out: 2, flow_tail: true, ..base() };
        assert_eq!(classify_timeout(&e), TimeoutType::AckDelayLoss);
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
