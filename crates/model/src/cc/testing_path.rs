//! A deterministic drop-tail bottleneck for congestion-control unit tests (test-only).
//!
//! Why: BBR, Compound, Vegas and the CCP family react to RTT, queueing and delivery rate, and the
//! fairness tests need several flows competing for one queue; a synthetic ACK clock
//! (`testing::one_round`) produces none of that. This one module serves every such test: one flow
//! or many, with delivery-rate samples, pacing, scripted loss and an RTO. (It replaces the former
//! `fluid_path.rs`, single flow with rate samples, and the multi-flow `SharedPath`.)
//!
//! Model. Every flow has an infinite backlog, its own two-way propagation delay `P` and start
//! time. A segment sent at `t` reaches the bottleneck at `t + P/2`; the bottleneck is a FIFO
//! served at capacity C (one segment every `MSS·8/C`), holding at most `queue_limit` segments (the
//! one in service included) and dropping arrivals beyond that (drop-tail). A served segment's ACK
//! reaches its sender `P − P/2` after it leaves, so an unqueued segment sees `P + MSS·8/C`. One ACK
//! per segment (no delayed ACK), no reordering, no ACK loss. Everything is an event with an
//! integer-nanosecond timestamp, ties broken by insertion order: runs are exactly reproducible.
//!
//! What a flow's congestion control gets is what the real endpoint (crates/sim tcp) hands it: RTT
//! samples (none for retransmissions, Karn), an RFC 6298 srtt, bytes in flight, and a delivery-rate
//! sample per ACK as draft-cheng-iccrg-delivery-rate-estimation §3 computes it (per-segment
//! `delivered`, `delivered_time`, `first_sent_time`; interval = max(send elapsed, ACK elapsed)).
//! Pacing follows the rate the CC asks for (EDT style: the next segment may leave `MSS/rate` after
//! the previous one).
//!
//! Loss: a segment whose transmission number is listed in the flow's scripted drops (random
//! loss), or that arrives to a full queue, is lost. A loss is detected when a segment of the same
//! flow sent three transmissions later is ACKed (SACK dupthresh 3), reported in
//! `RateSample::newly_lost_bytes`, triggers `on_congestion_event(FastRetransmit)` once per episode
//! and a retransmission; the episode ends (`on_recovery_exit`) when a segment sent after it began
//! is ACKed and nothing waits for retransmission. During recovery a CC that does not own recovery
//! is held at min(cwnd, ssthresh): a crude stand-in for PRR, enough for window dynamics. When a
//! flow has nothing in the network and may send nothing (its tail was lost), an RTO fires after
//! max(2·srtt, 200 ms): every undetected loss is retransmitted and `on_congestion_event(Timeout)`
//! is called. No backoff, no spurious-RTO undo.
//!
//! Two faces: [`SharedPath`] owns boxed congestion controls of several flows (fairness tests);
//! [`DropTailPath`] drives one borrowed, concretely typed congestion control, so a test can inspect
//! the algorithm's internals after every ACK. Both are the same [`Bottleneck`] engine.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::DerefMut;
use std::time::Duration;

use super::{AckEvent, CongestionControl, CongestionSignal, RateSample};
use crate::units::{Bandwidth, Time};

/// One transmission on its way (carried by the Arrive and Ack events).
#[derive(Clone, Copy, Debug)]
struct Seg {
    tx_no: u64,
    sent_at: Time,
    retransmission: bool,
    /// Flow's delivered bytes, delivered time and first-sent time when this segment was sent.
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Start {
        flow: usize,
    },
    Arrive {
        flow: usize,
        seg: Seg,
    },
    Ack {
        flow: usize,
        seg: Seg,
    },
    /// The pacer allows the next segment.
    Send {
        flow: usize,
    },
    Rto {
        flow: usize,
        gen: u64,
    },
}

struct Scheduled {
    at: Time,
    order: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.order) == (o.at, o.order)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    /// Reversed: the binary heap pops the earliest event, first scheduled first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.order).cmp(&(self.at, self.order))
    }
}

/// A sender on the path: its congestion control (`H` is a box, a borrow, or `()` while a
/// [`DropTailPath`] is at rest) and the sender-side state the path keeps for it.
pub struct PathFlow<H> {
    pub cc: H,
    pub sender: SenderState,
}

/// What the path keeps for one sender besides its congestion control. Counters are in segments.
pub struct SenderState {
    /// Two-way propagation delay; an unqueued segment's RTT is this plus one serialization time.
    pub propagation_rtt: Duration,
    /// Transmission numbers (0-based, counting retransmissions) the path drops (random loss).
    pub drop_tx: Vec<u64>,
    /// Transmissions so far (the next transmission number).
    pub sent: u64,
    /// Segments ACKed.
    pub delivered: u64,
    /// Segments in flight (RFC 6675 pipe: sent, not ACKed, not detected lost).
    pub in_flight: u64,
    /// Segments dropped at the bottleneck (queue overflow or scripted).
    pub drops: u64,
    /// Losses the sender detected (by dupthresh or RTO).
    pub losses: u64,
    pub congestion_events: u64,
    pub rtos: u64,
    pub in_recovery: bool,
    /// RTT of the segment ACKed last.
    pub last_rtt: Duration,
    recovery_end_tx: u64,
    undetected: VecDeque<u64>,
    retransmit_pending: u64,
    /// Segments with an Arrive or Ack event pending.
    in_network: u64,
    delivered_time: Time,
    first_sent_time: Time,
    srtt: Option<Duration>,
    min_rtt: Duration,
    next_send: Time,
    send_armed: bool,
    rto_gen: u64,
    rto_armed: bool,
    started: bool,
}

impl<H> PathFlow<H> {
    fn map_cc<H2>(self, f: impl FnOnce(H) -> H2) -> PathFlow<H2> {
        PathFlow { cc: f(self.cc), sender: self.sender }
    }
}

/// The engine: one drop-tail FIFO bottleneck and the flows through it.
pub struct Bottleneck<H> {
    pub now: Time,
    pub mss: u64,
    capacity: Bandwidth,
    tx_time: Duration,
    queue_limit: u64,
    /// When the bottleneck finishes the last segment it holds.
    link_free: Time,
    pub flows: Vec<PathFlow<H>>,
    events: BinaryHeap<Scheduled>,
    order: u64,
}

/// Several flows with boxed congestion controls on one bottleneck.
pub type SharedPath = Bottleneck<Box<dyn CongestionControl>>;

impl<H> Bottleneck<H> {
    pub fn new(capacity: Bandwidth, queue_limit_segments: usize, mss: u64) -> Bottleneck<H> {
        Bottleneck {
            now: Time::ZERO,
            mss,
            capacity,
            tx_time: capacity.transmit_time(mss),
            queue_limit: queue_limit_segments.max(1) as u64,
            link_free: Time::ZERO,
            flows: Vec::new(),
            events: BinaryHeap::new(),
            order: 0,
        }
    }

    /// Add a flow with two-way propagation delay `propagation_rtt` that starts sending at `start`;
    /// returns its index. (An unqueued segment sees `propagation_rtt` + one serialization time.)
    pub fn add_flow(&mut self, cc: H, propagation_rtt: Duration, start: Time) -> usize {
        let flow = self.flows.len();
        self.flows.push(PathFlow {
            cc,
            sender: SenderState {
                propagation_rtt,
                drop_tx: Vec::new(),
                sent: 0,
                delivered: 0,
                in_flight: 0,
                drops: 0,
                losses: 0,
                congestion_events: 0,
                rtos: 0,
                in_recovery: false,
                last_rtt: Duration::ZERO,
                recovery_end_tx: 0,
                undetected: VecDeque::new(),
                retransmit_pending: 0,
                in_network: 0,
                delivered_time: Time::ZERO,
                first_sent_time: Time::ZERO,
                srtt: None,
                min_rtt: Duration::MAX,
                next_send: Time::ZERO,
                send_armed: false,
                rto_gen: 0,
                rto_armed: false,
                started: false,
            },
        });
        self.schedule(start, Ev::Start { flow });
        flow
    }

    /// Segments in the bottleneck (queued plus in service) right now.
    pub fn queue_len(&self) -> usize {
        let backlog = self.link_free.saturating_since(self.now).as_nanos();
        backlog.div_ceil(self.tx_time.as_nanos().max(1)) as usize
    }

    /// Queue backlog in bytes at `now`, as a fluid (the segment in service counts partly).
    pub fn queue_bytes(&self) -> u64 {
        self.capacity.bytes_in(self.link_free.saturating_since(self.now))
    }

    fn schedule(&mut self, at: Time, ev: Ev) {
        self.order += 1;
        self.events.push(Scheduled { at, order: self.order, ev });
    }

    /// The same path with every flow's congestion-control handle replaced.
    fn map_cc<H2>(self, mut f: impl FnMut(H) -> H2) -> Bottleneck<H2> {
        Bottleneck {
            now: self.now,
            mss: self.mss,
            capacity: self.capacity,
            tx_time: self.tx_time,
            queue_limit: self.queue_limit,
            link_free: self.link_free,
            flows: self.flows.into_iter().map(|fl| fl.map_cc(&mut f)).collect(),
            events: self.events,
            order: self.order,
        }
    }
}

impl<H, T> Bottleneck<H>
where
    H: DerefMut<Target = T>,
    T: CongestionControl + ?Sized,
{
    /// Process events until `until`, calling `on_ack(path, flow)` after every ACK has been
    /// processed (congestion control updated, recovery possibly ended), before the flow sends
    /// what the ACK allows.
    pub fn run_until(&mut self, until: Time, mut on_ack: impl FnMut(&Self, usize)) {
        while let Some(next) = self.events.peek() {
            if next.at > until {
                break;
            }
            let Scheduled { at, ev, .. } = self.events.pop().unwrap();
            self.now = at;
            match ev {
                Ev::Start { flow } => {
                    self.flows[flow].sender.started = true;
                    self.try_send(flow);
                }
                Ev::Arrive { flow, seg } => self.arrive(flow, seg),
                Ev::Ack { flow, seg } => {
                    self.ack(flow, seg);
                    on_ack(self, flow);
                    self.try_send(flow);
                }
                Ev::Send { flow } => {
                    self.flows[flow].sender.send_armed = false;
                    self.try_send(flow);
                }
                Ev::Rto { flow, gen } => {
                    let f = &self.flows[flow];
                    if f.sender.rto_armed && f.sender.rto_gen == gen {
                        self.rto(flow);
                        self.try_send(flow);
                    }
                }
            }
            self.check_stalled_flows_for_rto(&ev);
        }
        self.now = until;
    }

    /// The window a flow may fill now.
    fn window(&self, flow: usize) -> u64 {
        let f = &self.flows[flow];
        if f.sender.in_recovery && !f.cc.owns_recovery() {
            f.cc.cwnd().min(f.cc.ssthresh())
        } else {
            f.cc.cwnd()
        }
    }

    fn can_send(&self, flow: usize) -> bool {
        (self.flows[flow].sender.in_flight + 1) * self.mss <= self.window(flow)
    }

    /// Send what the window and the pacer allow now; arm the pacer for the next segment.
    fn try_send(&mut self, flow: usize) {
        if !self.flows[flow].sender.started {
            return;
        }
        while self.can_send(flow) {
            let next_send = self.flows[flow].sender.next_send;
            if next_send > self.now {
                if !self.flows[flow].sender.send_armed {
                    self.flows[flow].sender.send_armed = true;
                    self.schedule(next_send, Ev::Send { flow });
                }
                return;
            }
            self.send_one(flow);
        }
    }

    fn send_one(&mut self, flow: usize) {
        let (now, mss) = (self.now, self.mss);
        let f = &mut self.flows[flow];
        let retransmission = f.sender.retransmit_pending > 0;
        if retransmission {
            f.sender.retransmit_pending -= 1;
        }
        if f.sender.in_flight == 0 {
            f.sender.first_sent_time = now;
            f.sender.delivered_time = now;
        }
        let tx_no = f.sender.sent;
        f.sender.sent += 1;
        f.sender.in_flight += 1;
        f.sender.in_network += 1;
        f.cc.on_packet_sent(now, mss, f.sender.in_flight * mss, false);
        if let Some(rate) = f.cc.pacing_rate() {
            f.sender.next_send = now + rate.transmit_time(mss);
        }
        let seg = Seg {
            tx_no,
            sent_at: now,
            retransmission,
            delivered: f.sender.delivered * mss,
            delivered_time: f.sender.delivered_time,
            first_sent_time: f.sender.first_sent_time,
        };
        let arrive = now + f.sender.propagation_rtt / 2;
        self.schedule(arrive, Ev::Arrive { flow, seg });
    }

    /// A segment reaches the bottleneck: dropped (scripted or queue full) or queued.
    fn arrive(&mut self, flow: usize, seg: Seg) {
        let full = self.queue_len() as u64 >= self.queue_limit;
        let f = &mut self.flows[flow];
        if full || f.sender.drop_tx.contains(&seg.tx_no) {
            f.sender.drops += 1;
            f.sender.in_network -= 1;
            // Arrivals of one flow keep their sending order, so this stays sorted.
            f.sender.undetected.push_back(seg.tx_no);
            return;
        }
        let back = f.sender.propagation_rtt - f.sender.propagation_rtt / 2;
        let depart = self.link_free.max(self.now) + self.tx_time;
        self.link_free = depart;
        self.schedule(depart + back, Ev::Ack { flow, seg });
    }

    /// An ACK for `seg`: RTT and rate sample, loss detection, the congestion control's callbacks.
    fn ack(&mut self, flow: usize, seg: Seg) {
        let (now, mss) = (self.now, self.mss);
        let f = &mut self.flows[flow];
        f.sender.in_network -= 1;
        f.sender.rto_armed = false;
        let prior_in_flight = f.sender.in_flight * mss;
        f.sender.in_flight -= 1;
        f.sender.delivered += 1;
        f.sender.delivered_time = now;
        let rtt = now - seg.sent_at;
        f.sender.last_rtt = rtt;
        let rtt_sample = if seg.retransmission { None } else { Some(rtt) };
        if let Some(r) = rtt_sample {
            f.sender.min_rtt = f.sender.min_rtt.min(r);
            f.sender.srtt = Some(match f.sender.srtt {
                None => r,
                Some(s) => (s * 7 + r) / 8,
            });
        }
        // Delivery-rate sample (one segment per ACK, so this segment is the newest delivered).
        f.sender.first_sent_time = seg.sent_at;
        let send_elapsed = seg.sent_at.saturating_since(seg.first_sent_time);
        let ack_elapsed = now.saturating_since(seg.delivered_time);
        let mut newly_lost = 0;
        while f.sender.undetected.front().is_some_and(|&lost| seg.tx_no >= lost + 3) {
            f.sender.undetected.pop_front();
            newly_lost += 1;
        }
        if newly_lost > 0 {
            f.sender.in_flight -= newly_lost;
            f.sender.losses += newly_lost;
            f.sender.retransmit_pending += newly_lost;
            if !f.sender.in_recovery {
                f.sender.in_recovery = true;
                f.sender.recovery_end_tx = f.sender.sent;
                f.sender.congestion_events += 1;
                f.cc.on_congestion_event(now, CongestionSignal::FastRetransmit, f.sender.in_flight * mss);
            }
        }
        let delivered_bytes = f.sender.delivered * mss;
        let ack = AckEvent {
            now,
            acked_bytes: mss,
            rtt_sample,
            srtt: f.sender.srtt.unwrap_or(rtt),
            min_rtt: f.sender.min_rtt,
            prior_in_flight_bytes: prior_in_flight,
            bytes_in_flight: f.sender.in_flight * mss,
            cwnd_limited: true,
            in_recovery: f.sender.in_recovery,
            delivered_total_bytes: delivered_bytes,
            rate: Some(RateSample {
                delivered_bytes: delivered_bytes - seg.delivered,
                interval: send_elapsed.max(ack_elapsed),
                prior_delivered_bytes: seg.delivered,
                is_app_limited: false,
                newly_lost_bytes: newly_lost * mss,
            }),
        };
        f.cc.on_ack(&ack);
        if f.sender.in_recovery && seg.tx_no >= f.sender.recovery_end_tx && f.sender.retransmit_pending == 0 {
            f.sender.in_recovery = false;
            f.cc.on_recovery_exit(now);
        }
    }

    /// Retransmission timeout (RFC 6298 with Linux's 200 ms floor, no backoff): every undetected
    /// loss is marked lost and queued for retransmission.
    fn rto(&mut self, flow: usize) {
        let (now, mss) = (self.now, self.mss);
        let f = &mut self.flows[flow];
        f.sender.rto_armed = false;
        let lost = f.sender.undetected.len() as u64;
        f.sender.undetected.clear();
        f.sender.in_flight -= lost;
        f.sender.losses += lost;
        f.sender.retransmit_pending += lost;
        f.sender.rtos += 1;
        f.sender.in_recovery = true;
        f.sender.recovery_end_tx = f.sender.sent;
        f.cc.on_congestion_event(now, CongestionSignal::Timeout, f.sender.in_flight * mss);
    }

    /// After an event of a flow: if it has nothing in the network and may send nothing (the tail
    /// was lost), arm its RTO.
    fn check_stalled_flows_for_rto(&mut self, ev: &Ev) {
        let flow = match *ev {
            Ev::Start { flow } | Ev::Arrive { flow, .. } | Ev::Ack { flow, .. } | Ev::Send { flow } | Ev::Rto { flow, .. } => flow,
        };
        let stalled = {
            let f = &self.flows[flow];
            f.sender.started && f.sender.in_network == 0 && !f.sender.rto_armed && !f.sender.send_armed
        };
        if !stalled || self.can_send(flow) {
            return;
        }
        assert!(!self.flows[flow].sender.undetected.is_empty(), "flow {flow} stalled at {} with nothing lost", self.now);
        let f = &mut self.flows[flow];
        let rto = f.sender.srtt.map_or(Duration::from_secs(1), |s| (s * 2).max(Duration::from_millis(200)));
        f.sender.rto_gen += 1;
        f.sender.rto_armed = true;
        let (at, gen) = (self.now + rto, f.sender.rto_gen);
        self.schedule(at, Ev::Rto { flow, gen });
    }
}

/// Two flows of the same algorithm, same propagation RTT, the second starting `second_start`
/// later: bytes each delivered between `measure_from` and `until`.
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
    let at_start = [path.flows[0].sender.delivered, path.flows[1].sender.delivered];
    path.run_until(until, |_, _| {});
    [(path.flows[0].sender.delivered - at_start[0]) * mss, (path.flows[1].sender.delivered - at_start[1]) * mss]
}

/// Jain's fairness index of the shares (1 = equal).
pub fn jain_index(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let s2: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    s * s / (x.len() as f64 * s2)
}

// ------------------------------------------------------------------ one flow, borrowed CC

/// A single-flow path, described by the RTT an unqueued segment sees.
#[derive(Clone, Debug)]
pub struct PathConfig {
    pub capacity: Bandwidth,
    /// RTT of an unqueued segment (propagation plus one serialization time).
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

/// What a [`DropTailPath`] test sees after every ACK.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub now: Time,
    pub cwnd: u64,
    pub pacing: Option<Bandwidth>,
    /// Queue backlog in bytes (fluid).
    pub queue_bytes: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// Bytes delivered so far.
    pub delivered: u64,
    pub label: &'static str,
    /// RTT of the segment just ACKed.
    pub rtt: Duration,
}

/// One flow on a [`Bottleneck`], its congestion control lent for each [`DropTailPath::run`] so the
/// test keeps the concrete type. Counters mirror the flow's after every run.
pub struct DropTailPath {
    pub now: Time,
    /// Bytes delivered (ACKed) so far.
    pub delivered: u64,
    pub losses: u64,
    pub congestion_events: u64,
    pub rtos: u64,
    path: Option<Bottleneck<()>>,
}

impl DropTailPath {
    pub fn new(cfg: PathConfig) -> DropTailPath {
        let mut path = Bottleneck::new(cfg.capacity, cfg.queue_limit_segments as usize, cfg.mss);
        let propagation = cfg.base_rtt.saturating_sub(cfg.capacity.transmit_time(cfg.mss));
        path.add_flow((), propagation, Time::ZERO);
        path.flows[0].sender.drop_tx = cfg.drop_segments.clone();
        DropTailPath { now: Time::ZERO, delivered: 0, losses: 0, congestion_events: 0, rtos: 0, path: Some(path) }
    }

    /// Bytes delivered (ACKed) so far.
    pub fn delivered_total(&self) -> u64 {
        self.delivered
    }

    /// Run the flow until `until`, calling `observe` after every ACK.
    pub fn run<C: CongestionControl + ?Sized>(&mut self, cc: &mut C, until: Time, mut observe: impl FnMut(&Snapshot, &C)) {
        let mut lent = Some(cc);
        let mut path = self.path.take().expect("path at rest").map_cc(|()| lent.take().expect("one flow"));
        path.run_until(until, |p, _| {
            let f = &p.flows[0];
            let cc: &C = &*f.cc;
            let snap = Snapshot {
                now: p.now,
                cwnd: cc.cwnd(),
                pacing: cc.pacing_rate(),
                queue_bytes: p.queue_bytes(),
                in_flight: f.sender.in_flight * p.mss,
                delivered: f.sender.delivered * p.mss,
                label: cc.state_label(),
                rtt: f.sender.last_rtt,
            };
            observe(&snap, cc);
        });
        let f = &path.flows[0].sender;
        self.now = path.now;
        self.delivered = f.delivered * path.mss;
        self.losses = f.losses;
        self.congestion_events = f.congestion_events;
        self.rtos = f.rtos;
        self.path = Some(path.map_cc(|_| ()));
    }
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
        let delivered_mbit = (path.flows[0].sender.delivered * mss * 8) as f64 / 1e6;
        assert!(delivered_mbit > 25.0 && delivered_mbit <= 30.0, "{delivered_mbit}");
    }

    #[test]
    fn drop_tail_overflow_triggers_one_congestion_event_per_episode() {
        let mss = 1448;
        let mut path = SharedPath::new(Bandwidth::from_mbps(10), 20, mss);
        path.add_flow(Box::new(Reno::new(&CcConfig::default())), Duration::from_millis(40), Time::ZERO);
        path.run_until(Time::from_secs(2), |_, _| {});
        let f = &path.flows[0].sender;
        assert!(f.drops > 0);
        assert!(f.congestion_events >= 1 && f.congestion_events < f.drops.max(2), "{} events, {} drops", f.congestion_events, f.drops);
        assert!(path.queue_len() <= 20);
    }

    #[test]
    fn unqueued_segment_sees_the_base_rtt_and_a_saturated_link_delivers_its_capacity() {
        let mut path = DropTailPath::new(PathConfig::new(10, 20, 10_000));
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
        let mut path = DropTailPath::new(cfg);
        let mut cc = Reno::new(&CcConfig::default());
        path.run(&mut cc, Time::from_millis(500), |_, _| {});
        assert_eq!(path.losses, 1);
        assert_eq!(path.congestion_events, 1);
        assert!(cc.ssthresh() < u64::MAX, "Reno must have reacted");
    }

    #[test]
    fn lost_window_is_recovered_by_the_retransmission_timeout() {
        // The whole initial window is dropped: no later segment is ever ACKed, so only the RTO
        // (1 s before any RTT sample, RFC 6298 §2.1) finds the losses.
        let mut cfg = PathConfig::new(10, 20, 10_000);
        cfg.drop_segments = (0..10).collect();
        let mut path = DropTailPath::new(cfg);
        let mut cc = Reno::new(&CcConfig::default());
        path.run(&mut cc, Time::from_millis(990), |_, _| {});
        assert_eq!((path.rtos, path.losses, path.delivered), (0, 0, 0), "stalled until the RTO");
        path.run(&mut cc, Time::from_millis(1100), |_, _| {});
        assert_eq!((path.rtos, path.losses), (1, 10));
        assert_eq!(cc.ssthresh(), 5 * 1448, "Timeout halves the 10-segment window");
        assert!(path.delivered >= 3 * 1448, "retransmissions delivered: {}", path.delivered);
    }

    #[test]
    fn flows_with_different_rtts_queue_in_arrival_order() {
        // Flow 1 (50 ms) sends IW10 at 0, its burst reaches the bottleneck at 25 ms; flow 0
        // (10 ms) sends at 18 ms, its burst arrives at 23 ms and is served first.
        let mss = 1448;
        let mut path = SharedPath::new(Bandwidth::from_mbps(10), 1000, mss);
        path.add_flow(Box::new(Reno::new(&CcConfig::default())), Duration::from_millis(10), Time::from_millis(18));
        path.add_flow(Box::new(Reno::new(&CcConfig::default())), Duration::from_millis(50), Time::ZERO);
        let mut first_ack = [None, None];
        path.run_until(Time::from_millis(100), |p, i| {
            first_ack[i].get_or_insert(p.now);
        });
        let tx = Bandwidth::from_mbps(10).transmit_time(mss);
        assert_eq!(first_ack[0].unwrap(), Time::from_millis(28) + tx);
        // Flow 1's first segment waits for flow 0's ten: served from 23 ms + 10·tx.
        assert_eq!(first_ack[1].unwrap(), Time::from_millis(48) + tx * 11);
    }
}
