//! Exact-duplicate frames: what a span port, a TAP on both directions or a merge of overlapping
//! captures produces — every packet captured 2–4 times, microseconds apart, byte for byte the same
//! (same IPv4 identification, same TCP checksum). Left in, each copy would be a retransmission,
//! and a *timeout* retransmission 1 µs after its original (issue 12).
//!
//! The rule is `editcap -D`'s (Wireshark's editcap, "remove duplicate packets"): a frame whose
//! bytes and length equal one of the last few frames is dropped. editcap compares an MD5 of the
//! whole frame over the previous 5 frames; we compare (exactly) the captured length, the
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

/// Frames remembered.
const WINDOW: usize = 16;
/// Bytes of each frame compared (covers Ethernet + VLANs + IPv6 + TCP with options + some payload).
const HASHED_PREFIX: usize = 160;
/// A copy arrives within this time of the original (span ports copy within microseconds; merges
/// of two interfaces' captures may be skewed by a little more).
const MAX_GAP_NS: u64 = 10_000_000;
/// Marks an empty slot's time (no frame is ever this late).
const EMPTY: u64 = u64::MAX;

/// Remembers the last frames: a cheap fingerprint of each (to find candidates) and its first
/// bytes (to confirm a candidate exactly, so a fingerprint collision can never drop a frame).
/// Fixed size, no allocation per frame.
///
/// Why not a strong hash of the prefix: hashing 160 bytes per frame was 12 % of the analyzer's
/// time (issue 16); summing the prefix's 8-byte words costs a few nanoseconds, and the exact
/// comparison runs only when a fingerprint matches (real copies, or rare collisions).
#[derive(Clone, Debug)]
pub struct DuplicateFilter {
    /// Fingerprint and capture time of each remembered frame.
    fps: [u64; WINDOW],
    times: [u64; WINDOW],
    /// Captured length, wire length and the first `HASHED_PREFIX` bytes of each frame.
    lens: [(u32, u32); WINDOW],
    prefixes: Box<[[u8; HASHED_PREFIX]; WINDOW]>,
    head: usize,
}

impl Default for DuplicateFilter {
    fn default() -> Self {
        DuplicateFilter {
            fps: [0; WINDOW],
            times: [EMPTY; WINDOW],
            lens: [(0, 0); WINDOW],
            prefixes: Box::new([[0; HASHED_PREFIX]; WINDOW]),
            head: 0,
        }
    }
}

/// Position-dependent sum of the prefix's 8-byte words and the lengths (not a hash: only a
/// filter in front of the exact comparison, so it need only be cheap and differ for frames
/// that differ in their IP identification, sequence numbers or checksum).
#[inline]
fn fingerprint(prefix: &[u8], caplen: usize, orig_len: u32) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut acc = (caplen as u64) << 32 ^ orig_len as u64;
    let mut words = prefix.chunks_exact(8);
    for (i, w) in (&mut words).enumerate() {
        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        acc = acc.wrapping_add(v.rotate_left(i as u32 * 7));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    acc = acc.wrapping_add(u64::from_le_bytes(tail).rotate_left(61));
    (acc ^ acc >> 29).wrapping_mul(K)
}

impl DuplicateFilter {
    /// Is this frame a copy (same captured length, wire length and first `HASHED_PREFIX` bytes)
    /// of one of the last `WINDOW` frames, seen at most `MAX_GAP_NS` apart? If not, it is
    /// remembered.
    #[inline]
    pub fn is_duplicate(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> bool {
        let prefix = &data[..data.len().min(HASHED_PREFIX)];
        let fp = fingerprint(prefix, data.len(), orig_len);
        // Branch-free scan of all slots (vectorised); the exact check runs only on a match.
        let mut hits = 0u32;
        for (i, &f) in self.fps.iter().enumerate() {
            hits |= ((f == fp) as u32) << i;
        }
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let t = self.times[i];
            if t != EMPTY
                && ts_ns.abs_diff(t) <= MAX_GAP_NS
                && self.lens[i] == (data.len() as u32, orig_len)
                && self.prefixes[i][..prefix.len()] == *prefix
            {
                return true;
            }
        }
        let h = self.head;
        self.fps[h] = fp;
        self.times[h] = ts_ns;
        self.lens[h] = (data.len() as u32, orig_len);
        self.prefixes[h][..prefix.len()].copy_from_slice(prefix);
        self.head = (h + 1) % WINDOW;
        false
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

    #[test]
    fn frames_equal_in_their_prefix_but_not_beyond_it_are_duplicates_and_a_prefix_difference_is_not() {
        let mut d = DuplicateFilter::default();
        let mut a = vec![7u8; 200];
        assert!(!d.is_duplicate(0, &a, 200));
        a[190] = 1; // beyond the compared prefix
        assert!(d.is_duplicate(1, &a, 200));
        for i in [0, 50, 159] {
            let mut b = vec![7u8; 200];
            b[i] ^= 0x80;
            assert!(!d.is_duplicate(2, &b, 200), "byte {i} differs");
        }
    }

    #[test]
    fn a_frame_with_the_same_fingerprint_but_other_bytes_is_not_a_duplicate() {
        // Word 0 counts as is, word 1 rotated left by 7 (×128): 1 + 2·128 = 129 + 1·128.
        let a = [1u8, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        let c = [129u8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(fingerprint(&a, 16, 16), fingerprint(&c, 16, 16), "the collision this test needs");
        let mut d = DuplicateFilter::default();
        assert!(!d.is_duplicate(0, &a, 16));
        assert!(!d.is_duplicate(1, &c, 16), "a fingerprint collision must not drop a frame");
        assert!(d.is_duplicate(2, &a, 16));
    }
}
