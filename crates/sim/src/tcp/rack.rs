//! RACK: time-based loss detection (RFC 8985 §6, Linux net/ipv4/tcp_recovery.c).
//!
//! RACK remembers the send time of the most recently *sent* segment that has been delivered
//! (cumulatively ACKed or SACKed), and the RTT measured on it. Any segment sent before that one
//! and still unacknowledged after one such RTT plus a reordering window is lost. Linux's choices,
//! followed here: the reordering window is min(min_rtt/4, srtt), and zero (i.e. "lost as soon as
//! overdue") once DupThresh segments are SACKed or the sender is already in recovery, as long as
//! no reordering was observed (`reord_seen`, set when a never-retransmitted segment is delivered
//! below data SACKed earlier). The D-SACK-driven growth of `reo_wnd_steps` is not modelled. A delivered retransmission whose RTT is below min_rtt is
//! ignored (the original, not the retransmission, was probably delivered).
//!
//! The scan over segments in send order lives in the scoreboard
//! ([`super::scoreboard::Scoreboard::rack_detect`]).

use std::time::Duration;

use tcpvideo_model::Time;

use super::scoreboard::SegRec;

#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Send time of the most recently sent delivered segment (Linux `rack.mstamp`).
    pub xmit_time: Time,
    /// Its transmission counter (orders segments sent at the same instant).
    pub xmit_seq: u64,
    /// RTT measured on it.
    pub rtt: Duration,
    /// A delivery since the last loss scan (Linux `rack.advanced`).
    pub advanced: bool,
    pub valid: bool,
    /// Reordering was observed on this connection (Linux `tp->reord_seen`): the reordering window
    /// then stays min_rtt/4 even in recovery.
    pub reord_seen: bool,
}

impl Rack {
    /// A segment was delivered by the ACK being processed at `now` (Linux `tcp_rack_advance`).
    pub fn on_delivered(&mut self, rec: &SegRec, now: Time, min_rtt: Option<Duration>) {
        let rtt = now.saturating_since(rec.sent_at);
        if rec.ever_retrans && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if !self.valid || rec.xmit_seq > self.xmit_seq {
            self.xmit_time = rec.sent_at;
            self.xmit_seq = rec.xmit_seq;
            self.valid = true;
        }
    }

    /// Linux `tcp_rack_reo_wnd`.
    pub fn reo_wnd(&self, in_recovery_or_loss: bool, sacked_pkts: u64, dupthresh: u64, min_rtt: Option<Duration>, srtt: Option<Duration>) -> Duration {
        if !self.reord_seen && (in_recovery_or_loss || sacked_pkts >= dupthresh) {
            return Duration::ZERO;
        }
        let m = min_rtt.unwrap_or(Duration::ZERO) / 4;
        match srtt {
            Some(s) => m.min(s),
            None => m,
        }
    }
}
