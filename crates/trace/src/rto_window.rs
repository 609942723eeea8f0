//! The window after a single-segment timer re-send: could an RTO have left the server sending
//! this much? (issue 16, session 19).
//!
//! With one segment outstanding a tail-loss probe and an RTO re-send the same bytes at the same
//! instant (`tlp_inference.rs`), and a live stream's servers often show no unambiguous probe at
//! all (a probe with ≥ 2 segments out sends *new* data when the application has written some,
//! and a 25-frame/s stream nearly always has): in 11 of 40 `--full` crowdlive seeds of the
//! TLP-on baseline the server's setting stayed unknown, and 7 of the run's 8 timeout-type
//! disagreements were probes typed as RTOs.
//!
//! What an RTO does to the window, and a probe does not, shows on the wire. Linux's
//! `tcp_enter_loss` sets `snd_cwnd = tcp_packets_in_flight() + 1` after marking every
//! outstanding segment lost — one packet when one segment was out — and the re-sent copy fills
//! it. The window then grows only by slow start, one packet per packet cumulatively
//! acknowledged (`tcp_slow_start`; `tcp_is_cwnd_limited` may hold it back, never push it
//! ahead), F-RTO's new data (`REXMIT_NEW`) waits for that window too, and the restart after
//! idle (`tcp_cwnd_restart`) only lowers it. So after an RTO of the only outstanding segment,
//! while nothing else is re-sent and every ACK advances SND.UNA without SACK blocks (then no
//! packet is SACKed or marked lost, and Linux's in-flight count is simply what is outstanding),
//!
//! ```text
//!     packets outstanding  ≤  1 + packets cumulatively acknowledged since the re-send.
//! ```
//!
//! A probe leaves the window as it was (`tcp_send_loss_probe`), so the application's next frame
//! goes out at once. A flight above the bound therefore says the re-send was a probe. Until the
//! ACK that covers the re-send this holds without exception; from that ACK on, an RTO can be
//! undone (`tcp_try_undo_loss`: the original was not lost — a timestamp echo or D-SACK shows
//! it) and the old window comes back, so a later excess counts only when the re-send was not
//! spurious (`tlp_inference::decide`).
//!
//! The check ends at the first ACK that carries SACK blocks or advances nothing (flow.rs): from
//! then on SACKed and lost-marked packets leave the in-flight count and new data may go beyond
//! the bound (found on the study's `per_type_tlp_off`: after an RTO, slow start and a dupack
//! with SACK released two new packets each, as Linux would).
//!
//! Any vantage point: a segment the server sent after an ACK arrived reaches every capture
//! point after that ACK passed it, so data seen before the ACK was sent before it, and an ACK
//! seen earlier than the server got it only raises the bound (the check errs towards "no
//! evidence"). Packets are counted in MSS units (an unsegmented TSO capture shows one packet
//! for several).

use std::collections::VecDeque;

/// When the flight first exceeded what an RTO allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowCue {
    /// Before the ACK covering the re-send: an RTO is impossible.
    BeforeAck,
    /// After it: an RTO is possible only if it was undone (the re-send spurious).
    AfterAck,
}

/// Watches the flight after one single-segment timer re-send until the cue fires or another
/// re-send ends the watch.
#[derive(Clone, Debug)]
pub struct RtoWindowCheck {
    /// Index of the re-send in the flow's ambiguous list.
    pub ambiguous: usize,
    /// End (relative sequence) of the re-sent segment: SND.MAX at the re-send.
    resent_end: u64,
    mss: u64,
    /// First transmissions since the re-send, not yet acknowledged: (end, packets).
    unacked: VecDeque<(u64, u32)>,
    /// The re-sent segment is acknowledged.
    resend_acked: bool,
    /// Packets outstanding among the re-send and the segments sent after it.
    out: u32,
    /// Packets of those cumulatively acknowledged.
    acked: u32,
}

impl RtoWindowCheck {
    pub fn new(ambiguous: usize, resent_end: u64, mss: u32) -> Self {
        RtoWindowCheck { ambiguous, resent_end, mss: mss.max(1) as u64, unacked: VecDeque::new(), resend_acked: false, out: 1, acked: 0 }
    }

    /// A first transmission `[start, end)`: the cue if the flight now exceeds an RTO's window.
    pub fn on_new_data(&mut self, start: u64, end: u64) -> Option<WindowCue> {
        let packets = end.saturating_sub(start).div_ceil(self.mss).max(1) as u32;
        self.unacked.push_back((end, packets));
        self.out += packets;
        (self.out > 1 + self.acked).then_some(if self.resend_acked { WindowCue::AfterAck } else { WindowCue::BeforeAck })
    }

    /// The cumulative ACK point moved to `snd_una`.
    pub fn on_cumulative_ack(&mut self, snd_una: u64) {
        if !self.resend_acked && snd_una >= self.resent_end {
            self.resend_acked = true;
            self.out -= 1;
            self.acked += 1;
        }
        while let Some(&(end, packets)) = self.unacked.front() {
            if end > snd_una {
                break;
            }
            self.unacked.pop_front();
            self.out -= packets;
            self.acked += packets;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    #[test]
    fn new_data_before_the_resend_is_acknowledged_exceeds_an_rtos_window_of_one() {
        let mut w = RtoWindowCheck::new(0, 1_000, MSS);
        assert_eq!(w.on_new_data(1_000, 1_200), Some(WindowCue::BeforeAck));
    }

    #[test]
    fn after_the_ack_two_packets_fit_slow_starts_window_and_a_third_does_not() {
        let mut w = RtoWindowCheck::new(0, 1_000, MSS);
        w.on_cumulative_ack(1_000);
        assert_eq!(w.on_new_data(1_000, 2_448), None);
        assert_eq!(w.on_new_data(2_448, 3_896), None);
        assert_eq!(w.on_new_data(3_896, 4_000), Some(WindowCue::AfterAck));
    }

    #[test]
    fn each_acknowledged_packet_raises_the_bound_by_one_as_slow_start_does() {
        let mut w = RtoWindowCheck::new(0, 1_000, MSS);
        w.on_cumulative_ack(1_000); // cwnd ≤ 2
        assert_eq!(w.on_new_data(1_000, 2_000), None);
        assert_eq!(w.on_new_data(2_000, 3_000), None);
        w.on_cumulative_ack(3_000); // 3 acked: cwnd ≤ 4, nothing out
        for k in 0..4 {
            assert_eq!(w.on_new_data(3_000 + k * 100, 3_100 + k * 100), None, "packet {k}");
        }
        assert_eq!(w.on_new_data(3_400, 3_500), Some(WindowCue::AfterAck));
    }

    #[test]
    fn a_tso_sized_segment_counts_its_mss_units() {
        let mut w = RtoWindowCheck::new(0, 1_000, MSS);
        w.on_cumulative_ack(1_000);
        assert_eq!(w.on_new_data(1_000, 1_000 + 3 * MSS as u64), Some(WindowCue::AfterAck));
    }

    #[test]
    fn a_duplicate_ack_below_the_resend_raises_nothing() {
        let mut w = RtoWindowCheck::new(0, 1_000, MSS);
        w.on_cumulative_ack(900);
        assert_eq!(w.on_new_data(1_000, 1_100), Some(WindowCue::BeforeAck));
    }
}
