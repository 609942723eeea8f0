//! A seeded variable-bitrate (VBR) model of segment and frame sizes.
//!
//! What it models: seed 004 streams a VBR-encoded soccer match (its ref. 19); sizes of the same
//! quality differ from segment to segment, and they differ together across qualities because
//! every representation encodes the same scene. Inside a segment, the first frame is an I-frame
//! (seed 004 §IV-B) and the rest are P-frames, much smaller.
//!
//! The model:
//! - segment `k` has a complexity `X_k`, drawn once per segment and shared by every quality:
//!   `X_k ~ LogNormal(μ = −σ²/2, σ)` with `σ² = ln(1 + cv²)`, so `E[X_k] = 1` and the coefficient
//!   of variation of segment sizes is `cv`; `size(k, q) = round(bitrate(q) · d / 8 · X_k)`, hence
//!   the long-run average of each quality is its nominal bitrate;
//! - a segment of `n` frames is one I-frame of `r` P-frame sizes followed by `n − 1` equal
//!   P-frames: `P = size / (r + n − 1)`, `I = size − (n − 1)·P`.
//!
//! Source of the distribution: log-normal frame and group-of-pictures sizes are the classic fit to
//! MPEG VBR traces (Krunz, Sass & Hughes, "Statistical characteristics and multiplexing of MPEG
//! streams", INFOCOM 1995; Rose, "Statistical properties of MPEG video traffic", 1995, who also
//! reports gamma fits). The parameter values below are **our defaults, not fitted** to seed 004's
//! stream (which is not available): cv = 0.25 and r = 5 (H.264 I-frames are typically 3–10× a
//! P-frame). Deviations: no B-frames, no per-frame randomness inside a segment, no correlation
//! between consecutive segments' complexities.

use std::time::Duration;

use rand_distr::{Distribution, LogNormal};

use super::content::{Ladder, DEFAULT_FRAME_RATE};
use super::error::VideoError;

/// Parameters of the VBR model.
#[derive(Clone, Debug, PartialEq)]
pub struct VbrModel {
    /// Coefficient of variation of segment sizes (standard deviation / mean), dimensionless.
    pub segment_cv: f64,
    /// Size of a segment's leading I-frame in P-frame sizes, dimensionless.
    pub i_to_p_ratio: f64,
    /// Frames per second.
    pub frame_rate: u32,
}

impl Default for VbrModel {
    fn default() -> Self {
        VbrModel {
            segment_cv: 0.25,
            i_to_p_ratio: 5.0,
            frame_rate: DEFAULT_FRAME_RATE,
        }
    }
}

impl VbrModel {
    /// Reject values outside the model's range, naming the key.
    pub fn validate(&self) -> Result<(), VideoError> {
        if !self.segment_cv.is_finite() || self.segment_cv < 0.0 {
            return Err(VideoError::invalid(
                "video.vbr.segment_cv",
                format!("must be ≥ 0, got {}", self.segment_cv),
            ));
        }
        if !self.i_to_p_ratio.is_finite() || self.i_to_p_ratio < 1.0 {
            return Err(VideoError::invalid(
                "video.vbr.i_to_p_ratio",
                format!("must be ≥ 1, got {}", self.i_to_p_ratio),
            ));
        }
        if self.frame_rate == 0 {
            return Err(VideoError::invalid(
                "video.vbr.frame_rate",
                "must be at least 1 frame per second",
            ));
        }
        Ok(())
    }

    /// Draw the size table `[segment][quality]` in bytes.
    pub fn draw_sizes<R: rand::Rng + ?Sized>(
        &self,
        ladder: &Ladder,
        segment_duration: Duration,
        segment_count: u64,
        rng: &mut R,
    ) -> Vec<Vec<u64>> {
        // a model that skipped validate() degrades to constant sizes instead of panicking
        let sigma = (1.0 + self.segment_cv * self.segment_cv).ln().sqrt();
        let complexity = LogNormal::new(-sigma * sigma / 2.0, sigma).ok();
        let frames =
            ((segment_duration.as_nanos() * self.frame_rate as u128 / 1_000_000_000) as u64).max(1);
        (0..segment_count)
            .map(|_| {
                let x: f64 = complexity.as_ref().map_or(1.0, |c| c.sample(rng));
                ladder
                    .bitrates()
                    .iter()
                    // at least one byte per frame, so every frame exists on the wire
                    .map(|b| ((b.bytes_in(segment_duration) as f64 * x).round() as u64).max(frames))
                    .collect()
            })
            .collect()
    }
}

/// Split `total_bytes` into `frames` frames: I-frame of `i_to_p_ratio` P-frames first, then equal
/// P-frames; the integer remainder goes to the I-frame so the sum is exact.
pub fn split_into_frames(total_bytes: u64, frames: u64, i_to_p_ratio: f64) -> Vec<u64> {
    let frames = frames.max(1);
    if frames == 1 {
        return vec![total_bytes];
    }
    let p = (total_bytes as f64 / (i_to_p_ratio + (frames - 1) as f64)).floor() as u64;
    let i = total_bytes - p * (frames - 1);
    let mut out = Vec::with_capacity(frames as usize);
    out.push(i);
    out.extend(std::iter::repeat_n(p, (frames - 1) as usize));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn draw(seed: u64, n: u64) -> Vec<Vec<u64>> {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        VbrModel::default().draw_sizes(&Ladder::seed004(), Duration::from_secs(2), n, &mut rng)
    }

    #[test]
    fn same_seed_gives_the_same_sizes_and_another_seed_does_not() {
        assert_eq!(draw(7, 50), draw(7, 50));
        assert_ne!(draw(7, 50), draw(8, 50));
    }

    #[test]
    fn long_run_average_is_the_nominal_bitrate_and_spread_is_the_configured_cv() {
        let sizes = draw(1, 20_000);
        let q1: Vec<f64> = sizes.iter().map(|r| r[1] as f64).collect();
        let mean = q1.iter().sum::<f64>() / q1.len() as f64;
        let sd = (q1.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / q1.len() as f64).sqrt();
        // 500 kbit/s × 2 s = 125 000 bytes; standard error of the mean ≈ 0.25·125k/√20000 ≈ 221 B
        assert!((mean - 125_000.0).abs() < 1_000.0, "mean {mean}");
        assert!((sd / mean - 0.25).abs() < 0.01, "cv {}", sd / mean);
    }

    #[test]
    fn qualities_of_one_segment_share_its_complexity() {
        for row in draw(3, 100) {
            // 3000 kbit/s is 12× 250 kbit/s in every segment (up to rounding)
            let ratio = row[5] as f64 / row[0] as f64;
            assert!((ratio - 12.0).abs() < 0.01, "{row:?}");
        }
    }

    #[test]
    fn split_puts_the_remainder_in_the_i_frame() {
        let f = split_into_frames(1000, 4, 5.0); // P = floor(1000/8) = 125, I = 1000 − 375 = 625
        assert_eq!(f, vec![625, 125, 125, 125]);
    }

    #[test]
    fn negative_cv_is_rejected_by_key() {
        let m = VbrModel {
            segment_cv: -0.1,
            ..VbrModel::default()
        };
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("video.vbr.segment_cv:"));
    }
}
