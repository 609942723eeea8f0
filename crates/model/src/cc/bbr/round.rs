//! Packet-timed round trips (Linux `bbr_update_bw` round accounting).
//!
//! A round ends when a segment sent after the previous round ended is delivered: the ACKed
//! segment's `prior_delivered` (connection delivered count when it was sent) has reached the
//! delivered count recorded at the end of the last round. Counting by data rather than by time
//! makes rounds robust to RTT changes. Shared by BBR, Compound and the CCP family, which all
//! update once per round trip.

use crate::cc::AckEvent;

#[derive(Clone, Debug, Default)]
pub struct RoundCounter {
    /// Rounds elapsed (Linux `rtt_cnt`).
    pub count: u64,
    /// Delivered bytes at which the current round ends (Linux `next_rtt_delivered`).
    pub next_round_delivered: u64,
    /// True on the ACK that started a new round (Linux `round_start`).
    pub round_start: bool,
}

impl RoundCounter {
    /// Feed an ACK; returns whether it starts a new round. ACKs without a rate sample (Linux:
    /// `rs->delivered < 0`) never end a round.
    pub fn on_ack(&mut self, ack: &AckEvent) -> bool {
        self.round_start = false;
        if let Some(rs) = ack.rate {
            if rs.prior_delivered_bytes >= self.next_round_delivered {
                self.next_round_delivered = ack.delivered_total_bytes;
                self.count += 1;
                self.round_start = true;
            }
        }
        self.round_start
    }

    /// Start a new round now (Linux does this on entering recovery and on RTO).
    pub fn restart(&mut self, delivered_total: u64) {
        self.next_round_delivered = delivered_total;
    }
}
