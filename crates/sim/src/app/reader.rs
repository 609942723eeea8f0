//! The receiving application's read loop: everything at once, at a fixed rate, or not at all
//! during pauses.
//!
//! A rate-limited reader is a token bucket with a depth of 10 ms of reading (at least 16 KiB), the
//! way a player that consumes media at its bitrate reads from its socket. While it does not read,
//! the receive buffer fills and the advertised window shrinks to zero; when it reads again, the
//! endpoint sends a window update (Linux `tcp_cleanup_rbuf`) and the sender resumes.

use std::time::Duration;

use tcpvideo_model::{Bandwidth, Time};

use crate::scenario::ReaderDef;
use crate::tcp::TcpEndpoint;

#[derive(Clone, Debug)]
pub struct Reader {
    def: ReaderDef,
    start: Time,
    tokens: f64,
    last: Time,
    /// A READ wake-up is already scheduled at this time.
    pub wake_at: Option<Time>,
}

/// What the reader wants after a read attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Nothing more to do until new data arrives.
    Idle,
    /// Call again at this time (pause end or tokens available).
    WakeAt(Time),
}

impl Reader {
    pub fn new(def: ReaderDef, start: Time) -> Reader {
        Reader { def, start, tokens: 0.0, last: start, wake_at: None }
    }

    fn depth(rate: Bandwidth) -> f64 {
        (rate.bytes_in(Duration::from_millis(10)) as f64).max(16_384.0)
    }

    /// End of the pause containing `now`, if any.
    fn paused_until(&self, now: Time) -> Option<Time> {
        self.def
            .pauses
            .iter()
            .map(|&(a, b)| (self.start + a, self.start + b))
            .find(|&(a, b)| a <= now && now < b)
            .map(|(_, b)| b)
    }

    /// Read what the policy allows now; returns bytes read and what to do next.
    pub fn read(&mut self, now: Time, ep: &mut TcpEndpoint) -> (u64, ReadOutcome) {
        if let Some(rate) = self.def.rate {
            // Tokens accrue even while paused (the playout keeps draining) up to the bucket depth.
            let dt = now.saturating_since(self.last).as_nanos() as f64 / 1e9;
            self.tokens = (self.tokens + dt * rate.bits_per_sec as f64 / 8.0).min(Self::depth(rate));
            self.last = now;
        }
        if let Some(end) = self.paused_until(now) {
            return (0, ReadOutcome::WakeAt(end));
        }
        let avail = ep.readable_bytes();
        if avail == 0 {
            return (0, ReadOutcome::Idle);
        }
        match self.def.rate {
            None => (ep.recv(avail), ReadOutcome::Idle),
            Some(rate) => {
                let n = (self.tokens as u64).min(avail);
                let got = if n > 0 { ep.recv(n) } else { 0 };
                self.tokens -= got as f64;
                let left = ep.readable_bytes();
                if left == 0 {
                    return (got, ReadOutcome::Idle);
                }
                // Wake when a chunk (up to 16 KiB, or what is left) worth of tokens has accrued.
                let want = (left.min(16_384) as f64 - self.tokens).max(1.0);
                let wait = Duration::from_nanos((want * 8.0 * 1e9 / rate.bits_per_sec as f64).ceil() as u64);
                (got, ReadOutcome::WakeAt(now + wait.max(Duration::from_micros(1))))
            }
        }
    }

    /// Pause ends, as absolute times (the simulation schedules a READ at each).
    pub fn pause_ends(&self) -> impl Iterator<Item = Time> + '_ {
        self.def.pauses.iter().map(|&(_, b)| self.start + b)
    }
}
