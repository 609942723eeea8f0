//! Could RACK's reordering timer have sent this retransmission? (RFC 8985 §6.2; Linux
//! `tcp_rack_detect_loss`, `tcp_rack_reo_timeout`.)
//!
//! RACK marks a segment lost only once a segment *sent after it* was delivered (SACKed or
//! cumulatively acknowledged): RACK.xmit_ts must exceed the segment's send time. When that
//! delivery is reported (at A, for data sent at x > sent) the segment is lost if it is overdue by
//! RACK.rtt + reo_wnd; if not yet, RACK arms its reordering timer for the remainder. With
//! RACK.rtt ≈ A − x the re-send leaves at max(A, sent + (A − x) + reo_wnd), i.e. at most
//! reo_wnd − (x − sent) after A (reo_wnd ≤ SRTT in Linux: min_rtt/4, grown by D-SACKs up to
//! SRTT). So a RACK retransmission leaves within that budget of the *first* ACK that reported a
//! delivery of data sent after the lost copy; a segment sent long before that data is marked
//! lost at the ACK itself. The re-send itself may still wait for pacing or cwnd (in the study, a
//! RACK re-send 10.7 ms after its ACK, paced), but never behind *new* data: Linux sends marked-lost
//! segments first (`tcp_xmit_retransmit_queue`). So: a re-send within SRTT of that first ACK is
//! RACK's unless new data left after RACK's deadline (issue 16: an RTO 72 ms after such an ACK,
//! 2 ms after a new frame, was called RACK's).
//!
//! A retransmission that leaves later than that, or with no such delivery at all, was sent by
//! the retransmission timer, however recent the last SACK (issue 16: the analyzer used "less
//! than one SRTT after the last client packet", which turned RTOs behind a stream of SACKs for
//! *earlier* data, and RTOs with `min_rto = 50ms`, into fast retransmissions).
//!
//! The history kept is the monotone record of RACK.xmit_ts advances: (send time of the newest
//! segment delivered so far, arrival time of the ACK that reported it). Both components grow, so
//! the first delivery of data sent after time t is found by binary search. The history is bounded
//! (`CAPACITY`); the newest entry dropped is remembered so that a question about older sends is
//! still answered conservatively ("too long ago").
//!
//! Deviation: RFC 8985 step 2 ignores a delivered retransmission whose RTT looks too short to be
//! for it; we ignore delivered retransmissions acknowledged sooner than the minimum RTT after
//! their last copy, the same test.

use std::collections::VecDeque;

/// Entries kept; a retransmission timer question older than this many RACK advances is "too
/// long ago" (the first such delivery happened at least that many ACKs before).
const CAPACITY: usize = 512;

/// Slack on the reordering-window bound: the server's timer granularity plus the capture
/// point's distance from the server.
pub const RACK_SLACK_NS: u64 = 2_000_000;

#[derive(Debug, Default, Clone)]
pub struct DeliveryHistory {
    /// (newest send time delivered x, arrival of the ACK that reported it A), both increasing.
    advances: VecDeque<(u64, u64)>,
    /// The newest entry dropped for capacity.
    dropped: Option<(u64, u64)>,
    /// Last transmission of new data (not a re-send).
    last_new_data_ns: u64,
}

impl DeliveryHistory {
    /// New data left at `now_ns`.
    pub fn on_new_data(&mut self, now_ns: u64) {
        self.last_new_data_ns = now_ns;
    }

    /// An ACK arriving at `arrival_ns` reported delivered a segment last sent at `sent_ns`.
    pub fn on_delivered(&mut self, sent_ns: u64, arrival_ns: u64) {
        let newest = self.advances.back().or(self.dropped.as_ref()).map_or(0, |e| e.0);
        if sent_ns <= newest {
            return;
        }
        if self.advances.len() == CAPACITY {
            self.dropped = self.advances.pop_front();
        }
        self.advances.push_back((sent_ns, arrival_ns));
    }

    /// The first delivery of data sent after `sent_ns`, as (that data's send time, arrival of
    /// the ACK that reported it), if any. An answer older than the history is returned as the
    /// newest dropped entry (the true one is earlier still).
    pub fn first_delivery_after(&self, sent_ns: u64) -> Option<(u64, u64)> {
        if let Some((x, a)) = self.dropped {
            if x > sent_ns {
                return Some((x, a));
            }
        }
        let i = self.advances.partition_point(|&(x, _)| x <= sent_ns);
        self.advances.get(i).copied()
    }

    /// The latest time RACK (on) would have re-sent a segment last sent at `sent_ns`: its
    /// reordering timer expires RACK.rtt + reo_wnd after the send, RACK.rtt ≈ a − x for the
    /// first delivery (x, a) of later data, reo_wnd ≤ SRTT; at once if already past at `a`. None
    /// when no later data was reported delivered (RACK has no reason to re-send it).
    pub fn rack_deadline(&self, sent_ns: u64, srtt_ns: u64) -> Option<u64> {
        self.first_delivery_after(sent_ns).map(|(x, a)| a + srtt_ns.saturating_sub(x.saturating_sub(sent_ns)))
    }

    /// Could RACK's reordering timer (or RACK at an ACK) have re-sent, at `at.now_ns`, a segment
    /// last sent at `sent_ns`, given the smoothed RTT (the reo_wnd ceiling)?
    ///
    /// Before RACK's deadline (the upper bound above) its timer may be what fires. Past it, RACK
    /// had already marked the segment lost and sends it as soon as nothing holds it, and only
    /// two things hold a marked-lost segment in Linux (`tcp_xmit_retransmit_queue`): the
    /// congestion window, which an ACK releases (the re-send is ACK-clocked), and pacing, which
    /// releases it at most one pacing gap after the previous departure — Linux's gap for one
    /// segment at cwnd ≥ 1 is SRTT/2 in slow start and SRTT/1.2 in congestion avoidance
    /// (`tcp_update_pacing_rate`), so at most SRTT. A past-deadline re-send that is neither was
    /// sent by the retransmission timer (issue 15: with the simulator's SACK compression a
    /// RACK-on server's RTO 3.2 ms after a SACK, 250 ms after the segment's send, read as RACK's).
    pub fn rack_could_fire(&self, sent_ns: u64, srtt_ns: u64, at: ResendMoment) -> bool {
        self.first_delivery_after(sent_ns).is_some_and(|(x, a)| {
            let deadline = a + srtt_ns.saturating_sub(x.saturating_sub(sent_ns)) + RACK_SLACK_NS;
            let now_ns = at.now_ns;
            let new_data_after_deadline = self.last_new_data_ns > deadline && self.last_new_data_ns < now_ns;
            let released_past_deadline = at.ack_clocked || now_ns.saturating_sub(at.previous_departure_ns) <= srtt_ns + RACK_SLACK_NS;
            now_ns.saturating_sub(a) <= srtt_ns + RACK_SLACK_NS
                && !new_data_after_deadline
                && (now_ns <= deadline || released_past_deadline)
        })
    }
}

/// When a re-send left, as `rack_could_fire` weighs it.
#[derive(Debug, Clone, Copy)]
pub struct ResendMoment {
    pub now_ns: u64,
    /// An ACK arrived just before it (the congestion window may have held it until then).
    pub ack_clocked: bool,
    /// The server's previous data departure, new or re-sent (pacing may have held it).
    pub previous_departure_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A re-send at `now` with no ACK just before it and the previous departure `gap` before.
    fn at(now: u64, gap: u64) -> ResendMoment {
        ResendMoment { now_ns: now, ack_clocked: false, previous_departure_ns: now - gap }
    }

    #[test]
    fn a_retransmission_soon_after_the_first_sack_for_later_data_can_be_rack() {
        let mut h = DeliveryHistory::default();
        // segment sent at 100 ms; a later one (sent at 110 ms) SACKed at 260 ms.
        h.on_delivered(110 * MS, 260 * MS);
        assert!(h.rack_could_fire(100 * MS, 150 * MS, at(300 * MS, 190 * MS)));
    }

    #[test]
    fn a_retransmission_long_after_the_first_sack_for_later_data_is_a_timer_even_with_recent_sacks() {
        let mut h = DeliveryHistory::default();
        h.on_delivered(110 * MS, 260 * MS);
        // More SACKs keep coming up to 590 ms; the re-send at 600 ms is 340 ms after the first.
        for k in 0..30 {
            h.on_delivered((120 + k * 10) * MS, (270 + k * 10) * MS);
        }
        assert!(!h.rack_could_fire(100 * MS, 150 * MS, at(600 * MS, 190 * MS)));
    }

    #[test]
    fn a_segment_overdue_when_later_data_is_reported_goes_before_new_data() {
        let mut h = DeliveryHistory::default();
        // Sent at 100 ms; data sent at 400 ms (300 ms later, more than an SRTT) reported at 450 ms:
        // RACK marks it lost at 450 ms. Re-sent at 461 ms with nothing between: RACK's (paced).
        h.on_delivered(400 * MS, 450 * MS);
        assert!(h.rack_could_fire(100 * MS, 100 * MS, at(461 * MS, 61 * MS)));
        // New data at 518 ms, then the re-send at 520 ms: RACK would have sent it first.
        h.on_new_data(518 * MS);
        assert!(!h.rack_could_fire(100 * MS, 100 * MS, at(520 * MS, 2 * MS)));
    }

    #[test]
    fn an_overdue_segment_resent_with_nothing_holding_it_was_resent_by_the_timer() {
        let mut h = DeliveryHistory::default();
        // Sent at 100 ms; data sent at 400 ms reported at 450 ms: RACK marks it lost at 450 ms.
        h.on_delivered(400 * MS, 450 * MS);
        // Re-sent at 461 ms, the server silent since 300 ms (more than SRTT: no pacing gap is that
        // long) and no ACK just before (no window to free): RACK would have sent it at 450 ms.
        assert!(!h.rack_could_fire(100 * MS, 100 * MS, at(461 * MS, 161 * MS)));
        // The same re-send right after an ACK: the congestion window may have held it.
        let after_ack = ResendMoment { ack_clocked: true, ..at(461 * MS, 161 * MS) };
        assert!(h.rack_could_fire(100 * MS, 100 * MS, after_ack));
    }

    #[test]
    fn a_resend_before_racks_deadline_may_be_its_timer_whatever_the_last_departure() {
        let mut h = DeliveryHistory::default();
        // Sent at 100 ms, later data (sent 110 ms) reported at 160 ms: the timer may run to 250 ms.
        h.on_delivered(110 * MS, 160 * MS);
        assert!(h.rack_could_fire(100 * MS, 100 * MS, at(240 * MS, 130 * MS)));
    }

    #[test]
    fn deliveries_of_data_sent_before_the_segment_say_nothing() {
        let mut h = DeliveryHistory::default();
        // Only data sent before 100 ms was delivered, recently: RACK cannot mark the 100-ms one lost.
        h.on_delivered(90 * MS, 590 * MS);
        assert!(!h.rack_could_fire(100 * MS, 150 * MS, at(600 * MS, MS)));
    }

    #[test]
    fn racks_deadline_is_the_reordering_timer_or_the_ack_itself_for_an_overdue_segment() {
        let mut h = DeliveryHistory::default();
        assert_eq!(h.rack_deadline(100 * MS, 100 * MS), None);
        // Later data sent 10 ms after it, reported at 260 ms: the timer runs 90 ms more.
        h.on_delivered(110 * MS, 260 * MS);
        assert_eq!(h.rack_deadline(100 * MS, 100 * MS), Some(350 * MS));
        // A segment sent 300 ms (more than SRTT) before the delivered data is overdue at the ACK.
        let mut h = DeliveryHistory::default();
        h.on_delivered(400 * MS, 450 * MS);
        assert_eq!(h.rack_deadline(100 * MS, 100 * MS), Some(450 * MS));
    }

    #[test]
    fn a_question_older_than_the_history_answers_too_long_ago() {
        let mut h = DeliveryHistory::default();
        for k in 1..=(CAPACITY as u64 + 10) {
            h.on_delivered(k * MS, (k + 100) * MS);
        }
        // The first delivery after 2 ms was dropped from the history; the answer is no later
        // than the newest dropped entry's arrival.
        let (_, a) = h.first_delivery_after(2 * MS).unwrap();
        assert!(a <= 111 * MS);
        assert!(!h.rack_could_fire(2 * MS, 150 * MS, at(1000 * MS, MS)));
    }
}
