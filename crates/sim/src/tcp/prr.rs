//! Proportional Rate Reduction (RFC 6937), as Linux `tcp_cwnd_reduction()` (tcp_input.c).
//!
//! During fast recovery the window is not cut to ssthresh at once; instead, for every segment the
//! receiver reports delivered, the sender may send about ssthresh/prior_cwnd segments while the
//! pipe is above ssthresh (proportional part), and grows back towards ssthresh with
//! slow-start-like reduction bound (SSRB) once the pipe has fallen below it. Linux specifics kept:
//! counts are in packets; the SSRB part allows max(prr_delivered − prr_out, newly delivered), plus
//! one when SND.UNA advanced and nothing new was marked lost; the first ACK of an episode always
//! lets one segment out (the fast retransmission itself).

#[derive(Clone, Debug, Default)]
pub struct Prr {
    prior_cwnd: u64,
    ssthresh: u64,
    delivered: u64,
    pub out: u64,
}

impl Prr {
    /// Start of a recovery episode (Linux `tcp_init_cwnd_reduction`), windows in packets.
    pub fn start(&mut self, prior_cwnd_pkts: u64, ssthresh_pkts: u64) {
        self.prior_cwnd = prior_cwnd_pkts.max(1);
        self.ssthresh = ssthresh_pkts;
        self.delivered = 0;
        self.out = 0;
    }

    /// One ACK during recovery; returns the new cwnd in packets, or `None` if the ACK delivered
    /// nothing (cwnd unchanged).
    pub fn on_ack(&mut self, newly_delivered_pkts: u64, newly_lost: bool, una_advanced: bool, in_flight_pkts: u64) -> Option<u64> {
        if newly_delivered_pkts == 0 {
            return None;
        }
        self.delivered += newly_delivered_pkts;
        let delta = self.ssthresh as i64 - in_flight_pkts as i64;
        let mut sndcnt: i64 = if delta < 0 {
            // Proportional: ceil(prr_delivered · ssthresh / prior_cwnd) − prr_out.
            let want = (self.ssthresh * self.delivered).div_ceil(self.prior_cwnd) as i64;
            want - self.out as i64
        } else {
            let mut s = (self.delivered as i64 - self.out as i64).max(newly_delivered_pkts as i64);
            if una_advanced && !newly_lost {
                s += 1;
            }
            s.min(delta)
        };
        if self.out == 0 {
            sndcnt = sndcnt.max(1);
        }
        Some((in_flight_pkts as i64 + sndcnt.max(0)) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prr_sends_half_as_fast_as_deliveries_while_pipe_is_above_ssthresh() {
        // cwnd 20, ssthresh 10, pipe 19 after the first loss: about one send per two deliveries.
        let mut p = Prr::default();
        p.start(20, 10);
        let mut in_flight = 19;
        let mut sent = 0;
        for _ in 0..8 {
            in_flight -= 1; // a delivery leaves the pipe
            let cwnd = p.on_ack(1, false, false, in_flight).unwrap();
            while in_flight < cwnd {
                in_flight += 1;
                p.out += 1;
                sent += 1;
            }
        }
        assert_eq!(sent, 4, "8 deliveries × 10/20");
    }

    #[test]
    fn prr_first_ack_always_allows_the_fast_retransmission() {
        let mut p = Prr::default();
        p.start(10, 5);
        assert_eq!(p.on_ack(1, true, false, 9), Some(10));
    }

    #[test]
    fn prr_grows_back_to_ssthresh_when_pipe_is_below_it() {
        let mut p = Prr::default();
        p.start(20, 10);
        // Pipe collapsed to 2: SSRB lets cwnd climb by delivered+1 per ACK, up to ssthresh.
        assert_eq!(p.on_ack(3, false, true, 2), Some(6));
    }
}
