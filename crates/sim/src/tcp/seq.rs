//! TCP sequence-number arithmetic (RFC 9293 §3.4, RFC 1982 serial-number style).
//!
//! On the wire sequence numbers are 32-bit and wrap; inside the endpoint every stream position is
//! a 64-bit *offset* from the initial sequence number (offset 0 is the SYN, data starts at 1), so
//! nothing in the scoreboard or the receive queue ever compares wrapped values. The two helpers
//! here are the only place where wire values are converted: [`to_wire`] (offset → seq) and
//! [`unwrap`] (seq → offset, relative to a nearby known offset). Linux does the same comparisons
//! with `before()`/`after()` (include/net/tcp.h); they are valid while the two values are less
//! than 2^31 apart, which TCP's window limit (2^30 with window scaling) guarantees.

/// `a` is strictly before `b` in sequence space.
#[inline]
pub fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a` is before or equal to `b`.
#[inline]
pub fn seq_le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

/// Wire sequence number of stream offset `off` for a stream whose initial sequence number is `isn`.
#[inline]
pub fn to_wire(isn: u32, off: u64) -> u32 {
    isn.wrapping_add(off as u32)
}

/// Stream offset of wire value `seq`, given a reference offset `near` known to be within 2^31 of
/// it. Returns a signed value so that a sequence number just *before* offset 0 (a keep-alive or
/// zero-window probe using SND.UNA − 1 right after the SYN) is representable.
#[inline]
pub fn unwrap(isn: u32, near: u64, seq: u32) -> i64 {
    tcpvideo_model::seq::unwrap_seq(seq, isn, near)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_wraparound_is_handled() {
        let isn = u32::MAX - 10;
        // Offset 20 lies past the wrap.
        let w = to_wire(isn, 20);
        assert_eq!(w, 9);
        assert!(seq_lt(isn, w));
        assert!(seq_lt(to_wire(isn, 5), w));
        assert!(!seq_lt(w, isn));
        assert!(seq_le(w, w));
        assert_eq!(unwrap(isn, 5, w), 20);
        assert_eq!(unwrap(isn, 30, w), 20);
        // One before the SYN.
        assert_eq!(unwrap(isn, 0, isn.wrapping_sub(1)), -1);
        // Far offsets (several wraps of the 32-bit space) still map back exactly.
        let far = 5 * (1u64 << 32) + 123;
        assert_eq!(unwrap(isn, far - 1000, to_wire(isn, far)), far as i64);
    }
}
