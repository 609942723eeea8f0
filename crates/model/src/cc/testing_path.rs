//! A shared drop-tail bottleneck for congestion-control unit tests (test-only, several flows).
//!
//! Why: Vegas reacts to queueing delay and the fairness tests need flows competing for one queue,
//! neither of which a synthetic ACK clock (`testing::one_round`) produces. (cc-model's single-flow
//! `fluid_path.rs` serves BBR and the CCP family; this one adds several senders on one queue.)
//!
//! Model: each flow has an infinite backlog, its own base RTT and start time. A segment sent at
//! `t` reaches the bottleneck at `t + base_rtt/2`; the bottleneck is a FIFO served at capacity C
//! (one segment every MSS·8/C), holding at most `queue_limit` segments (the one in service
//! included) and dropping arrivals beyond that (drop-tail). A served segment's ACK reaches its
//! sender `base_rtt/2` after it leaves, so an unqueued segment sees `base_rtt + MSS·8/C`. One ACK
//! per segment (no delayed ACK), no reordering, no ACK loss. Everything is an event with an
//! integer-nanosecond timestamp, ties broken by insertion order: runs are exactly reproducible.
//!
//! Loss handling (a crude stand-in for SACK recovery, enough for window dynamics): a drop is
//! detected three segment times after the ACK of the next segment would have arrived; the lost
//! segment leaves the flight, the flow enters recovery (one `on_congestion_event(FastRetransmit)`
//! per episode) and sends while in-flight < min(cwnd, ssthresh) (no PRR) until everything sent
//! before the episode is ACKed, then `on_recovery_exit`. Lost data is not resent (the backlog is
//! infinite and identical). No RTO: tests must not lose a whole window.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use super::{AckEvent, CongestionControl, CongestionSignal};
use crate::units::{Bandwidth, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Start { flow: usize },
    Arrive { flow: usize, seq: u64, sent_ns: u64 },
    Ack { flow: usize, seq: u64, sent_ns: u64 },
    LossDetected { flow: usize },
}

pub struct PathFlow {
    pub cc: Box<dyn CongestionControl>,
    pub base_rtt: Duration,
    /// Segments sent (the next sequence number, in segments).
    pub sent: u64,
    /// Segments ACKed.
    pub delivered: u64,
    pub in_flight: u64,
    pub drops: u64,
    pub congestion_events: u64,
    pub in_recovery: bool,
    recovery_point: u64,
    srtt: Option<Duration>,
    min_rtt: Duration,
    started: bool,
}

pub struct SharedPath {
    pub now: Time,
    pub mss: u64,
    tx_time: Duration,
    queue_limit: usize,
    /// Departure times of the segments in the bottleneck (in service first).
    departures: VecDeque<Time>,
    pub flows: Vec<PathFlow>,
    events: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    order: u64,
}

impl SharedPath {
    pub fn new(capacity: Bandwidth, queue_limit_segments: usize, mss: u64) -> SharedPath {
        SharedPath {
            now: Time::ZERO,
            mss,
            tx_time: capacity.transmit_time(mss),
            queue_limit: queue_limit_segments.max(1),
            departures: VecDeque::new(),
            flows: Vec::new(),
            events: BinaryHeap::new(),
            order: 0,
        }
    }

    /// Add a flow that starts sending at `start`; returns its index.
    pub fn add_flow(&mut self, cc: Box<dyn CongestionControl>, base_rtt: Duration, start: Time) -> usize {
        let flow = self.flows.len();
        self.flows.push(PathFlow {
            cc,
            base_rtt,
            sent: 0,
            delivered: 0,
            in_flight: 0,
            drops: 0,
            congestion_events: 0,
            in_recovery: false,
            recovery_point: 0,
            srtt: None,
            min_rtt: Duration::MAX,
            started: false,
        });
        self.schedule(start, Ev::Start { flow });
        flow
    }

    /// Segments in the bottleneck (queued plus in service) right now.
    pub fn queue_len(&self) -> usize {
        self.departures.len() - self.departures.partition_point(|&d| d <= self.now)
    }

    fn schedule(&mut self, at: Time, ev: Ev) {
        self.order += 1;
        self.events.push(Reverse((at, self.order, ev)));
    }

    fn try_send(&mut self, flow: usize) {
        let now = self.now;
        let mss = self.mss;
        if !self.flows[flow].started {
            return;
        }
        loop {
            let f = &mut self.flows[flow];
            let limit = if f.in_recovery { f.cc.cwnd().min(f.cc.ssthresh()) } else { f.cc.cwnd() };
            if (f.in_flight + 1) * mss > limit {
                return;
            }
            let seq = f.sent;
            f.sent += 1;
            f.in_flight += 1;
            f.cc.on_packet_sent(now, mss, f.in_flight * mss, false);
            let arrive = now + f.base_rtt / 2;
            self.schedule(arrive, Ev::Arrive { flow, seq, sent_ns: now.as_nanos() });
        }
    }

    /// Process events until `until`, calling `on_ack(path, flow)` after every ACK.
    pub fn run_until(&mut self, until: Time, mut on_ack: impl FnMut(&SharedPath, usize)) {
        while let Some(&Reverse((at, _, ev))) = self.events.peek() {
            if at > until {
                break;
            }
            self.events.pop();
            self.now = at;
            match ev {
                Ev::Start { flow } => {
                    self.flows[flow].started = true;
                    self.try_send(flow);
                }
                Ev::Arrive { flow, seq, sent_ns } => {
                    while self.departures.front().is_some_and(|&d| d <= at) {
                        self.departures.pop_front();
                    }
                    if self.departures.len() >= self.queue_limit {
                        let f = &mut self.flows[flow];
                        f.drops += 1;
                        let detect = at + f.base_rtt / 2 + self.tx_time * 4;
                        self.schedule(detect, Ev::LossDetected { flow });
                    } else {
                        let depart = self.departures.back().copied().unwrap_or(at).max(at) + self.tx_time;
                        self.departures.push_back(depart);
                        let half = self.flows[flow].base_rtt / 2;
                        self.schedule(depart + half, Ev::Ack { flow, seq, sent_ns });
                    }
                }
                Ev::LossDetected { flow } => {
                    let mss = self.mss;
                    let f = &mut self.flows[flow];
                    f.in_flight -= 1;
                    if !f.in_recovery {
                        f.in_recovery = true;
                        f.recovery_point = f.sent;
                        f.congestion_events += 1;
                        f.cc.on_congestion_event(at, CongestionSignal::FastRetransmit, f.in_flight * mss);
                    }
                    self.try_send(flow);
                }
                Ev::Ack { flow, seq, sent_ns } => {
                    let mss = self.mss;
                    let f = &mut self.flows[flow];
                    let prior = f.in_flight;
                    f.in_flight -= 1;
                    f.delivered += 1;
                    let rtt = at - Time::from_nanos(sent_ns);
                    f.min_rtt = f.min_rtt.min(rtt);
                    let srtt = match f.srtt {
                        None => rtt,
                        Some(s) => (s * 7 + rtt) / 8,
                    };
                    f.srtt = Some(srtt);
                    let ack = AckEvent {
                        now: at,
                        acked_bytes: mss,
                        rtt_sample: Some(rtt),
                        srtt,
                        min_rtt: f.min_rtt,
                        prior_in_flight_bytes: prior * mss,
                        bytes_in_flight: f.in_flight * mss,
                        cwnd_limited: true,
                        in_recovery: f.in_recovery,
                        delivered_total_bytes: f.delivered * mss,
                        rate: None,
                    };
                    f.cc.on_ack(&ack);
                    if f.in_recovery && seq + 1 >= f.recovery_point {
                        f.in_recovery = false;
                        f.cc.on_recovery_exit(at);
                    }
                    self.try_send(flow);
                    on_ack(self, flow);
                }
            }
        }
        self.now = until;
    }
}

/// Two flows of the same algorithm, same base RTT, the second starting `second_start` later:
/// bytes each delivered between `measure_from` and `until`.
pub fn two_flow_shares(
    build: impl Fn() -> Box<dyn CongestionControl>,
    capacity: Bandwidth,
    base_rtt: Duration,
    queue_limit_segments: usize,
    second_start: Time,
    measure_from: Time,
    until: Time,
) -> [u64; 2] {
    let mss = 1448;
    let mut path = SharedPath::new(capacity, queue_limit_segments, mss);
    path.add_flow(build(), base_rtt, Time::ZERO);
    path.add_flow(build(), base_rtt, second_start);
    path.run_until(measure_from, |_, _| {});
    let at_start = [path.flows[0].delivered, path.flows[1].delivered];
    path.run_until(until, |_, _| {});
    [(path.flows[0].delivered - at_start[0]) * mss, (path.flows[1].delivered - at_start[1]) * mss]
}

/// Jain's fairness index of the shares (1 = equal).
pub fn jain_index(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let s2: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    s * s / (x.len() as f64 * s2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::Reno;
    use crate::cc::CcConfig;

    #[test]
    fn unqueued_segment_sees_base_rtt_plus_serialization_and_link_saturates() {
        let mss = 1448;
        let mut path = SharedPath::new(Bandwidth::from_mbps(10), 1000, mss);
        path.add_flow(Box::new(Reno::new(&CcConfig::default())), Duration::from_millis(40), Time::ZERO);
        let mut first = None;
        path.run_until(Time::from_secs(3), |p, _| {
            first.get_or_insert(p.now);
        });
        let tx = Bandwidth::from_mbps(10).transmit_time(mss);
        assert_eq!(first.unwrap(), Time::ZERO + Duration::from_millis(40) + tx);
        // 3 s at 10 Mbit/s minus start-up: close to capacity.
        let delivered_mbit = (path.flows[0].delivered * mss * 8) as f64 / 1e6;
        assert!(delivered_mbit > 25.0 && delivered_mbit <= 30.0, "{delivered_mbit}");
    }

    #[test]
    fn drop_tail_overflow_triggers_one_congestion_event_per_episode() {
        let mss = 1448;
        let mut path = SharedPath::new(Bandwidth::from_mbps(10), 20, mss);
        path.add_flow(Box::new(Reno::new(&CcConfig::default())), Duration::from_millis(40), Time::ZERO);
        path.run_until(Time::from_secs(2), |_, _| {});
        let f = &path.flows[0];
        assert!(f.drops > 0);
        assert!(f.congestion_events >= 1 && f.congestion_events < f.drops.max(2), "{} events, {} drops", f.congestion_events, f.drops);
        assert!(path.queue_len() <= 20);
    }
}
