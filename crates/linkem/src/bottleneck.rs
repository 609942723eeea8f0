//! The bottleneck of one link direction: a drop-tail FIFO served at a rate or by a Mahimahi trace.
//!
//! Model (the same as the simulator's channel, crates/sim/src/network.rs, so a scenario's link
//! means the same thing in `simulate` and `emulate`):
//! * a packet is *waiting* from its arrival until its transmission starts; the limit counts
//!   waiting packets (Linux pfifo `limit`) or their bytes (bfifo: drop when backlog + len > limit),
//!   never the packet on the wire, and an idle link always admits (as tbf/pfifo do);
//! * at a constant rate a packet starts at max(arrival, end of the previous one) and leaves after
//!   its serialisation time `ip_len·8/rate` (store and forward);
//! * with a trace, a packet leaves at a delivery opportunity: each opportunity carries 1504 bytes,
//!   a packet costs its IP length + 4, a packet larger than what is left continues at the next
//!   opportunity, and an opportunity with nothing (yet) queued is lost — Mahimahi's
//!   `LinkQueue::use_a_delivery_opportunity` accounting (trace.rs). A packet that arrives exactly
//!   at an opportunity's time can use it;
//! * `Unlimited` serves every packet at once (delay and loss only).
//!
//! Pure state machine: times come in as arguments (no clock), so it is tested with synthetic
//! timestamps and the runtime (`forwarder.rs`) calls it with CLOCK_MONOTONIC.
//!
//! Deviation from Mahimahi: its queue limit is in packets or bytes of the *whole* queue including
//! the partly delivered head; here the head being delivered counts as on the wire, as in the
//! simulator, so a trace link and a rate link with the same limit hold the same backlog.

use std::collections::VecDeque;
use std::sync::Arc;

use tcpvideo_model::{Bandwidth, Time};
use tcpvideo_sim::network::QueueLimit;

use crate::trace::{MahimahiTrace, Opportunity, OPPORTUNITY_BYTES, PER_PACKET_OVERHEAD_BYTES};

/// How the queue is served.
#[derive(Clone, Debug, PartialEq)]
pub enum Service {
    /// No rate limit: a packet leaves when it arrives.
    Unlimited,
    /// Constant rate, store and forward.
    Rate(Bandwidth),
    /// Delivery opportunities of a Mahimahi trace, starting at the first packet's time or at the
    /// origin given to [`Bottleneck::new`].
    Trace(Arc<MahimahiTrace>),
}

struct Waiting<H> {
    handle: H,
    len: u32,
    arrived: Time,
}

/// Trace-serving state: the next opportunity and what is left of the head packet.
struct TraceCursor {
    origin: Time,
    next: Opportunity,
    /// Bytes of the head packet still to deliver (cost incl. overhead); None = head not started.
    head_left: Option<u64>,
}

/// Queue statistics, exact (integrated at every change, not sampled).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub admitted_packets: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub departed_packets: u64,
    pub departed_bytes: u64,
    pub max_packets: u64,
    pub max_bytes: u64,
    /// ∫ waiting packets dt (packet·ns) and ∫ waiting bytes dt (byte·ns), for time-weighted means.
    pub packet_ns: u128,
    pub byte_ns: u128,
}

/// A drop-tail FIFO and its server. `H` is the caller's handle of a packet (a buffer slot).
pub struct Bottleneck<H> {
    service: Service,
    limit: QueueLimit,
    waiting: VecDeque<Waiting<H>>,
    waiting_bytes: u64,
    /// Rate service: when the packet on the wire finishes (ns).
    busy_until: Time,
    cursor: Option<TraceCursor>,
    /// Time of the last change of the waiting set (for the integrals).
    last_change: Time,
    pub stats: QueueStats,
}

impl<H: Copy> Bottleneck<H> {
    /// `origin` is where a trace's time 0 lies (ignored for other services).
    pub fn new(service: Service, limit: QueueLimit, origin: Time) -> Self {
        let cursor = match &service {
            Service::Trace(t) => Some(TraceCursor {
                origin,
                next: t.next_at_or_after(origin, origin),
                head_left: None,
            }),
            _ => None,
        };
        Bottleneck {
            service,
            limit,
            waiting: VecDeque::with_capacity(1024),
            waiting_bytes: 0,
            busy_until: Time::ZERO,
            cursor,
            last_change: origin,
            stats: QueueStats::default(),
        }
    }

    /// Packets and bytes waiting (after the caller has called [`Bottleneck::serve`] up to now).
    pub fn backlog(&self) -> (u64, u64) {
        (self.waiting.len() as u64, self.waiting_bytes)
    }

    fn integrate(&mut self, now: Time) {
        if now > self.last_change {
            let dt = (now.0 - self.last_change.0) as u128;
            self.stats.packet_ns += self.waiting.len() as u128 * dt;
            self.stats.byte_ns += self.waiting_bytes as u128 * dt;
            self.last_change = now;
        }
    }

    /// Whether the server is busy at `now` (so a full queue drops); an idle link always admits.
    fn busy(&self, now: Time) -> bool {
        match &self.service {
            Service::Unlimited => false,
            Service::Rate(_) => self.busy_until > now || !self.waiting.is_empty(),
            Service::Trace(_) => !self.waiting.is_empty(),
        }
    }

    /// Offer a packet at `now` (after `serve(now)`): true if admitted, false if tail-dropped.
    pub fn offer(&mut self, now: Time, handle: H, len: u32) -> bool {
        self.integrate(now);
        let (qp, qb) = self.backlog();
        let full = match self.limit {
            QueueLimit::Packets(n) => qp >= n,
            QueueLimit::Bytes(b) => qb + len as u64 > b,
        };
        if full && self.busy(now) {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += len as u64;
            return false;
        }
        self.stats.admitted_packets += 1;
        self.waiting.push_back(Waiting {
            handle,
            len,
            arrived: now,
        });
        self.waiting_bytes += len as u64;
        self.stats.max_packets = self.stats.max_packets.max(self.waiting.len() as u64);
        self.stats.max_bytes = self.stats.max_bytes.max(self.waiting_bytes);
        true
    }

    /// The handle of the packet admitted last (to mark it, e.g. as lost on the wire).
    pub fn last_admitted_mut(&mut self) -> Option<&mut H> {
        self.waiting.back_mut().map(|w| &mut w.handle)
    }

    /// Move every packet whose transmission has started by `now` out of the queue, calling
    /// `depart(handle, len, leaves_at)` in FIFO order; `leaves_at` is when its last bit is sent.
    /// (`leaves_at` may be after `now` at a constant rate: the departure is decided at the start.)
    pub fn serve(&mut self, now: Time, mut depart: impl FnMut(H, u32, Time)) {
        match &self.service {
            Service::Unlimited => {
                while let Some(w) = self.waiting.front() {
                    let t = w.arrived;
                    if t > now {
                        break;
                    }
                    self.pop(t, &mut depart, t);
                }
            }
            Service::Rate(rate) => {
                let rate = *rate;
                while let Some(w) = self.waiting.front() {
                    let start = w.arrived.max(self.busy_until);
                    if start > now {
                        break;
                    }
                    let end = start + rate.transmit_time(w.len as u64);
                    self.busy_until = end;
                    self.pop(start, &mut depart, end);
                }
            }
            Service::Trace(_) => self.serve_trace(now, &mut depart),
        }
        self.integrate(now);
    }

    fn pop(&mut self, start: Time, depart: &mut impl FnMut(H, u32, Time), leaves_at: Time) {
        self.integrate(start);
        let w = self.waiting.pop_front().expect("head exists");
        self.waiting_bytes -= w.len as u64;
        self.stats.departed_packets += 1;
        self.stats.departed_bytes += w.len as u64;
        depart(w.handle, w.len, leaves_at);
    }

    fn serve_trace(&mut self, now: Time, depart: &mut impl FnMut(H, u32, Time)) {
        let Service::Trace(trace) = &self.service else {
            return;
        };
        let trace = Arc::clone(trace); // a reference count, no copy: the loop below needs &mut self
        while let Some(head) = self.waiting.front() {
            let head_arrived = head.arrived;
            let head_cost = head.len as u64 + PER_PACKET_OVERHEAD_BYTES;
            let cur = self.cursor.as_mut().expect("trace cursor");
            let mut at = trace.time_of(cur.origin, cur.next);
            if at < head_arrived {
                // opportunities before the head arrived went unused (nothing was queued)
                cur.next = trace.next_at_or_after(cur.origin, head_arrived);
                at = trace.time_of(cur.origin, cur.next);
            }
            if at > now {
                break;
            }
            // use one opportunity: deliver bytes from the head (and the packets behind it that
            // had arrived by then) until its 1504 bytes are spent
            let mut budget = OPPORTUNITY_BYTES;
            let mut left = cur.head_left.unwrap_or(head_cost);
            cur.next = trace.after(cur.next);
            loop {
                let used = budget.min(left);
                budget -= used;
                left -= used;
                if left > 0 {
                    self.cursor.as_mut().expect("trace cursor").head_left = Some(left);
                    break;
                }
                self.cursor.as_mut().expect("trace cursor").head_left = None;
                self.pop(at, depart, at);
                match self.waiting.front() {
                    Some(n) if budget > 0 && n.arrived <= at => {
                        left = n.len as u64 + PER_PACKET_OVERHEAD_BYTES
                    }
                    _ => break,
                }
            }
        }
    }

    /// When `serve` will next have something to do (None: nothing waiting).
    pub fn next_departure(&self) -> Option<Time> {
        let head = self.waiting.front()?;
        Some(match &self.service {
            Service::Unlimited => head.arrived,
            Service::Rate(_) => head.arrived.max(self.busy_until),
            Service::Trace(t) => {
                let cur = self.cursor.as_ref().expect("trace cursor");
                let at = t.time_of(cur.origin, cur.next);
                if at >= head.arrived {
                    at
                } else {
                    t.time_of(cur.origin, t.next_at_or_after(cur.origin, head.arrived))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn drain(b: &mut Bottleneck<u32>, now: Time) -> Vec<(u32, u64)> {
        let mut out = vec![];
        b.serve(now, |h, _, t| out.push((h, t.0)));
        out
    }

    #[test]
    fn a_constant_rate_serialises_back_to_back_packets() {
        // 1500 bytes at 12 Mbit/s = 1 ms each
        let mut b = Bottleneck::new(
            Service::Rate(Bandwidth::from_mbps(12)),
            QueueLimit::Packets(10),
            Time::ZERO,
        );
        for h in 0..3 {
            assert!(b.offer(Time::ZERO, h, 1500));
        }
        let out = drain(&mut b, Time::from_millis(5));
        assert_eq!(out, vec![(0, 1_000_000), (1, 2_000_000), (2, 3_000_000)]);
    }

    #[test]
    fn the_packet_limit_counts_waiting_packets_not_the_one_on_the_wire() {
        let mut b = Bottleneck::new(
            Service::Rate(Bandwidth::from_mbps(12)),
            QueueLimit::Packets(2),
            Time::ZERO,
        );
        let mut admitted = vec![];
        for h in 0..5 {
            b.serve(Time::ZERO, |_, _, _| {});
            admitted.push(b.offer(Time::ZERO, h, 1500));
        }
        // packet 0 goes on the wire at once, 1 and 2 wait, 3 and 4 are dropped
        assert_eq!(admitted, vec![true, true, true, false, false]);
        assert_eq!(b.stats.dropped_packets, 2);
    }

    #[test]
    fn the_byte_limit_drops_when_backlog_plus_packet_exceeds_it() {
        let mut b = Bottleneck::new(
            Service::Rate(Bandwidth::from_mbps(1)),
            QueueLimit::Bytes(2500),
            Time::ZERO,
        );
        let mut admitted = vec![];
        for h in 0..4 {
            b.serve(Time::ZERO, |_, _, _| {});
            admitted.push(b.offer(Time::ZERO, h, 1000));
        }
        // 0 on the wire; 1, 2 wait (2000 bytes); 3 would make 3000 > 2500
        assert_eq!(admitted, vec![true, true, true, false]);
    }

    #[test]
    fn the_mean_queue_is_time_weighted() {
        // two packets wait 1 ms and 2 ms behind the first: ∫ = 3 packet·ms
        let mut b = Bottleneck::new(
            Service::Rate(Bandwidth::from_mbps(12)),
            QueueLimit::Packets(10),
            Time::ZERO,
        );
        for h in 0..3 {
            b.serve(Time::ZERO, |_, _, _| {});
            b.offer(Time::ZERO, h, 1500);
        }
        drain(&mut b, Time::from_millis(10));
        assert_eq!(b.stats.packet_ns, 3_000_000);
        assert_eq!(
            b.stats.max_packets, 2,
            "the packet on the wire is not waiting"
        );
    }

    #[test]
    fn a_trace_delivers_one_full_packet_per_opportunity() {
        let t = MahimahiTrace::parse("1\n2\n3\n4\n").unwrap();
        let mut b = Bottleneck::new(
            Service::Trace(Arc::new(t)),
            QueueLimit::Packets(100),
            Time::ZERO,
        );
        for h in 0..3 {
            b.offer(Time::ZERO, h, 1500);
        }
        assert_eq!(
            drain(&mut b, Time::from_millis(10)),
            vec![(0, 1_000_000), (1, 2_000_000), (2, 3_000_000)]
        );
    }

    #[test]
    fn a_trace_opportunity_carries_several_small_packets_and_splits_a_large_one() {
        let t = MahimahiTrace::parse("1\n2\n").unwrap();
        let mut b = Bottleneck::new(
            Service::Trace(Arc::new(t)),
            QueueLimit::Packets(100),
            Time::ZERO,
        );
        // 3 × (496 + 4) = 1500 ≤ 1504 bytes: all three in the first opportunity; then a 1000-byte
        // packet needs 1004, only 4 are left there, so it finishes at the second opportunity
        for h in 0..3 {
            b.offer(Time::ZERO, h, 496);
        }
        b.offer(Time::ZERO, 3, 1000);
        let out = drain(&mut b, Time::from_millis(10));
        assert_eq!(
            out,
            vec![
                (0, 1_000_000),
                (1, 1_000_000),
                (2, 1_000_000),
                (3, 2_000_000)
            ]
        );
    }

    #[test]
    fn trace_opportunities_with_an_empty_queue_are_lost() {
        let t = MahimahiTrace::parse("1\n2\n3\n10\n").unwrap();
        let mut b = Bottleneck::new(
            Service::Trace(Arc::new(t)),
            QueueLimit::Packets(100),
            Time::ZERO,
        );
        // arrives at 2.5 ms: the opportunities at 1 and 2 ms are gone, it leaves at 3 ms
        b.serve(Time::from_micros(2500), |_, _, _| {});
        b.offer(Time::from_micros(2500), 7, 1500);
        assert_eq!(b.next_departure(), Some(Time::from_millis(3)));
        assert_eq!(drain(&mut b, Time::from_millis(20)), vec![(7, 3_000_000)]);
        // the next one, at 12.5 ms (period 10), leaves at 13 ms
        b.offer(Time::from_micros(12_500), 8, 1500);
        assert_eq!(drain(&mut b, Time::from_millis(20)), vec![(8, 13_000_000)]);
    }

    #[test]
    fn unlimited_service_forwards_at_arrival() {
        let mut b = Bottleneck::new(Service::Unlimited, QueueLimit::Packets(1), Time::ZERO);
        for h in 0..5 {
            assert!(b.offer(Time::from_micros(10), h, 1500));
        }
        assert_eq!(drain(&mut b, Time::from_micros(10)).len(), 5);
    }
}
