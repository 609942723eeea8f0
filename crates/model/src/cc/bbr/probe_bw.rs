//! PROBE_BW: the eight-phase pacing-gain cycle (Linux `bbr_pacing_gain`, `bbr_is_next_cycle_phase`,
//! `bbr_reset_probe_bw_mode`).
//!
//! Gains {5/4, 3/4, 1, 1, 1, 1, 1, 1}: one min-RTT probing for more bandwidth, one draining the
//! queue that probe made, six cruising. A phase lasts at least one min_rtt; the 5/4 phase also
//! waits until in-flight reaches 5/4·BDP (or a loss), the 3/4 phase ends early once in-flight has
//! drained to one BDP. The cycle starts at a random phase other than the 3/4 one (Linux: index
//! `CYCLE_LEN − 1 − rand(7)`, then advanced once) so competing flows do not probe in lockstep.
//! The random draw comes from a seeded SplitMix64 (`crate::splitmix`) — never a global RNG — so
//! runs are reproducible.

pub const CYCLE_LEN: usize = 8;

/// Pacing gains in `UNIT`s (256): 5/4, 3/4, then six times 1.
pub const PACING_GAIN: [u64; CYCLE_LEN] = [320, 192, 256, 256, 256, 256, 256, 256];

pub use crate::splitmix::SplitMix64;

/// Phase index PROBE_BW starts in: Linux picks `CYCLE_LEN − 1 − rand(cycle_rand)` and advances
/// once, so with `cycle_rand` = 7 the start is uniform over every phase except 1 (gain 3/4).
pub fn random_start_phase(rng: &mut SplitMix64, cycle_rand: u32) -> usize {
    let idx = CYCLE_LEN - 1 - rng.below(cycle_rand.clamp(1, CYCLE_LEN as u32 - 1)) as usize;
    (idx + 1) % CYCLE_LEN
}

/// Linux `bbr_is_next_cycle_phase`. `full_length`: the phase has lasted more than min_rtt;
/// `inflight`: segments in the network (at the next departure); `target_1`, `target_gain`: the
/// in-flight targets at gain 1 and at this phase's gain.
pub fn is_next_phase(gain: u64, full_length: bool, had_losses: bool, inflight: u64, target_1: u64, target_gain: u64) -> bool {
    use super::pacing::UNIT;
    if gain == UNIT {
        return full_length;
    }
    if gain > UNIT {
        // Probing up: keep going until the pipe holds gain·BDP, unless a loss says stop.
        return full_length && (had_losses || inflight >= target_gain);
    }
    // Draining: leave as soon as the queue is gone, or after a full min_rtt.
    full_length || inflight <= target_1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_phase_is_never_the_drain_phase_and_covers_the_other_seven() {
        let mut rng = SplitMix64::new(42);
        let mut seen = [0u32; CYCLE_LEN];
        for _ in 0..7000 {
            seen[random_start_phase(&mut rng, 7)] += 1;
        }
        assert_eq!(seen[1], 0, "{seen:?}");
        for (i, n) in seen.iter().enumerate() {
            if i != 1 {
                assert!(*n > 800 && *n < 1200, "phase {i} drawn {n} times of 7000: {seen:?}");
            }
        }
    }

    #[test]
    fn same_seed_same_phases() {
        let a: Vec<usize> = { let mut r = SplitMix64::new(7); (0..20).map(|_| random_start_phase(&mut r, 7)).collect() };
        let b: Vec<usize> = { let mut r = SplitMix64::new(7); (0..20).map(|_| random_start_phase(&mut r, 7)).collect() };
        assert_eq!(a, b);
    }

    #[test]
    fn up_phase_waits_for_inflight_and_down_phase_leaves_early() {
        assert!(!is_next_phase(320, true, false, 40, 35, 45), "5/4 phase: in-flight below 5/4 BDP");
        assert!(is_next_phase(320, true, false, 45, 35, 45));
        assert!(is_next_phase(320, true, true, 40, 35, 45), "a loss ends the probe");
        assert!(is_next_phase(192, false, false, 35, 35, 27), "3/4 phase ends once in-flight <= BDP");
        assert!(!is_next_phase(192, false, false, 40, 35, 27));
        assert!(!is_next_phase(256, false, false, 0, 35, 35));
    }
}
