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

use tcpvideo_model::Time;

use super::scoreboard::SegRec;

#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Send time of the most recently sent delivered segment (Linux `rack.mstamp`).
    pub xmit_time: Time,
    /// Its transmission counter (orders segments sent at the same instant).
    pub xmit_seq: u64,
    /// RTT measured on it, in nanoseconds (integers on the per-segment path: no `Duration`
    /// conversions per delivered segment).
    pub rtt_ns: u64,
    /// A delivery since the last loss scan (Linux `rack.advanced`).
    pub advanced: bool,
    pub valid: bool,
    /// Reordering was observed on this connection (Linux `tp->reord_seen`): the reordering window
    /// then stays min_rtt/4 even in recovery.
    pub reord_seen: bool,
}

impl Rack {
    /// A segment was delivered by the ACK being processed at `now` (Linux `tcp_rack_advance`).
    /// `min_rtt_ns` as [`super::rtt::RttEstimator::min_rtt_ns`].
    pub fn on_delivered(&mut self, rec: &SegRec, now: Time, min_rtt_ns: Option<u64>) {
        let rtt = now.as_nanos().saturating_sub(rec.sent_at.as_nanos());
        if rec.ever_retrans && min_rtt_ns.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt_ns = rtt;
        if !self.valid || rec.xmit_seq > self.xmit_seq {
            self.xmit_time = rec.sent_at;
            self.xmit_seq = rec.xmit_seq;
            self.valid = true;
        }
    }

    /// Linux `tcp_rack_reo_wnd`, in nanoseconds.
    pub fn reo_wnd_ns(
        &self,
        in_recovery_or_loss: bool,
        sacked_pkts: u64,
        dupthresh: u64,
        min_rtt_ns: Option<u64>,
        srtt_ns: Option<u64>,
    ) -> u64 {
        if !self.reord_seen && (in_recovery_or_loss || sacked_pkts >= dupthresh) {
            return 0;
        }
        let m = min_rtt_ns.unwrap_or(0) / 4;
        match srtt_ns {
            Some(s) => m.min(s),
            None => m,
        }
    }
}
