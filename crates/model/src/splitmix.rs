//! SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014): a 64-bit counter advanced by the golden-ratio increment and passed through a
//! finalizer. Tiny and seedable; tcpvideo uses it to derive seeds (the simulator's per-stream RNGs,
//! a connection's congestion-control seed) and for BBR's PROBE_BW start phase, never as a global
//! RNG, so runs are reproducible.

/// The golden-ratio increment 2^64 / φ (the generator's step).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function of one step: `mix(z + γ)`, i.e. the first draw of a generator
/// seeded with `z`. Neighbouring inputs give unrelated outputs (a seed-derivation hash).
pub fn splitmix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator: state advanced by γ per draw.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let out = splitmix64(self.0);
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        out
    }

    /// Uniform in `0..n` (Linux `prandom_u32_max`: multiply-shift of a 32-bit draw).
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_outputs_match_the_reference_sequence_for_seed_zero() {
        // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn seed_hash_is_the_first_draw_of_a_generator_with_that_seed() {
        for seed in [0, 1, 42, u64::MAX] {
            assert_eq!(splitmix64(seed), SplitMix64::new(seed).next_u64());
        }
    }
}
