//! RTT sampling and RFC 6298 SRTT/RTO emulation, as the server's TCP would compute them.
//!
//! Samples (server as sender): when an ACK advances snd_una, the sample is the time since the
//! *oldest* newly acknowledged segment was sent, as Linux's `tcp_clean_rtx_queue` does
//! (`first_ackt`), and only if none of the newly acknowledged segments was ever retransmitted
//! (Karn's algorithm, RFC 6298 §3; Linux `FLAG_RETRANS_DATA_ACKED`). When Karn forbids a sample
//! and the ACK carries a timestamp echo, the sample is the time since the server first sent
//! that TSval (RFC 7323 §4.1; Linux `tcp_rtt_tsopt_us`).
//!
//! Estimator (RFC 6298 §2): first sample R: SRTT = R, RTTVAR = R/2; later samples:
//! RTTVAR = 3/4·RTTVAR + 1/4·|SRTT − R|, SRTT = 7/8·SRTT + 1/8·R.
//! RTO = SRTT + max(G, 4·RTTVAR) with clock granularity G = 1 ms (Linux jiffies at HZ=1000),
//! clamped to [min_rto, max_rto] (Rfc6298 style); or, Linux style, SRTT + max(4·RTTVAR,
//! min_rto) (Linux keeps `mdev_max_us ≥ tcp_rto_min_us`, so the 200 ms floor is added to SRTT).
//! Before any sample the RTO is `initial_rto` (1 s, RFC 6298 §2.1). Each timeout doubles the RTO
//! (§5.5) until a new sample arrives (§5.7 lets the backed-off value persist until then).
//!
//! A deliberate twin of the simulator's estimator (`crates/sim/src/tcp/rtt.rs`): that one *is*
//! the sender and follows Linux exactly (mdev_max, the low-sample filter); this one *infers* what
//! an unknown server stack would compute from a capture, so it offers RFC 6298 or Linux style,
//! tolerates missing packets and keeps per-flow statistics. Shared code would tie the analyzer's
//! inference to the simulator's single stack.

use crate::RtoStyle;

const G_NS: u64 = 1_000_000;

/// RFC 6298 estimator state, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    pub srtt_ns: Option<u64>,
    pub rttvar_ns: u64,
    pub min_rtt_ns: u64,
    pub samples: u64,
    pub sum_ns: u128,
    backoff: u32,
    style: RtoStyle,
    min_rto: u64,
    init_rto: u64,
    max_rto: u64,
}

impl RttEstimator {
    pub fn new(style: RtoStyle, min_rto_ns: u64, init_rto_ns: u64, max_rto_ns: u64) -> Self {
        RttEstimator {
            srtt_ns: None,
            rttvar_ns: 0,
            min_rtt_ns: u64::MAX,
            samples: 0,
            sum_ns: 0,
            backoff: 0,
            style,
            min_rto: min_rto_ns,
            init_rto: init_rto_ns,
            max_rto: max_rto_ns,
        }
    }

    /// Feed one RTT sample (RFC 6298 §2.2/§2.3). Resets the timeout backoff.
    pub fn sample(&mut self, r: u64) {
        self.samples += 1;
        self.sum_ns += r as u128;
        self.min_rtt_ns = self.min_rtt_ns.min(r);
        self.backoff = 0;
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(r);
                self.rttvar_ns = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                // RTTVAR = (1 - beta) * RTTVAR + beta * |SRTT - R'|, beta = 1/4
                self.rttvar_ns = (3 * self.rttvar_ns + diff) / 4;
                // SRTT = (1 - alpha) * SRTT + alpha * R', alpha = 1/8
                self.srtt_ns = Some((7 * s + r) / 8);
            }
        }
    }

    /// Current RTO without backoff.
    pub fn base_rto_ns(&self) -> u64 {
        match self.srtt_ns {
            None => self.init_rto,
            Some(s) => {
                let rto = match self.style {
                    RtoStyle::Rfc6298 => (s + G_NS.max(4 * self.rttvar_ns)).max(self.min_rto),
                    RtoStyle::Linux => s + (4 * self.rttvar_ns).max(self.min_rto),
                };
                rto.min(self.max_rto)
            }
        }
    }

    /// The smallest RTO the sender can have (its configured minimum; Linux TCP_RTO_MIN).
    pub fn min_rto_ns(&self) -> u64 {
        self.min_rto
    }

    /// Current RTO including exponential backoff after timeouts (RFC 6298 §5.5).
    pub fn rto_ns(&self) -> u64 {
        let b = self.backoff.min(16);
        self.base_rto_ns().saturating_mul(1u64 << b).min(self.max_rto)
    }

    /// The longest interval a sender's persist timer could take (Linux `tcp_probe0_when`:
    /// max(RTO, TCP_RTO_MIN) << backoff) whichever RTO formula the sender uses: RFC 6298's
    /// max(SRTT + 4·RTTVAR, min) or Linux's SRTT + max(4·RTTVAR, min) (`tcp_set_rto`), the larger
    /// by up to one SRTT. Used to ask whether data could have waited since a gap began
    /// (`Flow::small_window_may_have_held_data`), so the estimate errs long.
    pub fn persist_interval_ns(&self) -> u64 {
        let linux = match self.srtt_ns {
            None => self.init_rto,
            Some(s) => (s + (4 * self.rttvar_ns).max(self.min_rto)).min(self.max_rto),
        };
        let b = self.backoff.min(16);
        self.base_rto_ns().max(linux).saturating_mul(1u64 << b).min(self.max_rto)
    }

    /// A retransmission timeout fired: back the timer off.
    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn mean_ns(&self) -> Option<u64> {
        (self.samples > 0).then(|| (self.sum_ns / self.samples as u128) as u64)
    }
}

/// Remembers when the server first sent recent TSvals, to turn echoed TSecr values into RTT
/// samples (RFC 7323) when Karn's rule forbids a sequence-based sample. Fixed size, no allocation.
#[derive(Clone, Copy, Debug)]
pub struct TsvalClock {
    ring: [(u32, u64); 32],
    head: usize,
    last: Option<u32>,
}

impl Default for TsvalClock {
    fn default() -> Self {
        TsvalClock { ring: [(0, u64::MAX); 32], head: 0, last: None }
    }
}

impl TsvalClock {
    /// Record that the server sent `tsval` at `t` (only the first sighting of each value counts).
    #[inline]
    pub fn on_send(&mut self, tsval: u32, t: u64) {
        if self.last == Some(tsval) {
            return;
        }
        self.last = Some(tsval);
        self.ring[self.head] = (tsval, t);
        self.head = (self.head + 1) % self.ring.len();
    }

    /// When was `tsecr` first sent by the server, if still remembered?
    pub fn sent_at(&self, tsecr: u32) -> Option<u64> {
        self.ring.iter().find(|(v, t)| *v == tsecr && *t != u64::MAX).map(|&(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: u64 = 1_000_000;

    fn est() -> RttEstimator {
        RttEstimator::new(RtoStyle::Rfc6298, 200 * MS, 1000 * MS, 120_000 * MS)
    }

    #[test]
    fn initial_rto_is_one_second_before_any_sample() {
        assert_eq!(est().rto_ns(), 1000 * MS);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = est();
        e.sample(100 * MS);
        assert_eq!(e.srtt_ns, Some(100 * MS));
        assert_eq!(e.rttvar_ns, 50 * MS);
        // 100 + 4*50 = 300 ms
        assert_eq!(e.rto_ns(), 300 * MS);
    }

    #[test]
    fn later_samples_use_alpha_one_eighth_beta_one_quarter() {
        let mut e = est();
        e.sample(100 * MS);
        e.sample(180 * MS);
        // rttvar = 3/4*50 + 1/4*80 = 57.5; srtt = 7/8*100 + 1/8*180 = 110
        assert_eq!(e.srtt_ns, Some(110 * MS));
        assert_eq!(e.rttvar_ns, 57_500_000);
    }

    #[test]
    fn rto_never_below_200ms_floor() {
        let mut e = est();
        for _ in 0..50 {
            e.sample(10 * MS);
        }
        assert_eq!(e.rto_ns(), 200 * MS);
    }

    #[test]
    fn linux_style_adds_floor_to_srtt() {
        let mut e = RttEstimator::new(RtoStyle::Linux, 200 * MS, 1000 * MS, 120_000 * MS);
        for _ in 0..50 {
            e.sample(10 * MS);
        }
        assert!(e.rto_ns() >= 210 * MS - MS && e.rto_ns() <= 211 * MS, "{}", e.rto_ns());
    }

    #[test]
    fn rto_backs_off_exponentially_until_next_sample() {
        let mut e = est();
        e.sample(100 * MS);
        e.on_timeout();
        assert_eq!(e.rto_ns(), 600 * MS);
        e.on_timeout();
        assert_eq!(e.rto_ns(), 1200 * MS);
        e.sample(100 * MS);
        assert!(e.rto_ns() < 600 * MS);
    }

    #[test]
    fn tsval_clock_returns_first_send_time() {
        let mut c = TsvalClock::default();
        c.on_send(7, 10);
        c.on_send(7, 20);
        c.on_send(8, 30);
        assert_eq!(c.sent_at(7), Some(10));
        assert_eq!(c.sent_at(8), Some(30));
        assert_eq!(c.sent_at(9), None);
    }
}
