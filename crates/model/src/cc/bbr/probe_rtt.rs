//! PROBE_RTT: refresh min_rtt by draining the pipe (Linux `bbr_update_min_rtt` second half,
//! `bbr_check_probe_rtt_done`).
//!
//! Entered when the min-RTT estimate is 10 s old (and not right after an idle restart). cwnd is
//! capped at 4 segments (`bbr_cwnd_min_target`); once in-flight has fallen to that, BBR stays at
//! least 200 ms (`bbr_probe_rtt_mode_ms`) and at least one packet-timed round, then restores the
//! pre-PROBE_RTT cwnd and returns to PROBE_BW (or STARTUP if the pipe was never full).
//!
//! Linux also marks the connection application-limited on every ACK in PROBE_RTT so the
//! low-rate samples it yields neither lower the bandwidth filter nor count for plateau detection.
//! That flag belongs to the endpoint's rate sampler in Linux; [`super::Bbr`] keeps the marked span
//! of delivered bytes itself and applies it to the samples whose packets were sent inside it. It
//! matters on short paths, where the 200 ms of PROBE_RTT last more than the 10-round bandwidth
//! window: without the mark the estimate would collapse to the 4-packet rate.

use std::time::Duration;

use crate::units::Time;

#[derive(Clone, Debug, Default)]
pub struct ProbeRtt {
    /// When PROBE_RTT may end (Linux `probe_rtt_done_stamp`); None until in-flight is low.
    pub done_at: Option<Time>,
    /// A full round has elapsed at the low in-flight (Linux `probe_rtt_round_done`).
    pub round_done: bool,
}

impl ProbeRtt {
    pub fn enter(&mut self) {
        self.done_at = None;
        self.round_done = false;
    }

    /// One ACK in PROBE_RTT. Returns true when the mode should end now. `restart_round` is called
    /// when the low in-flight is first reached (Linux starts a new round then).
    pub fn on_ack(
        &mut self,
        now: Time,
        inflight_segments: u64,
        min_target: u64,
        duration: Duration,
        round_start: bool,
        restart_round: impl FnOnce(),
    ) -> bool {
        match self.done_at {
            None if inflight_segments <= min_target => {
                self.done_at = Some(now + duration);
                self.round_done = false;
                restart_round();
                false
            }
            None => false,
            Some(done) => {
                if round_start {
                    self.round_done = true;
                }
                self.round_done && now > done
            }
        }
    }

    /// Linux `bbr_check_probe_rtt_done` outside the ACK path (restart after idle).
    pub fn done(&self, now: Time) -> bool {
        matches!(self.done_at, Some(d) if now > d)
    }
}
