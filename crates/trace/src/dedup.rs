//! Exact-duplicate frames: what a span port, a TAP on both directions or a merge of overlapping
//! captures produces — every packet captured 2–4 times, microseconds apart, byte for byte the same
//! (same IPv4 identification, same TCP checksum). Left in, each copy would be a retransmission,
//! and a *timeout* retransmission 1 µs after its original (issue 12).
//!
//! The rule is `editcap -D`'s (Wireshark's editcap, "remove duplicate packets"): a frame whose
//! bytes and length equal one of the last few frames is dropped. editcap compares an MD5 of the
//! whole frame over the previous 5 frames; we compare a 64-bit hash of the captured length, the
//! wire length and the first `HASHED_PREFIX` bytes (link, IP and TCP headers and the start of the
//! payload: the IP identification and the TCP checksum make the prefix as discriminating as the
//! whole frame) over the last `WINDOW` frames, and only within `MAX_GAP_NS` so that a genuine
//! retransmission — a new IP identification on Linux, and at least a tail-loss probe (10 ms) or
//! a round trip later — is never taken for a copy.
//!
//! Deviations from editcap: the window is 16 frames (not 5) because a span port interleaves both
//! directions' copies; the time bound is our own. Frames that differ only in the link layer
//! (a different VLAN tag on each span leg) or in the TTL (captured on both sides of a router)
//! are not exact duplicates and are kept, as editcap keeps them.

use std::hash::BuildHasher;

/// Frames remembered.
const WINDOW: usize = 16;
/// Bytes of each frame hashed (covers Ethernet + VLANs + IPv6 + TCP with options + some payload).
const HASHED_PREFIX: usize = 160;
/// A copy arrives within this time of the original (span ports copy within microseconds; merges
/// of two interfaces' captures may be skewed by a little more).
const MAX_GAP_NS: u64 = 10_000_000;

/// Remembers the fingerprints of the last frames. Fixed size, no allocation per frame.
#[derive(Clone, Debug)]
pub struct DuplicateFilter {
    ring: [(u64, u64); WINDOW],
    head: usize,
    hasher: foldhash::fast::FixedState,
}

impl Default for DuplicateFilter {
    fn default() -> Self {
        DuplicateFilter { ring: [(0, u64::MAX); WINDOW], head: 0, hasher: foldhash::fast::FixedState::with_seed(0x7c9) }
    }
}

impl DuplicateFilter {
    /// Is this frame a copy of one of the last frames? If not, it is remembered.
    #[inline]
    pub fn is_duplicate(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> bool {
        let prefix = &data[..data.len().min(HASHED_PREFIX)];
        let fp = self.hasher.hash_one((data.len(), orig_len, prefix)) | 1; // never 0 (empty slot)
        let dup = self.ring.iter().any(|&(f, t)| f == fp && t != u64::MAX && ts_ns.abs_diff(t) <= MAX_GAP_NS);
        if !dup {
            self.ring[self.head] = (fp, ts_ns);
            self.head = (self.head + 1) % WINDOW;
        }
        dup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_frame_microseconds_later_is_a_duplicate() {
        let mut d = DuplicateFilter::default();
        let f = [1u8, 2, 3, 4, 5];
        assert!(!d.is_duplicate(1_000, &f, 5));
        assert!(d.is_duplicate(2_000, &f, 5));
        assert!(d.is_duplicate(3_000, &f, 5));
    }

    #[test]
    fn one_differing_byte_or_a_late_copy_is_not_a_duplicate() {
        let mut d = DuplicateFilter::default();
        assert!(!d.is_duplicate(0, &[1, 2, 3], 3));
        assert!(!d.is_duplicate(1, &[1, 2, 4], 3));
        assert!(!d.is_duplicate(1, &[1, 2, 3], 4));
        assert!(!d.is_duplicate(MAX_GAP_NS + 1, &[1, 2, 3], 3));
    }

    #[test]
    fn a_copy_older_than_the_window_is_forgotten() {
        let mut d = DuplicateFilter::default();
        assert!(!d.is_duplicate(0, &[9], 1));
        for i in 0..WINDOW as u8 {
            assert!(!d.is_duplicate(1, &[i, 0], 2));
        }
        assert!(!d.is_duplicate(2, &[9], 1));
    }
}
