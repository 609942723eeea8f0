//! A monotone priority queue for the event loop: a radix heap keyed on the event time, with ties
//! broken by the scheduling sequence number — the same total order `(time, seq)` as a binary heap,
//! popped faster.
//!
//! Why it applies: a discrete-event simulator never schedules an event before the last one it
//! popped (time only moves forward), which is exactly the monotone condition a radix heap needs
//! (Ahuja, Mehlhorn, Orlin, Tarjan, "Faster algorithms for the shortest path problem", JACM 1990,
//! §3; the one-word-per-bucket variant described by Cherkassky, Goldberg and Silverstein, "Buckets,
//! heaps, lists and monotone priority queues", SODA 1997, whose radix-heap section also discusses
//! wider digits). Pushing is an append to a bucket (O(1), no sift); popping moves each element down
//! through at most one bucket per 4-bit digit of its distance to the minimum over its lifetime, and
//! in a packet simulation, where most events are due within a few milliseconds, only ~3 times. The
//! binary heap it replaced spent ~20 % of an onoff run in `pop`, the one-bucket-per-bit radix heap
//! ~16 % (bench/README.md).
//!
//! Layout: `ready` holds the events due exactly at `last` (the time of the most recent minimum), in
//! sequence order; bucket (level l, digit d) holds the events whose highest 4-bit digit differing
//! from `last` is digit l and has value d there. When `ready` runs dry, the lowest non-empty bucket
//! (lowest level, then lowest digit) is emptied: its minimum time becomes `last` and its events fall
//! into lower buckets. Events moved into `ready` together are sorted by sequence number; events
//! pushed straight into `ready` later have a larger sequence number than anything queued at that
//! time, so appending keeps it sorted.
//!
//! Deviation from the textbook structure: the minimum is only promoted when the caller asks for an
//! event not later than a horizon and the minimum qualifies (`pop_until`), so a caller that stops at
//! a horizon may still schedule events between the horizon and the next event.

use std::collections::VecDeque;

/// One scheduled item: due time (ns), the sequence number that orders equal times, the payload.
#[derive(Clone, Copy, Debug)]
pub struct Scheduled<T> {
    pub at: u64,
    pub seq: u64,
    pub item: T,
}

/// Radix 16: the time is read in 4-bit digits, so an event falls through at most one bucket per
/// digit on its way to `ready` (≈ 3 moves for an event a packet RTT ahead, against ≈ 12 with one
/// bucket per bit; the moves were most of the queue's cost in an onoff run, bench/README.md).
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64 / DIGIT_BITS as usize;

#[derive(Debug)]
pub struct RadixQueue<T> {
    /// Time of the latest promoted minimum; every queued time is ≥ it.
    last: u64,
    /// Events due exactly at `last`, ascending by sequence number.
    ready: VecDeque<Scheduled<T>>,
    /// `buckets[level * DIGITS + d]`: events whose highest digit differing from `last` is digit
    /// `level`, with value `d` there (always above `last`'s digit).
    buckets: Vec<Vec<Scheduled<T>>>,
    /// Per level, bit d set ⇔ bucket (level, d) is non-empty; `levels`: bit l set ⇔ level l has one.
    occupied: [u16; LEVELS],
    levels: u16,
    len: usize,
}

impl<T: Copy> Default for RadixQueue<T> {
    fn default() -> Self {
        RadixQueue {
            last: 0,
            ready: VecDeque::new(),
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            levels: 0,
            len: 0,
        }
    }
}

impl<T: Copy> RadixQueue<T> {
    /// The bucket of `at` against `last` as (level, digit); `None` = due at `last` (`ready`).
    #[inline]
    fn bucket_of(&self, at: u64) -> Option<(usize, usize)> {
        let diff = at ^ self.last;
        if diff == 0 {
            return None;
        }
        let level = ((63 - diff.leading_zeros()) / DIGIT_BITS) as usize;
        let digit = ((at >> (level as u32 * DIGIT_BITS)) as usize) & (DIGITS - 1);
        Some((level, digit))
    }

    #[inline]
    fn file(&mut self, e: Scheduled<T>) {
        match self.bucket_of(e.at) {
            None => self.ready.push_back(e),
            Some((level, digit)) => {
                self.buckets[level * DIGITS + digit].push(e);
                self.occupied[level] |= 1 << digit;
                self.levels |= 1 << level;
            }
        }
    }

    /// Queue `item` at time `at` with sequence number `seq`. `at` must not be earlier than any
    /// time already popped, and if `at` is the current minimum, `seq` must exceed the sequence
    /// number of every event already queued at `at` (true when numbers grow with the clock).
    #[inline]
    pub fn push(&mut self, at: u64, seq: u64, item: T) {
        debug_assert!(at >= self.last, "radix queue: time went backwards");
        self.file(Scheduled { at, seq, item });
        self.len += 1;
    }

    /// The lowest non-empty bucket (level, digit) and its minimum time, if any event waits
    /// outside `ready`.
    fn lowest(&self) -> Option<(usize, usize, u64)> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.occupied[level].trailing_zeros() as usize;
        let min = self.buckets[level * DIGITS + digit].iter().map(|e| e.at).min().expect("occupied bucket");
        Some((level, digit, min))
    }

    /// Make `min` (the minimum of bucket (level, digit)) the new `last` and spread that bucket
    /// below it; every other bucket keeps its place (its events differ from the new `last`
    /// exactly where they differed from the old one).
    fn promote(&mut self, level: usize, digit: usize, min: u64) {
        self.last = min;
        self.occupied[level] &= !(1 << digit);
        if self.occupied[level] == 0 {
            self.levels &= !(1 << level);
        }
        let b = level * DIGITS + digit;
        let mut moving = std::mem::take(&mut self.buckets[b]);
        for e in moving.drain(..) {
            self.file(e);
        }
        self.buckets[b] = moving; // keep its capacity
        if self.ready.len() > 1 {
            self.ready.make_contiguous().sort_unstable_by_key(|e| e.seq);
        }
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<u64> {
        match self.ready.front() {
            Some(e) => Some(e.at),
            None => self.lowest().map(|(_, _, min)| min),
        }
    }

    /// Remove and return the earliest `(time, seq)` event if its time is not later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: u64) -> Option<Scheduled<T>> {
        if self.ready.is_empty() {
            let (level, digit, min) = self.lowest()?;
            if min > until {
                return None;
            }
            self.promote(level, digit, min);
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

    fn drain(q: &mut RadixQueue<u32>) -> Vec<(u64, u64, u32)> {
        std::iter::from_fn(|| q.pop_until(u64::MAX)).map(|e| (e.at, e.seq, e.item)).collect()
    }

    #[test]
    fn pops_in_time_then_sequence_order_like_a_sorted_list() {
        // A simulation-like load: pop one event, push a few at now + random delays (some zero,
        // some equal to already queued times); the pop order must equal a stable sort by (at, seq).
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut q = RadixQueue::default();
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
            if popped.len() < 5_000 {
                for _ in 0..rng.gen_range(0..3) {
                    seq += 1;
                    let delay = [0, 0, 1, 1 << 20, rng.gen_range(0..100_000_000u64)][rng.gen_range(0..5)];
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
    fn pop_until_leaves_later_events_and_accepts_pushes_before_them() {
        let mut q = RadixQueue::default();
        q.push(100, 1, 1);
        q.push(300, 2, 2);
        assert_eq!(q.pop_until(150).map(|e| e.item), Some(1));
        assert!(q.pop_until(150).is_none()); // 300 stays queued ...
        q.push(200, 3, 3); // ... and an event between the horizon and it is still accepted
        assert_eq!(q.peek_time(), Some(200));
        assert_eq!(drain(&mut q), vec![(200, 3, 3), (300, 2, 2)]);
    }

    #[test]
    fn equal_times_come_out_in_sequence_order_after_a_promotion() {
        let mut q = RadixQueue::default();
        q.push(50, 1, 1);
        q.push(80, 2, 2);
        q.push(80, 3, 3);
        q.push(60, 4, 4);
        q.push(80, 5, 5);
        assert_eq!(q.pop_until(u64::MAX).map(|e| e.item), Some(1));
        q.push(80, 6, 6);
        assert_eq!(drain(&mut q).iter().map(|e| e.2).collect::<Vec<_>>(), vec![4, 2, 3, 5, 6]);
    }
}
