//! Reno / NewReno window growth (RFC 5681 §3.1, NewReno recovery per RFC 6582 lives in the endpoint).
//!
//! Mirrors Linux `tcp_reno_cong_avoid`, `tcp_slow_start`, `tcp_cong_avoid_ai` and
//! `tcp_reno_ssthresh` in net/ipv4/tcp_cong.c: the window is counted in segments, slow start adds
//! one segment per segment acknowledged (appropriate byte counting with L = unlimited, as Linux),
//! congestion avoidance adds one segment per window of segments acknowledged, and a congestion event
//! halves the window.
//!
//! Deviation from RFC 5681 (on purpose, as Linux): ssthresh = max(cwnd/2, 2) rather than
//! max(FlightSize/2, 2·SMSS). The two agree whenever the sender is window-limited.
//!
//! Slow start after idle (RFC 5681 §4.1, Linux `tcp_cwnd_restart`): ssthresh first rises to
//! max(ssthresh, ¾·cwnd), then cwnd drops to the restart window ([`SegmentWindow::cwnd_restart`],
//! shared with CUBIC, BIC and Vegas).
//!
//! Shared window machinery (Linux tcp_cong.c / tcp_input.c helpers every window-based algorithm
//! reuses, written once here): [`current_ssthresh`] (`tcp_current_ssthresh`, ¾·cwnd) and
//! [`UndoMarker`] (`prior_cwnd`/`prior_ssthresh` saved at a congestion event and restored by an
//! undo, `tcp_reno_undo_cwnd` / `tcp_undo_cwnd_reduction`).
//!
//! Parameters: none. (Linux has none for Reno either.)

use super::{AckEvent, AlgorithmInfo, CcConfig, CongestionControl, CongestionSignal, ParamInfo, Params};
use crate::units::Time;

pub const PARAMS: &[ParamInfo] = &[];

pub const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "reno",
    summary: "Reno/NewReno AIMD: slow start, +1 MSS per RTT, halve on loss (Linux tcp_reno)",
    reference: "RFC 5681, RFC 6582; Linux net/ipv4/tcp_cong.c",
    params: PARAMS,
    build: |cfg, _p: &Params| Box::new(Reno::new(cfg)),
};

/// Linux `tcp_current_ssthresh` outside CWR/Recovery: max(ssthresh, ¾·cwnd), ¾ computed as
/// Linux does on whole segments, (cwnd >> 1) + (cwnd >> 2). An infinite ssthresh (`u64::MAX`)
/// stays infinite. The endpoint, which keeps ssthresh in bytes, uses [`three_quarters`].
pub fn current_ssthresh(cwnd_segments: u64, ssthresh_segments: u64) -> u64 {
    ssthresh_segments.max(three_quarters(cwnd_segments))
}

/// ¾ of a window of whole segments, rounded down per half and quarter as Linux
/// `tcp_current_ssthresh` does: (cwnd >> 1) + (cwnd >> 2).
pub fn three_quarters(cwnd_segments: u64) -> u64 {
    (cwnd_segments >> 1) + (cwnd_segments >> 2)
}

/// Linux `tcp_reno_undo_cwnd`: a spurious congestion event gives back the window it took,
/// max(cwnd, prior_cwnd). Any unit, as long as both are in the same one.
pub fn reno_undo_cwnd(cwnd: u64, prior_cwnd: u64) -> u64 {
    cwnd.max(prior_cwnd)
}

/// What an undo restores (Linux `tp->prior_cwnd` / `tp->prior_ssthresh`, set by
/// `tcp_init_undo` when a congestion event starts), in segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndoMarker {
    pub prior_cwnd: u64,
    pub prior_ssthresh: u64,
}

impl Default for UndoMarker {
    /// Nothing to restore yet: an undo leaves cwnd and an infinite ssthresh as they are.
    fn default() -> Self {
        UndoMarker { prior_cwnd: 0, prior_ssthresh: u64::MAX }
    }
}

impl UndoMarker {
    /// Remember the window before a congestion event reduces it (`tcp_init_undo`).
    pub fn save(&mut self, w: &SegmentWindow) {
        self.prior_cwnd = w.cwnd;
        self.prior_ssthresh = w.current_ssthresh();
    }

    /// The event was spurious: cwnd = max(cwnd, prior_cwnd) (`tcp_reno_undo_cwnd`) and
    /// ssthresh = max(ssthresh, prior_ssthresh) (`tcp_undo_cwnd_reduction`).
    pub fn undo(&self, w: &mut SegmentWindow) {
        w.cwnd = reno_undo_cwnd(w.cwnd, self.prior_cwnd);
        w.ssthresh = w.ssthresh.max(self.prior_ssthresh);
    }
}

/// Segment-counted window with Linux's additive-increase counter.
#[derive(Clone, Debug)]
pub struct SegmentWindow {
    pub mss_bytes: u64,
    /// cwnd in segments (Linux `snd_cwnd`).
    pub cwnd: u64,
    /// ssthresh in segments (Linux `snd_ssthresh`, "infinite" = u64::MAX).
    pub ssthresh: u64,
    /// Segments acknowledged since the last additive increase (Linux `snd_cwnd_cnt`).
    pub cwnd_cnt: u64,
    /// Acknowledged bytes not yet worth a whole segment (Linux counts packets; we get bytes).
    partial_bytes: u64,
}

impl SegmentWindow {
    pub fn new(cfg: &CcConfig) -> SegmentWindow {
        SegmentWindow {
            mss_bytes: cfg.mss_bytes.max(1),
            cwnd: cfg.initial_cwnd_segments.max(1),
            ssthresh: u64::MAX,
            cwnd_cnt: 0,
            partial_bytes: 0,
        }
    }

    /// Convert newly acknowledged bytes into whole segments, carrying the remainder.
    pub fn acked_segments(&mut self, acked_bytes: u64) -> u64 {
        let total = self.partial_bytes + acked_bytes;
        self.partial_bytes = total % self.mss_bytes;
        total / self.mss_bytes
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_current_ssthresh` of this window (see [`current_ssthresh`]).
    pub fn current_ssthresh(&self) -> u64 {
        current_ssthresh(self.cwnd, self.ssthresh)
    }

    /// Linux `tcp_slow_start`: grow by `acked` up to ssthresh; return the segments left over.
    pub fn slow_start(&mut self, acked: u64) -> u64 {
        let grown = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (grown - self.cwnd).min(acked);
        self.cwnd = grown;
        left
    }

    /// Linux `tcp_cong_avoid_ai`: one segment per `w` segments acknowledged.
    pub fn cong_avoid_ai(&mut self, w: u64, acked: u64) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd * self.mss_bytes
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        if self.ssthresh == u64::MAX {
            u64::MAX
        } else {
            self.ssthresh * self.mss_bytes
        }
    }

    pub fn set_cwnd_bytes(&mut self, bytes: u64) {
        self.cwnd = (bytes / self.mss_bytes).max(1);
    }

    /// Set ssthresh from bytes (`u64::MAX` = infinite, as [`SegmentWindow::ssthresh_bytes`]).
    pub fn set_ssthresh_bytes(&mut self, bytes: u64) {
        self.ssthresh = if bytes == u64::MAX { u64::MAX } else { (bytes / self.mss_bytes).max(1) };
    }

    /// Linux `tcp_cwnd_restart` (slow start after idle, RFC 5681 §4.1): ssthresh first rises to
    /// max(ssthresh, ¾·cwnd) (`tcp_current_ssthresh`), so the next slow start climbs back to ¾ of
    /// the pre-idle window, then cwnd drops to the restart window the endpoint computed (already
    /// halved once per RTO of idle, never below min(IW, cwnd)). As in Linux the ssthresh raise
    /// happens on every restart, even when cwnd is already at or below the restart window. The
    /// endpoint calls this only after an idle period longer than the RTO; the plain "sending
    /// resumes with nothing in flight" signal is `on_tx_start`.
    pub fn cwnd_restart(&mut self, restart_window_bytes: u64) {
        let restart = (restart_window_bytes / self.mss_bytes).max(1);
        self.ssthresh = self.current_ssthresh();
        self.cwnd = self.cwnd.min(restart);
    }

    /// Linux `tcp_enter_loss` after the algorithm chose ssthresh: cwnd collapses to one segment.
    pub fn enter_loss(&mut self) {
        self.cwnd = 1;
        self.cwnd_cnt = 0;
    }
}

#[derive(Clone, Debug)]
pub struct Reno {
    w: SegmentWindow,
}

impl Reno {
    pub fn new(cfg: &CcConfig) -> Reno {
        Reno { w: SegmentWindow::new(cfg) }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        let mut acked = self.w.acked_segments(ack.acked_bytes);
        if ack.in_recovery || !ack.cwnd_limited || acked == 0 {
            return;
        }
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.w.cwnd;
        self.w.cong_avoid_ai(cwnd, acked);
    }

    fn on_congestion_event(&mut self, _now: Time, signal: CongestionSignal, _bytes_in_flight: u64) {
        self.w.ssthresh = (self.w.cwnd / 2).max(2);
        self.w.cwnd_cnt = 0;
        if signal == CongestionSignal::Timeout {
            self.w.enter_loss();
        }
    }

    fn on_restart_after_idle(&mut self, _now: Time, restart_window_bytes: u64) {
        // Reno has no cwnd_event hook in Linux: only tcp_cwnd_restart applies.
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
    use crate::cc::testing::one_round;
    use std::time::Duration;

    const MSS: u64 = 1448;

    #[test]
    fn slow_start_doubles_the_window_each_round() {
        let mut cc = Reno::new(&CcConfig::default());
        let rtt = Duration::from_millis(50);
        let t = one_round(&mut cc, Time::ZERO, rtt, MSS);
        assert_eq!(cc.cwnd(), 20 * MSS);
        one_round(&mut cc, t, rtt, MSS);
        assert_eq!(cc.cwnd(), 40 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_round() {
        let mut cc = Reno::new(&CcConfig::default());
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.on_recovery_exit(Time::ZERO);
        assert_eq!(cc.cwnd(), 5 * MSS, "halved from IW10");
        let rtt = Duration::from_millis(50);
        let mut t = Time::ZERO;
        for round in 1..=4u64 {
            t = one_round(&mut cc, t, rtt, MSS);
            assert_eq!(cc.cwnd(), (5 + round) * MSS, "round {round}");
        }
    }

    #[test]
    fn timeout_collapses_to_one_segment_and_halves_ssthresh() {
        let mut cc = Reno::new(&CcConfig::default());
        cc.on_congestion_event(Time::ZERO, CongestionSignal::Timeout, 10 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.ssthresh(), 5 * MSS);
    }

    #[test]
    fn restart_after_idle_raises_ssthresh_even_when_cwnd_is_below_the_restart_window() {
        // Linux tcp_cwnd_restart sets ssthresh = tcp_current_ssthresh() unconditionally, then
        // cwnd = max(halved cwnd, min(restart window, cwnd)): a small window stays as it is.
        let mut cc = Reno::new(&CcConfig::default());
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.set_cwnd(8 * MSS);
        cc.on_restart_after_idle(Time::from_secs(5), 10 * MSS);
        assert_eq!(cc.cwnd(), 8 * MSS);
        assert_eq!(cc.ssthresh(), 6 * MSS, "max(5, 8/2 + 8/4) = 6");
    }

    #[test]
    fn restart_after_idle_raises_ssthresh_to_three_quarters_of_the_old_window() {
        // In congestion avoidance at 40 segments with ssthresh 5 (a loss at IW10 long ago).
        let mut cc = Reno::new(&CcConfig::default());
        cc.on_congestion_event(Time::ZERO, CongestionSignal::FastRetransmit, 0);
        cc.set_cwnd(40 * MSS);
        // Idle longer than the RTO: the endpoint restarts the window at IW10.
        let mut t = Time::from_secs(5);
        cc.on_restart_after_idle(t, 10 * MSS);
        assert_eq!(cc.cwnd(), 10 * MSS);
        assert_eq!(cc.ssthresh(), 30 * MSS, "max(5, 3/4 of 40) = 30");
        // Slow start climbs back to ssthresh, then grows by one segment per round.
        let rtt = Duration::from_millis(50);
        t = one_round(&mut cc, t, rtt, MSS);
        t = one_round(&mut cc, t, rtt, MSS);
        assert_eq!(cc.cwnd(), 30 * MSS, "10 -> 20 -> 30, capped at ssthresh");
        one_round(&mut cc, t, rtt, MSS);
        assert_eq!(cc.cwnd(), 31 * MSS);
        // A larger ssthresh is kept; a restart window at or above cwnd (TX_START only) changes
        // nothing; an infinite ssthresh stays infinite, as in Linux tcp_current_ssthresh.
        cc.set_cwnd(4 * MSS);
        cc.on_restart_after_idle(Time::from_secs(9), 2 * MSS);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (2 * MSS, 30 * MSS));
        cc.on_restart_after_idle(Time::from_secs(10), u64::MAX);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (2 * MSS, 30 * MSS));
        let mut fresh = Reno::new(&CcConfig::default());
        fresh.on_restart_after_idle(Time::from_secs(1), 4 * MSS);
        assert_eq!((fresh.cwnd(), fresh.ssthresh()), (4 * MSS, u64::MAX));
    }

    #[test]
    fn application_limited_acks_do_not_grow_the_window() {
        let mut cc = Reno::new(&CcConfig::default());
        let mut a = crate::cc::testing::ack(Time::ZERO, 10 * MSS, Duration::from_millis(10), 10 * MSS);
        a.cwnd_limited = false;
        cc.on_ack(&a);
        assert_eq!(cc.cwnd(), 10 * MSS);
    }
}
