//! The discrete-event core: an integer-nanosecond clock, an event queue (a timing wheel,
//! [`crate::event_queue`]) and a packet pool.
//!
//! Events are ordered by `(time, sequence number)`: the sequence number grows with every push (the
//! time of scheduling, then a count; see [`EventQueue`]), so two events at the same nanosecond run
//! in the order they were scheduled and a run is exactly reproducible (the classic ns-3 / OMNeT++ tie-break). An event is a small `Copy` value
//! (12 bytes; 32 with its time and sequence number in the queue) that refers to packets by index
//! into a [`PacketPool`], so pushing an event never allocates once the queue's buckets and the pool
//! have grown to the run's high-water mark (STYLE.md rule 6, htsim's recycled packets).
//!
//! Randomness: every consumer of randomness gets its own PCG stream derived from the run's seed and
//! a fixed stream number ([`sub_rng`]), so adding a draw in one place never shifts the draws of
//! another (e.g. the loss pattern of a link does not change when a flow is added).

use rand::SeedableRng;
use rand_pcg::Pcg64;
use tcpvideo_model::Time;

use crate::event_queue::WheelQueue;
use crate::packet::Packet;

/// What happens at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A packet (pool index) finished arriving over channel `chan` (last bit received).
    Arrive { chan: u32, pkt: u32 },
    /// A TCP endpoint's timer; `gen` tells stale timers apart.
    Timer { ep: u32, gen: u32 },
    /// An application wake-up (`kind` is app-defined).
    App { app: u32, kind: u32 },
    /// Take one sample of every time series.
    Sample,
}

/// The event queue and the clock.
///
/// The sequence number that orders equal times is `(time of scheduling, count within that time)`
/// packed into a `u64` (time in the high bits, [`SEQ_COUNT_BITS`] of count): for events scheduled
/// as the clock advances this is exactly the order of a plain push counter (the clock never goes
/// back), and it lets [`push_after_hop`](EventQueue::push_after_hop) give an event that is
/// scheduled early (a packet forwarded straight through a router, `network.rs` cut-through) the
/// place it would have had if it had been scheduled at the router, when the packet got there.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: WheelQueue<Event>,
    /// Time of scheduling the current count belongs to, and the count.
    seq_time: u64,
    seq_count: u64,
    now: Time,
    /// Events popped so far (for events/s reports).
    pub processed: u64,
}

/// Bits of the sequence number that count events scheduled at the same nanosecond.
pub const SEQ_COUNT_BITS: u32 = 20;
/// Times of scheduling below this keep `(time, count)` sequence numbers (2^43 ns ≈ 2.4 h); later
/// ones fall back to a plain counter above every earlier number, so order stays exact, and
/// [`EventQueue::push_after_hop`] is not used past it (`Network::enable_cut_through` checks).
pub const SEQ_TIME_LIMIT_NS: u64 = 1 << 43;
const SEQ_LATE_HOP: u64 = (1 << SEQ_COUNT_BITS) - 1;

impl EventQueue {
    pub fn new() -> Self {
        EventQueue::default()
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at `at`. Scheduling in the past is a bug; it is clamped to now.
    #[inline]
    pub fn push(&mut self, at: Time, ev: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.0.max(self.now.0);
        let seq = self.next_seq();
        self.heap.push(at, seq, ev);
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        let t = self.now.0;
        if t >= SEQ_TIME_LIMIT_NS {
            // Past the packed range: a plain counter above every packed number.
            self.seq_count += 1;
            return (SEQ_TIME_LIMIT_NS << SEQ_COUNT_BITS) + self.seq_count;
        }
        if t != self.seq_time {
            self.seq_time = t;
            self.seq_count = 0;
        }
        // More than 2^20 − 1 events scheduled in one nanosecond share the last number (their
        // order among themselves is still deterministic: the queue keeps insertion order).
        let c = self.seq_count.min(SEQ_LATE_HOP - 1);
        self.seq_count += 1;
        (t << SEQ_COUNT_BITS) | c
    }

    /// Schedule `ev` at `at` now, ordered among equal times as if it had been scheduled at the
    /// later time `hop` (after everything else scheduled at `hop`): a packet forwarded straight
    /// through a router whose arrival there would have scheduled it. `hop` must be below
    /// [`SEQ_TIME_LIMIT_NS`] and not before now, and `at` after `hop`.
    #[inline]
    pub fn push_after_hop(&mut self, at: Time, hop: Time, ev: Event) {
        debug_assert!(hop >= self.now && at > hop && hop.0 < SEQ_TIME_LIMIT_NS, "push_after_hop: bad times");
        self.heap.push(at.0, (hop.0 << SEQ_COUNT_BITS) | SEQ_LATE_HOP, ev);
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek_time().map(Time)
    }

    /// Pop the next event if it is not later than `until`, advancing the clock to it.
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Event)> {
        let e = self.heap.pop_until(until.0)?;
        self.now = Time(e.at);
        self.processed += 1;
        Some((self.now, e.item))
    }

    /// Advance the clock to `t` without an event (end of a chunk of simulated time).
    pub fn advance_to(&mut self, t: Time) {
        if t > self.now {
            self.now = t;
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Packets in flight live here; events and queues hold `u32` indices. Freed slots are reused.
///
/// Beside each packet (~112 bytes) the pool keeps what every hop reads — destination and IP
/// length — in a dense array of its own: a router hop then touches 8 bytes instead of the
/// packet's cache lines, which are cold by the time the packet reaches the router (that load was
/// a third of `Network::arrive`'s time).
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    route: Vec<RouteInfo>,
    free: Vec<u32>,
}

/// What forwarding needs of a pooled packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteInfo {
    pub dst_node: u32,
    pub ip_len: u32,
}

impl PacketPool {
    pub fn insert(&mut self, p: Packet) -> u32 {
        let info = RouteInfo { dst_node: p.dst_node, ip_len: p.ip_len() };
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            self.route[i as usize] = info;
            i
        } else {
            self.slots.push(p);
            self.route.push(info);
            (self.slots.len() - 1) as u32
        }
    }

    /// Destination and IP length of packet `i`.
    #[inline]
    pub fn route_info(&self, i: u32) -> RouteInfo {
        self.route[i as usize]
    }

    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    /// Take the packet out (by copy) and free its slot.
    pub fn take(&mut self, i: u32) -> Packet {
        self.free.push(i);
        self.slots[i as usize]
    }

    /// Slots in use (packets in flight or queued).
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// Fixed stream numbers for [`sub_rng`]; each consumer of randomness has its own.
pub mod streams {
    pub const TOPOLOGY: u64 = 1; // dumbbell RTT draws
    pub const ISN: u64 = 2;
    pub const START_JITTER: u64 = 3;
    pub const VIDEO: u64 = 4; // VBR segment sizes
    pub const POPULATION: u64 = 5; // [population] per-user draws
    pub const CONN_ISN: u64 = 6; // ISNs of connections after a flow's first (connection.rs)
    pub const ARRIVALS: u64 = 7; // dumbbell Poisson arrivals (scenario.rs)
    pub const LOSS_BASE: u64 = 1000; // + link direction index
    pub const REORDER_BASE: u64 = 1 << 32; // + link direction index
    pub const CROWD_BASE: u64 = 2 << 32; // + flow index (crowdlive publishers' frame sizes)
    pub const SPIKES_BASE: u64 = 3 << 32; // + link direction index (delay_spikes.rs)
    pub const JITTER_BASE: u64 = 4 << 32; // + jitter seed · 2^16 + link direction index (delay_jitter.rs)
}

/// An independent PCG stream for `(seed, stream)`. The two are mixed with SplitMix64 so that
/// neighbouring seeds and streams give unrelated sequences.
pub fn sub_rng(seed: u64, stream: u64) -> Pcg64 {
    use tcpvideo_model::splitmix::splitmix64;
    Pcg64::seed_from_u64(splitmix64(splitmix64(seed) ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn events_at_the_same_time_run_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(Time(10), Event::App { app: 1, kind: 0 });
        q.push(Time(5), Event::App { app: 0, kind: 0 });
        q.push(Time(10), Event::App { app: 2, kind: 0 });
        q.push(Time(10), Event::App { app: 3, kind: 0 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop_until(Time::MAX))
            .map(|(_, e)| match e {
                Event::App { app, .. } => app,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert_eq!(q.now(), Time(10));
    }

    #[test]
    fn pop_until_stops_at_the_horizon() {
        let mut q = EventQueue::new();
        q.push(Time(10), Event::Sample);
        q.push(Time(20), Event::Sample);
        assert!(q.pop_until(Time(15)).is_some());
        assert!(q.pop_until(Time(15)).is_none());
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn pool_reuses_freed_slots() {
        let mut pool = PacketPool::default();
        let p = crate::packet::tests_support::packet(0, 1, 100);
        let a = pool.insert(p);
        let b = pool.insert(p);
        pool.take(a);
        let c = pool.insert(p);
        assert_eq!(c, a);
        assert_ne!(b, c);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn sub_streams_differ_and_are_reproducible() {
        let a: u64 = sub_rng(1, 2).gen();
        let b: u64 = sub_rng(1, 2).gen();
        let c: u64 = sub_rng(1, 3).gen();
        let d: u64 = sub_rng(2, 2).gen();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }
}
