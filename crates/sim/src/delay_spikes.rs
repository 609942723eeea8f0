//! Delay spikes on a link direction: now and then the link holds every packet for a while and
//! then delivers them all at once, in order — a mobile path's RTT spike (issue 16).
//!
//! Measured mobile broadband paths show round-trip delays of several seconds, often several times
//! an hour, tied to handovers, radio (RRC) state transitions and link- and physical-layer
//! retransmissions (Larson et al., "Investigating Excessive Delays in Mobile Broadband Networks",
//! SIGCOMM AllThingsCellular 2015). The radio buffers rather than drops during these events, so
//! a spike delays packets without losing them; on a viewer's ACK path it starves the server of
//! ACKs for the spike's length, which is what seed 000 calls an "ACK delay/loss" timeout.
//!
//! The process (our choice; the measurements give event rates and durations, not a distribution):
//! spikes start as a Poisson process — the gap from the end of one spike to the start of the next
//! is exponential with mean `every` — and each lasts an exponential time with mean `length`.
//! A packet whose last bit leaves the sender during a spike arrives `spike end − tx end` later
//! than it would have, so every packet held by a spike arrives together, `delay` after the spike
//! ends; packets sent after it cannot overtake them (arrivals never go back in time, RLC's
//! in-sequence delivery, 3GPP TS 36.322 §5.1.2). The sender's serialiser is not paused: a spike
//! holds packets in the radio's buffer, beyond the link's drop-tail queue, so it never drops.
//!
//! Each direction draws from its own random stream (`engine::streams::SPIKES_BASE` + channel
//! index), spike by spike in time order, so the process does not depend on the traffic and
//! turning spikes on changes no loss or reordering draw.

use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;

/// Delay-spike parameters as a scenario gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelaySpikesSpec {
    /// Mean time from the end of one spike to the start of the next (exponential).
    pub every: Duration,
    /// Mean length of a spike (exponential).
    pub length: Duration,
}

/// The spike process of one channel direction.
#[derive(Clone, Debug)]
pub struct DelaySpikes {
    spec: DelaySpikesSpec,
    rng: Pcg64,
    /// The current or next spike, `[start, end)` in ns.
    start_ns: u64,
    end_ns: u64,
    /// Arrival time of the previous packet (in-order delivery).
    last_arrival_ns: u64,
    /// Spikes that held at least one packet, and the packets they held.
    pub spikes_that_held: u64,
    pub packets_held: u64,
    counted_spike_start: Option<u64>,
}

fn exponential_ns(rng: &mut Pcg64, mean: Duration) -> u64 {
    // 1 − U is in (0, 1], so the logarithm is finite.
    let u: f64 = rng.gen();
    (-(1.0 - u).ln() * mean.as_nanos() as f64) as u64
}

impl DelaySpikes {
    pub fn new(spec: DelaySpikesSpec, mut rng: Pcg64) -> DelaySpikes {
        let start_ns = exponential_ns(&mut rng, spec.every);
        let end_ns = start_ns + exponential_ns(&mut rng, spec.length);
        DelaySpikes { spec, rng, start_ns, end_ns, last_arrival_ns: 0, spikes_that_held: 0, packets_held: 0, counted_spike_start: None }
    }

    /// Arrival time of a packet whose last bit left at `tx_end_ns` and that would arrive at
    /// `arrival_ns` without spikes. `tx_end_ns` never goes back in time on a channel.
    pub fn arrival(&mut self, tx_end_ns: u64, arrival_ns: u64) -> u64 {
        while self.end_ns <= tx_end_ns {
            self.start_ns = self.end_ns + exponential_ns(&mut self.rng, self.spec.every);
            self.end_ns = self.start_ns + exponential_ns(&mut self.rng, self.spec.length);
        }
        let mut at = arrival_ns;
        if self.start_ns <= tx_end_ns {
            at += self.end_ns - tx_end_ns;
            self.packets_held += 1;
            if self.counted_spike_start != Some(self.start_ns) {
                self.counted_spike_start = Some(self.start_ns);
                self.spikes_that_held += 1;
            }
        }
        let at = at.max(self.last_arrival_ns);
        self.last_arrival_ns = at;
        at
    }

    /// The spike `[start, end)` in ns that is current at, or next after, the last packet seen.
    pub fn current_spike(&self) -> (u64, u64) {
        (self.start_ns, self.end_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    const MS: u64 = 1_000_000;

    fn spikes(every_ms: u64, length_ms: u64, stream: u64) -> DelaySpikes {
        DelaySpikes::new(
            DelaySpikesSpec { every: Duration::from_millis(every_ms), length: Duration::from_millis(length_ms) },
            sub_rng(5, stream),
        )
    }

    #[test]
    fn a_packet_sent_during_a_spike_arrives_its_delay_after_the_spike_ends_and_others_are_untouched() {
        let mut s = spikes(1000, 300, 1);
        let (start, end) = s.current_spike();
        assert!(end > start, "an exponential draw of mean 300 ms was 0");
        let delay = 20 * MS;
        if start > 0 {
            let before = start - 1;
            assert_eq!(s.arrival(before, before + delay), before + delay);
        }
        assert_eq!(s.arrival(start, start + delay), end + delay);
        let mid = start + (end - start) / 2;
        assert_eq!(s.arrival(mid, mid + delay), end + delay);
        assert_eq!(s.arrival(end, end + delay), end + delay, "the first packet after the spike is not held");
        assert_eq!((s.spikes_that_held, s.packets_held), (1, 2));
    }

    #[test]
    fn arrivals_never_go_back_in_time() {
        let mut s = spikes(50, 40, 2);
        let mut last = 0;
        for i in 0..200_000u64 {
            let t = i * MS / 4; // 50 s: ~550 spikes of mean 40 ms, 50 ms apart
            let at = s.arrival(t, t + 10 * MS);
            assert!(at >= last && at >= t + 10 * MS);
            last = at;
        }
        assert!(s.spikes_that_held > 100);
    }

    #[test]
    fn the_share_of_time_in_a_spike_is_length_over_every_plus_length() {
        // Renewal process: the long-run share of time in a spike is E[length] / (E[every] + E[length]).
        // Sampled at 1 ms over 20 000 s of mean-1 s gaps and 250 ms spikes: 20 000 cycles, so the
        // share's standard error is under 0.002.
        let mut s = spikes(1000, 250, 3);
        let (mut held, n) = (0u64, 20_000_000u64);
        for i in 0..n {
            let t = i * MS;
            if s.arrival(t, t) > t {
                held += 1;
            }
        }
        let share = held as f64 / n as f64;
        assert!((share - 0.2).abs() < 0.01, "share of time in a spike {share}, expected 0.2");
    }

    #[test]
    fn the_same_stream_gives_the_same_spikes_and_another_stream_others() {
        let run = |stream| {
            let mut s = spikes(200, 100, stream);
            (0..5000u64).map(|i| s.arrival(i * MS, i * MS)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }
}
