//! Round-trip-time estimation and the retransmission timeout (RFC 6298, as Linux does it).
//!
//! Linux `tcp_rtt_estimator()` / `tcp_set_rto()` (net/ipv4/tcp_input.c) differ from the RFC text
//! in three ways that change RTO values, and we follow Linux:
//! 1. The variance term is floored *inside* the sum: RTO = SRTT + max(4·RTTVAR′, RTO_min), where
//!    RTTVAR′ (`rttvar_us`) is the largest mean deviation seen during the last round trip and
//!    decays by 1/4 per round trip (`mdev_max_us`), so RTO ≥ SRTT + 200 ms — not max(SRTT +
//!    4·RTTVAR, 200 ms) as RFC 6298 §2.4 says.
//! 2. When a sample is *below* SRTT − MDEV, its contribution to the deviation is scaled down by
//!    1/8 (the "Eifel" low-sample filter), so the RTO does not grow when the RTT suddenly drops.
//! 3. Gains are the RFC's: α = 1/8 for SRTT, β = 1/4 for MDEV.
//!
//! The capture analyzer has a deliberate twin (`crates/trace/src/rtt.rs`) that infers an unknown
//! server's SRTT/RTO from a capture (RFC 6298 or Linux style); this one is the sender's own.
//!
//! Backoff (RFC 6298 §5.5): each expiration doubles the timer, capped at `max_rto`; the backoff is
//! cleared by the next valid RTT sample (Linux clears `icsk_backoff` on new ACKed data with a
//! sample). Karn's rule (§3 of the RFC) is the caller's job: samples from retransmitted segments
//! are never passed in unless they come from the timestamp echo, which is unambiguous (RFC 7323).
//! Before any sample the RTO is `initial_rto` (1 s); if the handshake was retransmitted and no
//! sample exists, the RTO falls back to 3 s when data transfer starts (RFC 6298 §5.7, Linux
//! TCP_TIMEOUT_FALLBACK).
//!
//! All arithmetic is in integer nanoseconds. The RTO itself is a whole number of the kernel's
//! ticks, as Linux keeps `icsk_rto` in jiffies (`__tcp_set_rto`: `usecs_to_jiffies(srtt +
//! rttvar)`, rounded up; 1 ns without a tick, [`RttEstimator::with_tick_ns`]), so a 100-ms path
//! at HZ = 250 has an RTO of 76 jiffies = 304 ms, not 300. Deviation: Linux rounds the µs sum,
//! we round the ns sum (the same jiffy but for a sum within 1 µs above a jiffy boundary).

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_ns: u64,
    /// Mean deviation ×4 (Linux `mdev_us` is stored ×4 too, so this *is* the "4·RTTVAR" term).
    mdev4_ns: u64,
    /// Largest `mdev4` during the current round trip (floored at min_rto at each round start).
    mdev4_max_ns: u64,
    /// The variance term used in the RTO (Linux `rttvar_us`).
    rttvar_ns: u64,
    /// Stream offset that ends the current round trip (Linux `rtt_seq`).
    rtt_round_end: u64,
    has_sample: bool,
    min_rtt_ns: u64,
    latest_ns: u64,
    rto_ns: u64,
    pub backoff: u32,
    min_rto_ns: u64,
    max_rto_ns: u64,
    /// The kernel's tick (a jiffy, ns; 1 = no tick): the RTO is kept a whole number of them.
    tick_ns: u64,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> RttEstimator {
        RttEstimator {
            srtt_ns: 0,
            mdev4_ns: 0,
            mdev4_max_ns: 0,
            rttvar_ns: 0,
            rtt_round_end: 0,
            has_sample: false,
            min_rtt_ns: u64::MAX,
            latest_ns: 0,
            rto_ns: initial_rto.as_nanos() as u64,
            backoff: 0,
            min_rto_ns: min_rto.as_nanos() as u64,
            max_rto_ns: max_rto.as_nanos() as u64,
            tick_ns: 1,
        }
    }

    /// Keep the RTO in whole ticks of `tick_ns` (a jiffy, `TcpConfig::hz`), rounded up as
    /// Linux's `usecs_to_jiffies` does; the initial RTO too.
    pub fn with_tick_ns(mut self, tick_ns: u64) -> RttEstimator {
        self.tick_ns = tick_ns.max(1);
        self.rto_ns = self.in_whole_ticks(self.rto_ns);
        self
    }

    fn in_whole_ticks(&self, ns: u64) -> u64 {
        ns.div_ceil(self.tick_ns) * self.tick_ns
    }

    /// Feed one RTT sample `m`. `snd_una`/`snd_nxt` are stream offsets after the ACK; they mark
    /// round-trip boundaries for the variance decay. Clears the backoff.
    pub fn on_sample(&mut self, m: Duration, snd_una: u64, snd_nxt: u64) {
        let m = (m.as_nanos() as u64).max(1_000); // Linux measures in µs, at least 1
        self.latest_ns = m;
        self.min_rtt_ns = self.min_rtt_ns.min(m);
        if !self.has_sample {
            self.has_sample = true;
            self.srtt_ns = m;
            self.mdev4_ns = 2 * m; // RTTVAR = m/2, ×4
            self.mdev4_max_ns = self.mdev4_ns.max(self.min_rto_ns);
            self.rttvar_ns = self.mdev4_max_ns;
            self.rtt_round_end = snd_nxt;
        } else {
            let srtt = self.srtt_ns as i64;
            let err = m as i64 - srtt;
            // SRTT += err/8
            self.srtt_ns = (srtt + err / 8).max(1) as u64;
            let mdev = (self.mdev4_ns / 4) as i64;
            let delta4 = if err < 0 {
                // Sample below SRTT: only let it raise the deviation with weight 1/32 (Linux).
                let e = -err - mdev;
                if e > 0 {
                    e / 8
                } else {
                    e
                }
            } else {
                err - mdev
            };
            // mdev4 += delta4/4 ... i.e. MDEV += (|err| − MDEV)/4 with the above filter.
            self.mdev4_ns = (self.mdev4_ns as i64 + delta4).max(0) as u64;
            if self.mdev4_ns > self.mdev4_max_ns {
                self.mdev4_max_ns = self.mdev4_ns;
                if self.mdev4_max_ns > self.rttvar_ns {
                    self.rttvar_ns = self.mdev4_max_ns;
                }
            }
            if snd_una > self.rtt_round_end {
                // One round trip ended: let rttvar decay towards the round's maximum.
                if self.mdev4_max_ns < self.rttvar_ns {
                    self.rttvar_ns -= (self.rttvar_ns - self.mdev4_max_ns) / 4;
                }
                self.rtt_round_end = snd_nxt;
                self.mdev4_max_ns = self.min_rto_ns;
            }
        }
        self.rto_ns = self.in_whole_ticks(self.srtt_ns + self.rttvar_ns).min(self.max_rto_ns);
        self.backoff = 0;
    }

    /// RTO without backoff.
    pub fn rto(&self) -> Duration {
        Duration::from_nanos(self.rto_ns)
    }
    /// [`Self::rto`] in nanoseconds.
    pub fn rto_ns(&self) -> u64 {
        self.rto_ns
    }

    /// Linux `tcp_update_rtt_min` is fed `ca_rtt_us` (the newest (S)ACKed segment's RTT), which
    /// can be below the sample given to [`RttEstimator::on_sample`] on a stretch ACK.
    pub fn note_min(&mut self, ca: Duration) {
        self.min_rtt_ns = self.min_rtt_ns.min((ca.as_nanos() as u64).max(1_000));
    }

    /// RTO with the current exponential backoff, capped at the maximum.
    pub fn backed_off_rto(&self) -> Duration {
        let shift = self.backoff.min(31);
        let v = (self.rto_ns as u128) << shift;
        Duration::from_nanos(v.min(self.max_rto_ns as u128) as u64)
    }

    /// A retransmission timer expired: double the timer (RFC 6298 §5.5).
    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// RFC 6298 §5.7: after a retransmitted SYN without any sample, RTO = 3 s.
    pub fn fallback_after_syn_loss(&mut self) {
        if !self.has_sample {
            self.rto_ns = self.in_whole_ticks(3_000_000_000u64.min(self.max_rto_ns));
        }
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.has_sample.then(|| Duration::from_nanos(self.srtt_ns))
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.has_sample.then(|| Duration::from_nanos(self.min_rtt_ns))
    }
    /// [`Self::srtt`] in nanoseconds (for the per-ACK paths, which compute in integers).
    pub fn srtt_ns(&self) -> Option<u64> {
        self.has_sample.then_some(self.srtt_ns)
    }
    /// [`Self::min_rtt`] in nanoseconds.
    pub fn min_rtt_ns(&self) -> Option<u64> {
        self.has_sample.then_some(self.min_rtt_ns)
    }
    pub fn latest(&self) -> Option<Duration> {
        self.has_sample.then(|| Duration::from_nanos(self.latest_ns))
    }
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(Duration::from_secs(1), Duration::from_millis(200), Duration::from_secs(120))
    }

    #[test]
    fn initial_rto_is_one_second() {
        assert_eq!(est().rto(), Duration::from_secs(1));
    }

    #[test]
    fn rto_minimum_is_200ms_added_to_srtt() {
        // A steady 10 ms path: Linux's RTO is srtt + 200 ms, not max(srtt + 4·rttvar, 200 ms).
        let mut e = est();
        let mut una = 0;
        for _ in 0..200 {
            e.on_sample(Duration::from_millis(10), una, una + 10);
            una += 10;
        }
        let rto = e.rto();
        assert!(rto >= Duration::from_millis(209) && rto <= Duration::from_millis(211), "{rto:?}");
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn first_sample_sets_srtt_and_variance() {
        let mut e = est();
        e.on_sample(Duration::from_millis(100), 1, 2);
        // srtt = 100 ms, 4·rttvar = 200 ms (= m/2 ×4), floored at 200 ms → 300 ms.
        assert_eq!(e.rto(), Duration::from_millis(300));
    }

    #[test]
    fn the_rto_is_kept_in_whole_jiffies_rounded_up_as_linuxs_icsk_rto() {
        // HZ = 250: 4-ms jiffies. 101 ms: srtt 101 + rttvar max(202, 200) = 303 ms → 76 jiffies.
        let mut e = est().with_tick_ns(4_000_000);
        e.on_sample(Duration::from_millis(101), 1, 2);
        assert_eq!(e.rto(), Duration::from_millis(304));
        assert_eq!(e.backed_off_rto(), Duration::from_millis(304));
        e.on_timeout();
        assert_eq!(e.backed_off_rto(), Duration::from_millis(608), "a doubled whole number of jiffies");
        // Without a tick: the nanosecond sum.
        let mut exact = est();
        exact.on_sample(Duration::from_millis(101), 1, 2);
        assert_eq!(exact.rto(), Duration::from_millis(303));
    }

    #[test]
    fn backoff_doubles_until_the_cap_and_a_sample_clears_it() {
        let mut e = est();
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.backed_off_rto(), Duration::from_secs(4));
        for _ in 0..10 {
            e.on_timeout();
        }
        assert_eq!(e.backed_off_rto(), Duration::from_secs(120));
        e.on_sample(Duration::from_millis(100), 1, 2);
        assert_eq!(e.backoff, 0);
    }

    #[test]
    fn variance_grows_with_jitter() {
        let mut e = est();
        for i in 0..100u64 {
            let m = if i % 2 == 0 { 50 } else { 250 };
            e.on_sample(Duration::from_millis(m), i, i + 1);
        }
        assert!(e.rto() > Duration::from_millis(150 + 200), "{:?}", e.rto());
    }
}
