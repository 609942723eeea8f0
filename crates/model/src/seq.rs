//! TCP sequence-number arithmetic (RFC 9293 §3.4: 32-bit sequence space, modulo 2^32): a wire
//! value to a 64-bit stream offset. Shared by the simulator's endpoint (`sim::tcp::seq`), which
//! knows its ISN, and the capture analyzer (`trace::flow`), which takes the first sequence number
//! it sees as the base: both unwrap the same way.

/// Stream offset of the 32-bit wire value `seq`, counted from `base` (the ISN or any wire value of
/// offset 0), choosing the offset nearest to `near`, which must be within 2^31 of the answer.
/// Signed, so that a value just *before* offset 0 (SND.UNA − 1 of a probe right after the SYN,
/// or a segment seen before the first one captured) is representable.
#[inline]
pub fn unwrap_seq(seq: u32, base: u32, near: u64) -> i64 {
    let delta = seq.wrapping_sub(base.wrapping_add(near as u32)) as i32;
    near as i64 + delta as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_crosses_the_32_bit_boundary_in_both_directions() {
        let base = u32::MAX - 10;
        assert_eq!(unwrap_seq(base.wrapping_add(20), base, 0), 20, "offset 20 lies past the wrap");
        assert_eq!(unwrap_seq(base.wrapping_sub(1), base, 0), -1, "one before offset 0");
        let near = (1u64 << 32) + 5;
        assert_eq!(unwrap_seq(base.wrapping_add(near as u32).wrapping_add(3), base, near), near as i64 + 3);
        assert_eq!(unwrap_seq(base.wrapping_add(near as u32).wrapping_sub(3), base, near), near as i64 - 3);
    }
}
