//! When a live client sends its request for the next segment.
//!
//! Seed 004 §IV-C: by default every client requests a segment as soon as it becomes available
//! ("synchronised": all clients' on-periods start together, the flash crowd that fills the
//! bottleneck queue). The mitigation distributes the requests over the segment period: "upon
//! arrival, the clients make a request every segment duration", i.e. each client keeps the phase
//! of its arrival. Arrivals are a Poisson process within one segment duration (seed 004 §III), so
//! the phases are independent and uniform over `[0, d)` (the arrival times of a Poisson process
//! on an interval, given their number, are uniform order statistics) — which is what
//! [`RequestTiming::draw_distributed`] draws with the RNG it is handed.
//!
//! A client that is behind (the segment became available before its slot passed) requests at
//! once: "clients that get more than one segment duration behind ... break the download-and-wait
//! cycle" (§IV-C).
//!
//! Two readings of "distributed" for a client with a buffer of several segments (§V-C, Figs 13–14):
//! - [`RequestTiming::Distributed`]: the phase is a not-before slot after the segment's
//!   availability; the buffer target still gates requests (the player fetches while its buffer is
//!   below target). A client behind the live edge has passed every availability slot, so its
//!   playback clock, not the phase, sets when it asks — the policy then never acts.
//! - [`RequestTiming::Clocked`]: §IV-C as written — "upon arrival, the clients make a request
//!   every segment duration ... they can assume that a new segment is going to be produced every
//!   segment duration": one request per period at the client's phase, whatever its buffer. The
//!   next request goes out at the first slot after the previous request (and not before the
//!   segment's availability slot); a client whose download ran past its slot asks at once when it
//!   ends, and its next slot is the first after that request (it catches up one period at a time).
//!   The buffer target then only sets how far behind the live edge the client joined.

use std::time::Duration;

use crate::units::Time;

/// The request-timing policy of one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestTiming {
    /// Request a segment as soon as it is available (seed 004 default).
    AsSoonAsAvailable,
    /// Request at the client's own phase in each segment period: at the first `t0 + phase + n·d`
    /// not before the segment's availability.
    Distributed { phase: Duration },
    /// One request per segment period at the client's phase, whatever its buffer (§IV-C as
    /// written): the first `t0 + phase + n·d` after the previous request and not before the
    /// segment's availability slot.
    Clocked { phase: Duration },
}

impl RequestTiming {
    /// A distributed client whose phase is drawn uniformly from `[0, d)` with the caller's RNG.
    pub fn draw_distributed<R: rand::Rng + ?Sized>(segment_duration: Duration, rng: &mut R) -> RequestTiming {
        let d_ns = segment_duration.as_nanos().max(1) as u64;
        RequestTiming::Distributed { phase: Duration::from_nanos(rng.gen_range(0..d_ns)) }
    }

    /// A distributed client that keeps the phase of its arrival (seed 004's description).
    pub fn distributed_from_arrival(arrival: Time, t0: Time, segment_duration: Duration) -> RequestTiming {
        let d_ns = segment_duration.as_nanos().max(1) as u64;
        let since = arrival.as_nanos().saturating_sub(t0.as_nanos());
        RequestTiming::Distributed { phase: Duration::from_nanos(since % d_ns) }
    }

    /// The same phase on the client's own clock: one request per period whatever its buffer.
    pub fn clocked_from_arrival(arrival: Time, t0: Time, segment_duration: Duration) -> RequestTiming {
        match RequestTiming::distributed_from_arrival(arrival, t0, segment_duration) {
            RequestTiming::Distributed { phase } => RequestTiming::Clocked { phase },
            other => other,
        }
    }

    /// Does the client request on its own clock, whatever its buffer level?
    pub fn ignores_buffer(&self) -> bool {
        matches!(self, RequestTiming::Clocked { .. })
    }

    /// When to request the next segment, available at `available_at`, asked at `now`, the
    /// previous request having left at `previous` (if any). Only [`RequestTiming::Clocked`] looks
    /// at `previous`.
    pub fn next_request_time(&self, now: Time, available_at: Time, previous: Option<Time>, t0: Time, segment_duration: Duration) -> Time {
        let at = self.request_time(now, available_at, t0, segment_duration);
        match (*self, previous) {
            (RequestTiming::Clocked { phase }, Some(prev)) => {
                let d = segment_duration.as_nanos().max(1) as u64;
                let base = t0.as_nanos() + phase.as_nanos() as u64 % d;
                let p = prev.as_nanos();
                // first base + n·d strictly after the previous request
                let next = if p < base { base } else { base + ((p - base) / d + 1) * d };
                at.max(Time::from_nanos(next))
            }
            _ => at,
        }
    }

    /// When to request a segment that is available at `available_at`, asked at `now`.
    pub fn request_time(&self, now: Time, available_at: Time, t0: Time, segment_duration: Duration) -> Time {
        let slot = match *self {
            RequestTiming::AsSoonAsAvailable => available_at,
            RequestTiming::Distributed { phase } | RequestTiming::Clocked { phase } => {
                let d = segment_duration.as_nanos().max(1) as u64;
                let phase = phase.as_nanos() as u64 % d;
                let base = t0.as_nanos() + phase;
                let avail = available_at.as_nanos();
                if avail <= base {
                    Time::from_nanos(base)
                } else {
                    // first base + n·d ≥ avail
                    let n = (avail - base).div_ceil(d);
                    Time::from_nanos(base + n * d)
                }
            }
        };
        slot.max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const D: Duration = Duration::from_secs(2);

    #[test]
    fn synchronised_clients_request_at_availability() {
        let t = RequestTiming::AsSoonAsAvailable;
        assert_eq!(t.request_time(Time::from_secs(3), Time::from_secs(4), Time::ZERO, D), Time::from_secs(4));
    }

    #[test]
    fn distributed_client_waits_for_its_phase_after_availability() {
        // phase 0.5 s: slots at 0.5, 2.5, 4.5, ...; segment available at 4.0 → request at 4.5
        let t = RequestTiming::Distributed { phase: Duration::from_millis(500) };
        assert_eq!(t.request_time(Time::from_secs(3), Time::from_secs(4), Time::ZERO, D), Time::from_millis(4500));
        // available exactly on a slot → that slot
        assert_eq!(t.request_time(Time::ZERO, Time::from_millis(2500), Time::ZERO, D), Time::from_millis(2500));
    }

    #[test]
    fn a_client_that_is_behind_requests_at_once() {
        let t = RequestTiming::Distributed { phase: Duration::from_millis(500) };
        assert_eq!(t.request_time(Time::from_secs(9), Time::from_secs(4), Time::ZERO, D), Time::from_secs(9));
    }

    #[test]
    fn arrival_phase_is_kept() {
        let t = RequestTiming::distributed_from_arrival(Time::from_millis(7300), Time::from_secs(1), D);
        assert_eq!(t, RequestTiming::Distributed { phase: Duration::from_millis(300) });
    }

    #[test]
    fn a_clocked_client_asks_once_per_period_at_its_phase_even_when_segments_wait() {
        // phase 0.5 s, slots 0.5, 2.5, 4.5, ...; the client is behind: segments 4 s old are there.
        let t = RequestTiming::Clocked { phase: Duration::from_millis(500) };
        let old = Time::from_secs(1);
        // previous request at the 2.5 s slot, download done at 3.1 s: next at the 4.5 s slot
        assert_eq!(
            t.next_request_time(Time::from_millis(3100), old, Some(Time::from_millis(2500)), Time::ZERO, D),
            Time::from_millis(4500)
        );
        // the distributed (not-before) reading would ask at once
        let dist = RequestTiming::Distributed { phase: Duration::from_millis(500) };
        assert_eq!(
            dist.next_request_time(Time::from_millis(3100), old, Some(Time::from_millis(2500)), Time::ZERO, D),
            Time::from_millis(3100)
        );
        // a download that ran past the slot: ask at once when it ends ...
        assert_eq!(
            t.next_request_time(Time::from_millis(5200), old, Some(Time::from_millis(2500)), Time::ZERO, D),
            Time::from_millis(5200)
        );
        // ... and the next slot is the first after that late request
        assert_eq!(
            t.next_request_time(Time::from_millis(5300), old, Some(Time::from_millis(5200)), Time::ZERO, D),
            Time::from_millis(6500)
        );
        // never before the segment's own availability slot
        assert_eq!(
            t.next_request_time(Time::from_millis(5300), Time::from_secs(8), Some(Time::from_millis(5200)), Time::ZERO, D),
            Time::from_millis(8500)
        );
        assert!(t.ignores_buffer() && !dist.ignores_buffer());
    }

    #[test]
    fn drawn_phases_cover_the_period_uniformly() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        let mut bins = [0u32; 4];
        for _ in 0..4000 {
            let RequestTiming::Distributed { phase } = RequestTiming::draw_distributed(D, &mut rng) else { unreachable!() };
            assert!(phase < D);
            bins[(phase.as_millis() / 500) as usize] += 1;
        }
        for b in bins {
            assert!((900..1100).contains(&b), "{bins:?}");
        }
    }
}
