//! A tiny deterministic bottleneck path for congestion-control unit tests (test-only).
//!
//! Why: BBR, Compound and the CCP family react to RTT and delivery rate, so a synthetic ACK clock
//! that ignores queueing (as `testing::one_round`) cannot exercise them. This helper models one
//! sender with an infinite backlog behind a single FIFO bottleneck of fixed capacity and a fixed
//! base RTT, in closed form: a segment handed to the link at `t` leaves the bottleneck at
//! `max(t, link_free) + MSS/C` and its ACK reaches the sender `base_rtt - MSS/C` later, so an
//! unqueued segment sees exactly `base_rtt`. The queue backlog at any instant is the fluid
//! `(link_free - now) · C`. One ACK per segment (no delayed ACK), no reordering.
//!
//! It produces what the real endpoint (crates/sim tcp) hands a congestion control: RTT samples,
//! an RFC 6298 srtt, bytes in flight, and a delivery-rate sample per ACK computed as
//! draft-cheng-iccrg-delivery-rate-estimation §3 does (per-segment `delivered`, `delivered_time`,
//! `first_sent_time`; interval = max(send elapsed, ACK elapsed)). Pacing follows the rate the CC
//! asks for (EDT style: the next segment may leave `MSS/rate` after the previous one).
//!
//! Loss: segments listed in `drop_segments` (by transmission number) or arriving to a full
//! queue are lost; a loss is detected when a segment sent three transmissions later is ACKed
//! (SACK dupthresh 3), reported in `RateSample::newly_lost_bytes`, triggers
//! `on_congestion_event(FastRetransmit)` once per episode and a retransmission; the episode ends
//! (`on_recovery_exit`) when everything sent before it is ACKed. During recovery a CC that does
//! not own recovery is held at min(cwnd, ssthresh) — a crude stand-in for PRR, enough for tests.
//! When nothing is in the pipe and nothing may be sent (the tail was lost), an RTO fires after
//! max(2·srtt, 200 ms): every undetected loss is retransmitted and `on_congestion_event(Timeout)`
//! is called. No backoff, no spurious-RTO undo.

use std::collections::VecDeque;
use std::time::Duration;

use super::{AckEvent, CongestionControl, CongestionSignal, RateSample};
use crate::units::{Bandwidth, Time};

#[derive(Clone, Debug)]
pub struct PathConfig {
    pub capacity: Bandwidth,
    pub base_rtt: Duration,
    /// Drop-tail limit of the bottleneck queue, in segments.
    pub queue_limit_segments: u64,
    pub mss: u64,
    /// Transmission numbers (0-based, counting retransmissions) to drop (random loss).
    pub drop_segments: Vec<u64>,
}

impl PathConfig {
    pub fn new(mbps: u64, rtt_ms: u64, queue_limit_segments: u64) -> PathConfig {
        PathConfig {
            capacity: Bandwidth::from_mbps(mbps),
            base_rtt: Duration::from_millis(rtt_ms),
            queue_limit_segments,
            mss: 1448,
            drop_segments: Vec::new(),
        }
    }

    /// Bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        self.capacity.bytes_in(self.base_rtt)
    }
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    tx_no: u64,
    ack_at: Time,
    sent_at: Time,
    retransmission: bool,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
}

/// What a test sees after every ACK.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub now: Time,
    pub cwnd: u64,
    pub pacing: Option<Bandwidth>,
    pub queue_bytes: u64,
    pub in_flight: u64,
    pub delivered: u64,
    pub label: &'static str,
    pub rtt: Duration,
}

pub struct FluidPath {
    pub cfg: PathConfig,
    pub now: Time,
    link_free: Time,
    next_send: Time,
    tx_no: u64,
    in_flight: u64,
    flight: VecDeque<Sent>,
    /// Dropped segments not yet detected: (tx_no, bytes).
    undetected_losses: VecDeque<u64>,
    retransmit_pending: u64,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    srtt: Option<Duration>,
    min_rtt: Duration,
    in_recovery: bool,
    recovery_end_tx: u64,
    pub losses: u64,
    pub congestion_events: u64,
    pub rtos: u64,
}

impl FluidPath {
    pub fn new(cfg: PathConfig) -> FluidPath {
        FluidPath {
            cfg,
            now: Time::ZERO,
            link_free: Time::ZERO,
            next_send: Time::ZERO,
            tx_no: 0,
            in_flight: 0,
            flight: VecDeque::new(),
            undetected_losses: VecDeque::new(),
            retransmit_pending: 0,
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            srtt: None,
            min_rtt: Duration::MAX,
            in_recovery: false,
            recovery_end_tx: 0,
            losses: 0,
            congestion_events: 0,
            rtos: 0,
        }
    }

    fn tx_time(&self) -> Duration {
        self.cfg.capacity.transmit_time(self.cfg.mss)
    }

    /// Bytes delivered (ACKed) so far.
    pub fn delivered_total(&self) -> u64 {
        self.delivered
    }

    /// Fluid queue backlog in bytes at `now`.
    pub fn queue_bytes(&self) -> u64 {
        self.cfg.capacity.bytes_in(self.link_free.saturating_since(self.now))
    }

    fn window<C: CongestionControl + ?Sized>(&self, cc: &C) -> u64 {
        if self.in_recovery && !cc.owns_recovery() {
            cc.cwnd().min(cc.ssthresh())
        } else {
            cc.cwnd()
        }
    }

    fn send_one<C: CongestionControl + ?Sized>(&mut self, cc: &mut C, retransmission: bool) {
        let mss = self.cfg.mss;
        let now = self.now;
        if self.in_flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let tx_no = self.tx_no;
        self.tx_no += 1;
        self.in_flight += mss;
        cc.on_packet_sent(now, mss, self.in_flight, false);
        if let Some(rate) = cc.pacing_rate() {
            self.next_send = now + rate.transmit_time(mss);
        }
        let tx = self.tx_time();
        let backlog = self.link_free.saturating_since(now).as_nanos() / tx.as_nanos().max(1);
        let dropped = self.cfg.drop_segments.contains(&tx_no) || backlog as u64 >= self.cfg.queue_limit_segments;
        if dropped {
            self.undetected_losses.push_back(tx_no);
            return;
        }
        let depart = self.link_free.max(now) + tx;
        self.link_free = depart;
        self.flight.push_back(Sent {
            tx_no,
            ack_at: depart + self.cfg.base_rtt.saturating_sub(tx),
            sent_at: now,
            retransmission,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
        });
    }

    fn process_ack<C: CongestionControl + ?Sized>(&mut self, cc: &mut C, p: Sent) -> AckEvent {
        let mss = self.cfg.mss;
        let now = self.now;
        let prior_in_flight = self.in_flight;
        self.in_flight -= mss;
        self.delivered += mss;
        self.delivered_time = now;
        let rtt = now - p.sent_at;
        let rtt_sample = if p.retransmission { None } else { Some(rtt) };
        if let Some(r) = rtt_sample {
            self.min_rtt = self.min_rtt.min(r);
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => (s * 7 + r) / 8,
            });
        }
        // Delivery-rate sample (one segment per ACK, so this segment is the newest delivered).
        self.first_sent_time = p.sent_at;
        let send_elapsed = p.sent_at.saturating_since(p.first_sent_time);
        let ack_elapsed = now.saturating_since(p.delivered_time);
        let mut newly_lost = 0;
        while let Some(&lost) = self.undetected_losses.front() {
            if p.tx_no >= lost + 3 {
                self.undetected_losses.pop_front();
                newly_lost += mss;
            } else {
                break;
            }
        }
        if newly_lost > 0 {
            self.in_flight -= newly_lost;
            self.losses += newly_lost / mss;
            self.retransmit_pending += newly_lost / mss;
            if !self.in_recovery {
                self.in_recovery = true;
                self.recovery_end_tx = self.tx_no;
                self.congestion_events += 1;
                cc.on_congestion_event(now, CongestionSignal::FastRetransmit, self.in_flight);
            }
        }
        let rate = RateSample {
            delivered_bytes: self.delivered - p.delivered,
            interval: send_elapsed.max(ack_elapsed),
            prior_delivered_bytes: p.delivered,
            is_app_limited: false,
            newly_lost_bytes: newly_lost,
        };
        AckEvent {
            now,
            acked_bytes: mss,
            rtt_sample,
            srtt: self.srtt.unwrap_or(rtt),
            min_rtt: self.min_rtt,
            prior_in_flight_bytes: prior_in_flight,
            bytes_in_flight: self.in_flight,
            cwnd_limited: true,
            in_recovery: self.in_recovery,
            delivered_total_bytes: self.delivered,
            rate: Some(rate),
        }
    }

    /// Run the flow until `until`, calling `observe` after every ACK.
    pub fn run<C: CongestionControl + ?Sized>(&mut self, cc: &mut C, until: Time, mut observe: impl FnMut(&Snapshot, &C)) {
        let mss = self.cfg.mss;
        loop {
            // Send what the window and the pacer allow now.
            while self.in_flight + mss <= self.window(cc) && self.next_send <= self.now {
                let retx = self.retransmit_pending > 0;
                if retx {
                    self.retransmit_pending -= 1;
                }
                self.send_one(cc, retx);
            }
            let next_ack = self.flight.front().map(|p| p.ack_at).unwrap_or(Time::MAX);
            let can_send_later = self.in_flight + mss <= self.window(cc);
            let next_tx = if can_send_later { self.next_send.max(self.now) } else { Time::MAX };
            // Nothing in the pipe and nothing sendable: the tail was lost. Fire the RTO
            // (RFC 6298, 200 ms floor as Linux) and retransmit everything undetected.
            let rto_at = if next_ack == Time::MAX && next_tx == Time::MAX {
                let rto = self.srtt.map_or(Duration::from_secs(1), |s| (s * 2).max(Duration::from_millis(200)));
                self.now + rto
            } else {
                Time::MAX
            };
            let next = next_ack.min(next_tx).min(rto_at);
            assert!(next != Time::MAX, "path stalled at {}", self.now);
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
            if next == rto_at {
                let lost = self.undetected_losses.len() as u64;
                self.undetected_losses.clear();
                self.in_flight -= lost * mss;
                self.losses += lost;
                self.retransmit_pending += lost;
                self.rtos += 1;
                self.in_recovery = true;
                self.recovery_end_tx = self.tx_no;
                cc.on_congestion_event(self.now, CongestionSignal::Timeout, self.in_flight);
                continue;
            }
            if next_ack <= next {
                let p = self.flight.pop_front().unwrap();
                let ack = self.process_ack(cc, p);
                cc.on_ack(&ack);
                if self.in_recovery && p.tx_no >= self.recovery_end_tx && self.retransmit_pending == 0 {
                    self.in_recovery = false;
                    cc.on_recovery_exit(self.now);
                }
                let snap = Snapshot {
                    now: self.now,
                    cwnd: cc.cwnd(),
                    pacing: cc.pacing_rate(),
                    queue_bytes: self.queue_bytes(),
                    in_flight: self.in_flight,
                    delivered: self.delivered,
                    label: cc.state_label(),
                    rtt: self.now - p.sent_at,
                };
                observe(&snap, &*cc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::Reno;
    use crate::cc::CcConfig;

    #[test]
    fn unqueued_segment_sees_the_base_rtt_and_a_saturated_link_delivers_its_capacity() {
        let mut path = FluidPath::new(PathConfig::new(10, 20, 10_000));
        let mut cc = Reno::new(&CcConfig::default());
        let mut first_rtt = None;
        let mut delivered_at_1s = None;
        path.run(&mut cc, Time::from_secs(2), |s, _| {
            first_rtt.get_or_insert(s.rtt);
            if s.now >= Time::from_secs(1) {
                delivered_at_1s.get_or_insert(s.delivered);
            }
        });
        assert_eq!(first_rtt.unwrap(), Duration::from_millis(20));
        // From 1 s to 2 s Reno's window exceeds the BDP (25 kB), so the 10 Mbit/s link is busy.
        let rate = Bandwidth::from_bytes_per(path.delivered - delivered_at_1s.unwrap(), Duration::from_secs(1));
        assert!(rate.as_mbps_f64() > 9.5 && rate.as_mbps_f64() <= 10.01, "{rate}");
    }

    #[test]
    fn listed_segment_is_lost_detected_after_three_more_and_recovered() {
        let mut cfg = PathConfig::new(10, 20, 10_000);
        cfg.drop_segments = vec![15];
        let mut path = FluidPath::new(cfg);
        let mut cc = Reno::new(&CcConfig::default());
        path.run(&mut cc, Time::from_millis(500), |_, _| {});
        assert_eq!(path.losses, 1);
        assert_eq!(path.congestion_events, 1);
        assert!(cc.ssthresh() < u64::MAX, "Reno must have reacted");
    }
}
