//! A monotone priority queue for the event loop: a timing wheel of fixed-width time slots, with
//! ties broken by the scheduling sequence number — the same total order `(time, seq)` as a binary
//! heap, popped faster.
//!
//! Why it applies: a discrete-event simulator never schedules an event before the last one it
//! popped, and in a packet simulation nearly every event is due within a few hundred milliseconds
//! (a packet's arrival, a delayed ACK, a loss probe). A wheel of slots covering that horizon files
//! each event once, in O(1), into the slot of its time; a slot is sorted only when the clock
//! reaches it, and it then holds a handful of events (Varghese and Lauck, "Hashed and hierarchical
//! timing wheels", SOSP 1987, scheme 4; Brown, "Calendar queues", CACM 1988, with a fixed slot
//! width). The radix heap it replaced moved each event ~3 times between buckets on its way to the
//! front, and those moves and its cold bucket memory were ~18 % of an onoff run's time
//! (bench/README.md "Session 9").
//!
//! Layout: `ready` holds the events of every slot up to `cur` (the slot of the latest event taken
//! from the wheel), sorted by `(at, seq)`; the wheel holds events of slots `cur + 1 ..= cur +
//! SLOTS − 1`, each slot a singly linked list through a node pool (a slot is 4 bytes of head,
//! and freed nodes are reused first, so the memory an event touches is usually warm); events
//! further ahead wait in a binary heap (`far`). When `ready` runs dry, the next non-empty slot
//! (found through a two-level occupancy bitmap) and any far events of that slot are moved into
//! `ready` and sorted. An event pushed into a slot at or before `cur` is inserted into `ready` at
//! its place (nearly always at the back).
//!
//! The horizon of `pop_until` needs no special case: a slot taken into `ready` stays there, and a
//! later push before its events is inserted in order.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// One scheduled item: due time (ns), the sequence number that orders equal times, the payload.
#[derive(Clone, Copy, Debug)]
pub struct Scheduled<T> {
    pub at: u64,
    pub seq: u64,
    pub item: T,
}

impl<T> Scheduled<T> {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.at, self.seq)
    }
}

/// Slot width 2^14 ns ≈ 16 µs and 2^14 slots: the wheel spans ≈ 268 ms, which holds a packet's
/// arrival behind a full 1375-packet queue at 100 Mbit/s (165 ms) plus a path RTT, delayed-ACK
/// and most loss-probe timers; an onoff run averages well under one event per slot, so sorting a
/// slot costs next to nothing. Longer timers (RTO backoff, player wake-ups) go to `far`.
const SLOT_BITS: u32 = 14;
const SLOTS: usize = 1 << 14;
const WORDS: usize = SLOTS / 64;
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node<T> {
    e: Scheduled<T>,
    next: u32,
}

/// A far event, ordered so that the binary heap pops the earliest `(at, seq)` first.
#[derive(Clone, Copy, Debug)]
struct Far<T>(Scheduled<T>);

impl<T> PartialEq for Far<T> {
    fn eq(&self, o: &Self) -> bool {
        self.0.key() == o.0.key()
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Far<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.key().cmp(&o.0.key())
    }
}

#[derive(Debug)]
pub struct WheelQueue<T> {
    /// Events of slots ≤ `cur`, ascending by `(at, seq)`.
    ready: VecDeque<Scheduled<T>>,
    /// Absolute slot number (`at >> SLOT_BITS`) of the latest slot moved into `ready`.
    cur: u64,
    /// Per wheel position (absolute slot mod SLOTS): head of its list in `nodes`, NIL if empty.
    heads: Box<[u32]>,
    /// Bit i of `occupied[w]` ⇔ position 64·w + i is non-empty; bit w of `summary` ⇔
    /// `occupied[w] != 0`.
    occupied: Box<[u64]>,
    summary: [u64; WORDS / 64],
    nodes: Vec<Node<T>>,
    /// Head of the free list through `nodes`.
    free: u32,
    /// Events of slots ≥ `cur + SLOTS` when pushed.
    far: BinaryHeap<Reverse<Far<T>>>,
    len: usize,
}

impl<T: Copy> Default for WheelQueue<T> {
    fn default() -> Self {
        WheelQueue {
            ready: VecDeque::new(),
            cur: 0,
            heads: vec![NIL; SLOTS].into_boxed_slice(),
            occupied: vec![0; WORDS].into_boxed_slice(),
            summary: [0; WORDS / 64],
            nodes: Vec::new(),
            free: NIL,
            far: BinaryHeap::new(),
            len: 0,
        }
    }
}

impl<T: Copy> WheelQueue<T> {
    /// Queue `item` at time `at` with sequence number `seq`. `at` must not be earlier than any
    /// time already popped.
    #[inline]
    pub fn push(&mut self, at: u64, seq: u64, item: T) {
        let e = Scheduled { at, seq, item };
        let slot = at >> SLOT_BITS;
        self.len += 1;
        if slot <= self.cur {
            self.insert_ready(e);
        } else if slot - self.cur < SLOTS as u64 {
            self.file(slot, e);
        } else {
            self.far.push(Reverse(Far(e)));
        }
    }

    /// Insert into `ready` at its place; new events nearly always go last.
    #[inline]
    fn insert_ready(&mut self, e: Scheduled<T>) {
        let k = e.key();
        let mut i = self.ready.len();
        while i > 0 && self.ready[i - 1].key() > k {
            i -= 1;
        }
        if i == self.ready.len() {
            self.ready.push_back(e);
        } else {
            self.ready.insert(i, e);
        }
    }

    #[inline]
    fn file(&mut self, slot: u64, e: Scheduled<T>) {
        let pos = (slot as usize) & (SLOTS - 1);
        let next = self.heads[pos];
        let n = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            self.nodes[n as usize] = Node { e, next };
            n
        } else {
            self.nodes.push(Node { e, next });
            (self.nodes.len() - 1) as u32
        };
        self.heads[pos] = n;
        let w = pos / 64;
        self.occupied[w] |= 1 << (pos % 64);
        self.summary[w / 64] |= 1 << (w % 64);
    }

    /// The first non-empty wheel position after `cur`'s, as an absolute slot number.
    fn next_wheel_slot(&self) -> Option<u64> {
        let start = ((self.cur + 1) as usize) & (SLOTS - 1);
        let pos = self.first_occupied_from(start).or_else(|| self.first_occupied_from(0))?;
        let ahead = (pos + SLOTS - start) & (SLOTS - 1);
        Some(self.cur + 1 + ahead as u64)
    }

    /// The first non-empty position ≥ `start` (no wrap-around).
    #[inline]
    fn first_occupied_from(&self, start: usize) -> Option<usize> {
        let w = start / 64;
        let bits = self.occupied[w] & (!0u64 << (start % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        let from = w + 1;
        for sw in from / 64..self.summary.len() {
            let mut s = self.summary[sw];
            if sw == from / 64 {
                s &= !0u64 << (from % 64);
            }
            if s != 0 {
                let word = sw * 64 + s.trailing_zeros() as usize;
                return Some(word * 64 + self.occupied[word].trailing_zeros() as usize);
            }
        }
        None
    }

    /// The slot that holds the next event outside `ready`, if any.
    fn next_slot(&self) -> Option<u64> {
        let wheel = self.next_wheel_slot();
        let far = self.far.peek().map(|f| f.0 .0.at >> SLOT_BITS);
        match (wheel, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Move slot `slot` (the next one holding events) into the empty `ready`, sorted.
    fn take_slot(&mut self, slot: u64) {
        self.cur = slot;
        let pos = (slot as usize) & (SLOTS - 1);
        let mut n = std::mem::replace(&mut self.heads[pos], NIL);
        if n != NIL {
            let w = pos / 64;
            self.occupied[w] &= !(1 << (pos % 64));
            if self.occupied[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
        }
        while n != NIL {
            let node = self.nodes[n as usize];
            self.ready.push_back(node.e);
            self.nodes[n as usize].next = self.free;
            self.free = n;
            n = node.next;
        }
        while let Some(f) = self.far.peek() {
            if f.0 .0.at >> SLOT_BITS != slot {
                break;
            }
            let Some(Reverse(Far(e))) = self.far.pop() else { break };
            self.ready.push_back(e);
        }
        if self.ready.len() > 1 {
            self.ready.make_contiguous().sort_unstable_by_key(|e| e.key());
        }
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<u64> {
        if let Some(e) = self.ready.front() {
            return Some(e.at);
        }
        let slot = self.next_slot()?;
        let mut min = u64::MAX;
        let mut n = self.heads[(slot as usize) & (SLOTS - 1)];
        if slot - self.cur < SLOTS as u64 {
            while n != NIL {
                min = min.min(self.nodes[n as usize].e.at);
                n = self.nodes[n as usize].next;
            }
        }
        if let Some(f) = self.far.peek() {
            min = min.min(f.0 .0.at);
        }
        Some(min)
    }

    /// Remove and return the earliest `(time, seq)` event if its time is not later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: u64) -> Option<Scheduled<T>> {
        if self.ready.is_empty() {
            let slot = self.next_slot()?;
            if slot > until >> SLOT_BITS {
                return None;
            }
            self.take_slot(slot);
        }
        let e = self.ready.front()?;
        if e.at > until {
            return None;
        }
        self.len -= 1;
        self.ready.pop_front()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn drain(q: &mut WheelQueue<u32>) -> Vec<(u64, u64, u32)> {
        std::iter::from_fn(|| q.pop_until(u64::MAX)).map(|e| (e.at, e.seq, e.item)).collect()
    }

    #[test]
    fn pops_in_time_then_sequence_order_like_a_sorted_list() {
        // A simulation-like load: pop one event, push a few at now + random delays (some zero,
        // some equal to already queued times, some beyond the wheel); the pop order must equal a
        // sort by (at, seq).
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut q = WheelQueue::default();
        let mut reference: Vec<(u64, u64, u32)> = Vec::new();
        let mut popped = Vec::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for i in 0..200u32 {
            seq += 1;
            let at = rng.gen_range(0..1_000u64);
            q.push(at, seq, i);
            reference.push((at, seq, i));
        }
        while let Some(e) = q.pop_until(u64::MAX) {
            assert!(e.at >= now);
            now = e.at;
            popped.push((e.at, e.seq, e.item));
            if popped.len() < 20_000 {
                for _ in 0..rng.gen_range(0..3) {
                    seq += 1;
                    let delay =
                        [0, 0, 1, 1 << 20, rng.gen_range(0..100_000_000u64), rng.gen_range(0..2_000_000_000u64)][rng.gen_range(0..6)];
                    q.push(now + delay, seq, seq as u32);
                    reference.push((now + delay, seq, seq as u32));
                }
            }
        }
        reference.sort();
        assert_eq!(popped, reference);
        assert!(q.is_empty());
    }

    #[test]
    fn a_later_push_with_a_smaller_sequence_number_still_comes_out_in_order() {
        // Cut-through hops push an event early with the sequence number of a later instant
        // (engine.rs): an ordinary event pushed afterwards at the same time must come out first.
        let mut q = WheelQueue::default();
        q.push(5, 1, 0);
        q.push(40_000, 900, 1); // scheduled "as if" later
        assert_eq!(q.pop_until(u64::MAX).map(|e| e.item), Some(0));
        q.push(40_000, 10, 2);
        q.push(40_000, 901, 3);
        assert_eq!(drain(&mut q).iter().map(|e| e.2).collect::<Vec<_>>(), vec![2, 1, 3]);
    }

    #[test]
    fn pop_until_leaves_later_events_and_accepts_pushes_before_them() {
        let mut q = WheelQueue::default();
        q.push(100, 1, 1);
        q.push(300, 2, 2);
        q.push(90_000, 3, 3);
        assert_eq!(q.pop_until(150).map(|e| e.item), Some(1));
        assert!(q.pop_until(150).is_none()); // 300 stays queued ...
        q.push(200, 4, 4); // ... and an event between the horizon and it is still accepted
        assert_eq!(q.peek_time(), Some(200));
        assert!(q.pop_until(50_000).map(|e| e.item) == Some(4));
        assert!(q.pop_until(50_000).map(|e| e.item) == Some(2));
        assert!(q.pop_until(50_000).is_none()); // 90 000 is in a later slot: not taken
        q.push(60_000, 5, 5);
        assert_eq!(drain(&mut q), vec![(60_000, 5, 5), (90_000, 3, 3)]);
    }

    #[test]
    fn events_beyond_the_wheel_and_across_its_wrap_come_out_in_order() {
        // Times around whole turns of the wheel: far events must merge with wheel events of the
        // same slot, and positions that wrap around must not be taken for earlier ones.
        let turn = (SLOTS as u64) << SLOT_BITS;
        let mut q = WheelQueue::default();
        let times = [3 * turn + 7, turn - 1, turn, turn + 1, 2 * turn + 5, 5, turn + (1 << SLOT_BITS), 3 * turn + 7];
        for (i, &t) in times.iter().enumerate() {
            q.push(t, i as u64, i as u32);
        }
        assert_eq!(q.peek_time(), Some(5));
        assert_eq!(q.pop_until(u64::MAX).map(|e| e.at), Some(5));
        // Now the wheel starts at slot 0: push into the slot `turn + 1` shares with a far event.
        q.push(turn + 2, 100, 100);
        let mut want: Vec<(u64, u64, u32)> =
            times.iter().enumerate().filter(|(_, &t)| t != 5).map(|(i, &t)| (t, i as u64, i as u32)).collect();
        want.push((turn + 2, 100, 100));
        want.sort();
        assert_eq!(drain(&mut q), want);
    }

    #[test]
    fn equal_times_come_out_in_sequence_order_after_a_slot_is_taken() {
        let mut q = WheelQueue::default();
        q.push(50, 1, 1);
        q.push(80_000, 2, 2);
        q.push(80_000, 3, 3);
        q.push(60_000, 4, 4);
        q.push(80_000, 5, 5);
        assert_eq!(q.pop_until(u64::MAX).map(|e| e.item), Some(1));
        q.push(80_000, 6, 6);
        assert_eq!(drain(&mut q).iter().map(|e| e.2).collect::<Vec<_>>(), vec![4, 2, 3, 5, 6]);
    }
}
