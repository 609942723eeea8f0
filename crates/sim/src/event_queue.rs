//! A monotone priority queue for the event loop: a radix heap keyed on the event time, with ties
//! broken by the scheduling sequence number — the same total order `(time, seq)` as a binary heap,
//! popped faster.
//!
//! Why it applies: a discrete-event simulator never schedules an event before the last one it
//! popped (time only moves forward), which is exactly the monotone condition a radix heap needs
//! (Ahuja, Mehlhorn, Orlin, Tarjan, "Faster algorithms for the shortest path problem", JACM 1990,
//! §3; the one-word-per-bucket variant described by Cherkassky, Goldberg and Silverstein, "Buckets,
//! heaps, lists and monotone priority queues", SODA 1997). Pushing is an append to a bucket
//! (O(1), no sift); popping moves each element down through at most 64 buckets over its lifetime,
//! and in a packet simulation, where most events are due within a few milliseconds, only a handful.
//! The binary heap it replaces spent ~20 % of an onoff run in `pop` (bench/README.md).
//!
//! Layout: bucket 0 (`ready`) holds the events due exactly at `last` (the time of the most recent
//! minimum), in sequence order; bucket i ≥ 1 holds the events whose time first differs from `last`
//! at bit i−1. When `ready` runs dry, the lowest non-empty bucket is emptied: its minimum time
//! becomes `last` and its events fall into lower buckets. Events moved into `ready` together are
//! sorted by sequence number; events pushed straight into `ready` later have a larger sequence
//! number than anything queued, so appending keeps it sorted.
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

/// Buckets 1..=64 (bucket i ↔ highest differing bit i−1 of the time against `last`).
const BUCKETS: usize = 65;

#[derive(Debug)]
pub struct RadixQueue<T> {
    /// Time of the latest promoted minimum; every queued time is ≥ it.
    last: u64,
    /// Events due exactly at `last`, ascending by sequence number.
    ready: VecDeque<Scheduled<T>>,
    /// `buckets[i]` for i in 1..=64; index 0 unused (that is `ready`).
    buckets: Vec<Vec<Scheduled<T>>>,
    /// Bit i−1 set ⇔ `buckets[i]` is non-empty, so the lowest one is a `trailing_zeros` away.
    occupied: u64,
    len: usize,
}

impl<T: Copy> Default for RadixQueue<T> {
    fn default() -> Self {
        RadixQueue { last: 0, ready: VecDeque::new(), buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), occupied: 0, len: 0 }
    }
}

impl<T: Copy> RadixQueue<T> {
    #[inline]
    fn bucket_of(&self, at: u64) -> usize {
        (64 - (at ^ self.last).leading_zeros()) as usize
    }

    /// Queue `item` at time `at` with sequence number `seq`. `at` must not be earlier than any
    /// time already popped, and `seq` must exceed every sequence number queued so far.
    #[inline]
    pub fn push(&mut self, at: u64, seq: u64, item: T) {
        debug_assert!(at >= self.last, "radix queue: time went backwards");
        let e = Scheduled { at, seq, item };
        let b = self.bucket_of(at);
        if b == 0 {
            self.ready.push_back(e);
        } else {
            self.buckets[b].push(e);
            self.occupied |= 1 << (b - 1);
        }
        self.len += 1;
    }

    /// The lowest non-empty bucket and its minimum time, if any event waits outside `ready`.
    fn lowest(&self) -> Option<(usize, u64)> {
        if self.occupied == 0 {
            return None;
        }
        let b = self.occupied.trailing_zeros() as usize + 1;
        let min = self.buckets[b].iter().map(|e| e.at).min().expect("occupied bucket");
        Some((b, min))
    }

    /// Make `min` (the minimum of bucket `b`) the new `last` and spread bucket `b` below it.
    fn promote(&mut self, b: usize, min: u64) {
        self.last = min;
        self.occupied &= !(1 << (b - 1));
        let mut moving = std::mem::take(&mut self.buckets[b]);
        for e in moving.drain(..) {
            let nb = self.bucket_of(e.at);
            if nb == 0 {
                self.ready.push_back(e);
            } else {
                self.buckets[nb].push(e);
                self.occupied |= 1 << (nb - 1);
            }
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
            None => self.lowest().map(|(_, min)| min),
        }
    }

    /// Remove and return the earliest `(time, seq)` event if its time is not later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: u64) -> Option<Scheduled<T>> {
        if self.ready.is_empty() {
            let (b, min) = self.lowest()?;
            if min > until {
                return None;
            }
            self.promote(b, min);
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
