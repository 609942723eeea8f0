//! Which held segments the edge fetches ahead (ETHLE §III-A, Figs. 3 and 4).
//!
//! The edge stays x segments ahead of the *most advanced* receiver of a stream: when a hold-x
//! receiver is served up to sequence n (a playlist ending at n, or a request for segment n), the
//! segments n+1 ..= n+x that the source already lists are fetched, all at once (up to x parallel
//! connections: the catch-up of Fig. 3). Once the edge is ahead, each later step asks for one new
//! segment, which is the single connection that keeps the lead. Segments already cached or being
//! fetched are skipped by the fetcher, so asking again is free.

/// Sequence numbers to prefetch after serving up to `served_up_to`, holding `x`, when the source
/// lists segments up to `newest_listed`.
pub fn held_segments_to_fetch(
    served_up_to: u64,
    x: u32,
    newest_listed: u64,
) -> std::ops::RangeInclusive<u64> {
    let first = served_up_to.saturating_add(1);
    let last = served_up_to.saturating_add(x as u64).min(newest_listed);
    first..=last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_at_14_holding_two_makes_the_edge_fetch_15_and_16() {
        // The paper's Fig. 3: segment 14 requested, 15 and 16 held and downloaded in parallel.
        assert_eq!(
            held_segments_to_fetch(14, 2, 16).collect::<Vec<_>>(),
            [15, 16]
        );
    }

    #[test]
    fn nothing_beyond_what_the_source_lists_is_fetched() {
        assert_eq!(held_segments_to_fetch(14, 3, 15).collect::<Vec<_>>(), [15]);
        assert_eq!(held_segments_to_fetch(16, 2, 16).count(), 0);
    }

    #[test]
    fn hold_zero_fetches_nothing_ahead() {
        assert_eq!(held_segments_to_fetch(14, 0, 20).count(), 0);
    }
}
