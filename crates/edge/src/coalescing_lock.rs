//! The edge's coalescing lock: one upstream fetch per segment, however many receivers ask.
//!
//! A pure state machine keyed by segment (no clock, no I/O, no tasks), after pingora's cache lock
//! (`pingora-cache/src/lock.rs`): the first asker of a key gets a [`WritePermit`] and fetches;
//! everyone who asks while that fetch is open gets a [`ReadLock`] plus the writer's shared handle
//! `V` (in the server: the in-flight body, which wakes its readers the moment bytes arrive — no
//! polling, unlike nginx's `proxy_cache_lock`, which re-checks every 500 ms). The writer ends the
//! fetch with a named [`LockOutcome`]; a writer that disappears without saying (its task dropped
//! or panicked) ends it as [`LockOutcome::Dangling`], so waiters never hang on a dead permit.
//!
//! What each outcome tells a waiter:
//! - `Done`: the object is complete (in the cache, or in the shared handle);
//! - `TransientError`: the fetch failed (5xx, timeout, reset, truncation); ask again — one of the
//!   askers becomes the next writer, so the retry is still a single upstream fetch;
//! - `GiveUp`: the fetch failed in a way retrying will not fix (404, object over the cache bound);
//! - `Dangling`: the writer vanished; treated as `TransientError`;
//! - `WaitTimeout`: this waiter stopped waiting (its own deadline); the lock is unaffected.
//!
//! Generations make stale permits harmless: a permit from an earlier fetch of the same key
//! (released, then the key locked again) changes nothing when it is released or dropped.

use std::collections::HashMap;
use std::hash::Hash;

/// The right (and duty) to fetch one key and end the fetch with an outcome.
#[derive(Debug, PartialEq, Eq)]
pub struct WritePermit {
    generation: u64,
}

/// A waiter's ticket on an open fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLock {
    generation: u64,
}

/// What `acquire` gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Locked<V> {
    /// No fetch of this key is open: the caller fetches and must release the permit.
    Write(WritePermit),
    /// A fetch is open: the caller reads from `shared` and learns how it ended.
    Read { lock: ReadLock, shared: V },
}

/// How a fetch (or a wait on it) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    Done,
    TransientError,
    GiveUp,
    Dangling,
    WaitTimeout,
}

impl LockOutcome {
    /// Whether a waiter should ask again (and maybe become the next writer).
    pub fn worth_retrying(self) -> bool {
        matches!(self, LockOutcome::TransientError | LockOutcome::Dangling)
    }
}

/// What releasing a permit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    pub outcome: LockOutcome,
    /// Waiters that were reading this fetch when it ended.
    pub waiters: u32,
}

struct OpenFetch<V> {
    generation: u64,
    waiters: u32,
    shared: V,
}

/// The open fetches, by key.
pub struct CoalescingLock<K, V> {
    open: HashMap<K, OpenFetch<V>>,
    next_generation: u64,
}

impl<K: Eq + Hash + Clone, V: Clone> Default for CoalescingLock<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash + Clone, V: Clone> CoalescingLock<K, V> {
    pub fn new() -> Self {
        CoalescingLock {
            open: HashMap::new(),
            next_generation: 0,
        }
    }

    /// Ask for `key`. `make_shared` builds the writer's shared handle; it is called only when the
    /// caller becomes the writer.
    pub fn acquire(&mut self, key: &K, make_shared: impl FnOnce() -> V) -> Locked<V> {
        if let Some(open) = self.open.get_mut(key) {
            open.waiters += 1;
            return Locked::Read {
                lock: ReadLock {
                    generation: open.generation,
                },
                shared: open.shared.clone(),
            };
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.open.insert(
            key.clone(),
            OpenFetch {
                generation,
                waiters: 0,
                shared: make_shared(),
            },
        );
        Locked::Write(WritePermit { generation })
    }

    /// The writer ends its fetch. `None` when the permit is stale (its fetch already ended).
    /// `outcome` must be one a writer can report (`Done`, `TransientError`, `GiveUp`).
    pub fn release(
        &mut self,
        key: &K,
        permit: WritePermit,
        outcome: LockOutcome,
    ) -> Option<Released> {
        debug_assert!(matches!(
            outcome,
            LockOutcome::Done | LockOutcome::TransientError | LockOutcome::GiveUp
        ));
        self.end(key, permit.generation, outcome)
    }

    /// The writer disappeared without releasing (its task was dropped): waiters see `Dangling`.
    pub fn permit_dropped(&mut self, key: &K, permit: WritePermit) -> Option<Released> {
        self.end(key, permit.generation, LockOutcome::Dangling)
    }

    /// A waiter gave up on its own deadline; the fetch goes on for the others.
    pub fn wait_timed_out(&mut self, key: &K, lock: ReadLock) -> LockOutcome {
        if let Some(open) = self.open.get_mut(key) {
            if open.generation == lock.generation {
                open.waiters = open.waiters.saturating_sub(1);
            }
        }
        LockOutcome::WaitTimeout
    }

    /// Whether a fetch of `key` is open.
    pub fn is_open(&self, key: &K) -> bool {
        self.open.contains_key(key)
    }

    /// Waiters on the open fetch of `key` (0 if none).
    pub fn waiters(&self, key: &K) -> u32 {
        self.open.get(key).map_or(0, |o| o.waiters)
    }

    fn end(&mut self, key: &K, generation: u64, outcome: LockOutcome) -> Option<Released> {
        match self.open.get(key) {
            Some(open) if open.generation == generation => {
                let open = self.open.remove(key)?;
                Some(Released {
                    outcome,
                    waiters: open.waiters,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> CoalescingLock<&'static str, u32> {
        CoalescingLock::new()
    }

    #[track_caller]
    fn expect_write(l: Locked<u32>) -> WritePermit {
        match l {
            Locked::Write(p) => p,
            other => panic!("expected a write permit, got {other:?}"),
        }
    }

    #[track_caller]
    fn expect_read(l: Locked<u32>) -> (ReadLock, u32) {
        match l {
            Locked::Read { lock, shared } => (lock, shared),
            other => panic!("expected a read lock, got {other:?}"),
        }
    }

    #[test]
    fn first_asker_writes_and_later_askers_read_the_writers_handle() {
        let mut l = lock();
        let _w = expect_write(l.acquire(&"seg1", || 7));
        for _ in 0..199 {
            let (_, shared) = expect_read(l.acquire(&"seg1", || unreachable!()));
            assert_eq!(shared, 7);
        }
        assert_eq!(l.waiters(&"seg1"), 199);
    }

    #[test]
    fn different_segments_get_independent_writers() {
        let mut l = lock();
        expect_write(l.acquire(&"seg1", || 1));
        expect_write(l.acquire(&"seg2", || 2));
    }

    #[test]
    fn release_reports_the_outcome_and_how_many_waited() {
        let mut l = lock();
        let w = expect_write(l.acquire(&"s", || 0));
        expect_read(l.acquire(&"s", || 0));
        expect_read(l.acquire(&"s", || 0));
        assert_eq!(
            l.release(&"s", w, LockOutcome::Done),
            Some(Released {
                outcome: LockOutcome::Done,
                waiters: 2
            })
        );
        assert!(!l.is_open(&"s"));
    }

    #[test]
    fn after_a_transient_error_the_next_asker_becomes_the_single_retrying_writer() {
        let mut l = lock();
        let w = expect_write(l.acquire(&"s", || 0));
        let r = l.release(&"s", w, LockOutcome::TransientError).unwrap();
        assert!(r.outcome.worth_retrying());
        expect_write(l.acquire(&"s", || 1));
        expect_read(l.acquire(&"s", || 2));
    }

    #[test]
    fn a_dropped_permit_ends_the_fetch_as_dangling_so_waiters_do_not_hang() {
        let mut l = lock();
        let w = expect_write(l.acquire(&"s", || 0));
        expect_read(l.acquire(&"s", || 0));
        let r = l.permit_dropped(&"s", w).unwrap();
        assert_eq!(r.outcome, LockOutcome::Dangling);
        assert!(r.outcome.worth_retrying());
        assert!(!l.is_open(&"s"));
    }

    #[test]
    fn a_stale_permit_cannot_end_a_newer_fetch_of_the_same_key() {
        let mut l = lock();
        let old = expect_write(l.acquire(&"s", || 0));
        let stale = WritePermit {
            generation: old.generation,
        };
        l.release(&"s", old, LockOutcome::Done);
        let _new = expect_write(l.acquire(&"s", || 1));
        assert_eq!(l.permit_dropped(&"s", stale), None);
        assert!(l.is_open(&"s"));
    }

    #[test]
    fn a_waiter_timing_out_leaves_the_fetch_open_for_the_others() {
        let mut l = lock();
        let _w = expect_write(l.acquire(&"s", || 0));
        let (r1, _) = expect_read(l.acquire(&"s", || 0));
        expect_read(l.acquire(&"s", || 0));
        assert_eq!(l.wait_timed_out(&"s", r1), LockOutcome::WaitTimeout);
        assert!(l.is_open(&"s"));
        assert_eq!(l.waiters(&"s"), 1);
    }

    #[test]
    fn give_up_is_not_worth_retrying() {
        assert!(!LockOutcome::GiveUp.worth_retrying());
        assert!(!LockOutcome::WaitTimeout.worth_retrying());
        assert!(!LockOutcome::Done.worth_retrying());
    }
}
