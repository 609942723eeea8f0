//! A publisher's frame source: the H.264 + voice stream of seed 000 §1.1.
//!
//! "Frame I is the key frame with the largest size (10 – 100 kbytes) and the slowest production
//! rate (0.25 f/s). Frames P and B [...] with size ranging between 2 and 10 kbytes. The average
//! production speed of frame P is 25 f/s and is adaptive according to the network quality.
//! Frame V carries voice data with size less than 1 kbytes and production speed of about 25 f/s."
//!
//! Model: a 40 ms frame slot; slot k carries a video frame (an I frame when k is a multiple of
//! 100, i.e. every 4 s, else a P frame) then an audio frame. Sizes are log-normal, clipped to the
//! seed's ranges: I median 25 kB (σ 0.5, clipped to 10–100 kB; mean ≈ 29 kB, Table 4 reports
//! 30 kB), P median 3.2 kB (σ 0.35, 2–10 kB; Table 4: 3.4 kB), audio uniform 120–260 bytes
//! (Table 4: 189 bytes). These medians and spreads are our choice within the seed's ranges.
//!
//! Rate adaptation ("adaptive according to the network quality"): when the publisher's
//! unacknowledged backlog exceeds [`BACKLOG_SKIP_BYTES`] a P frame is not produced (the encoder
//! drops its frame rate) and P sizes shrink by 10 % (down to 60 %); otherwise they recover by 1 %
//! per slot. The seed gives no algorithm; this is the simplest rule that lowers the frame rate
//! and size when the uplink falls behind (Table 4's P interval of 81 ms against 40 ms nominal
//! says real publishers skip about half their P frames).

use std::time::Duration;

use rand::Rng;
use rand_pcg::Pcg64;

use super::flv_wire::TagKind;

/// Length of a frame slot (25 f/s).
pub const SLOT: Duration = Duration::from_millis(40);
/// Slots between key frames (4 s).
pub const SLOTS_PER_GOP: u64 = 100;
/// Unacknowledged upload backlog above which P frames are skipped (about 0.5 s of stream).
pub const BACKLOG_SKIP_BYTES: u64 = 48_000;

/// One produced frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub kind: TagKind,
    pub bytes: u32,
    /// FLV timestamp (ms since the stream began).
    pub ts_ms: u32,
}

/// The frame generator of one publisher.
#[derive(Clone, Debug)]
pub struct FrameSource {
    rng: Pcg64,
    p_scale: f64,
    pub skipped_p: u64,
}

fn lognormal(rng: &mut Pcg64, median: f64, sigma: f64) -> f64 {
    // Box–Muller: one standard normal from two uniforms.
    let u1: f64 = rng.gen::<f64>().max(1e-12);
    let u2: f64 = rng.gen();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    median * (sigma * z).exp()
}

impl FrameSource {
    pub fn new(rng: Pcg64) -> Self {
        FrameSource { rng, p_scale: 1.0, skipped_p: 0 }
    }

    /// The frames of slot `k`, given the publisher's current unacknowledged backlog.
    pub fn slot(&mut self, k: u64, backlog_bytes: u64, out: &mut Vec<Frame>) {
        let ts_ms = (k * SLOT.as_millis() as u64) as u32;
        let congested = backlog_bytes > BACKLOG_SKIP_BYTES;
        if congested {
            self.p_scale = (self.p_scale * 0.9).max(0.6);
        } else {
            self.p_scale = (self.p_scale + 0.01).min(1.0);
        }
        // Draw every size every slot so one decision never shifts later sizes (determinism across
        // rate-adaptation changes of other flows is not needed, but it keeps sizes comparable).
        let i = lognormal(&mut self.rng, 25_000.0, 0.5).clamp(10_000.0, 100_000.0) as u32;
        let p = (lognormal(&mut self.rng, 3_200.0, 0.35) * self.p_scale).clamp(2_000.0, 10_000.0) as u32;
        let a = self.rng.gen_range(120..=260u32);
        if k.is_multiple_of(SLOTS_PER_GOP) {
            out.push(Frame { kind: TagKind::I, bytes: i, ts_ms });
        } else if congested {
            self.skipped_p += 1;
        } else {
            out.push(Frame { kind: TagKind::P, bytes: p, ts_ms });
        }
        out.push(Frame { kind: TagKind::Audio, bytes: a, ts_ms });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    #[test]
    fn sizes_stay_in_the_seeds_ranges_and_key_frames_come_every_four_seconds() {
        let mut s = FrameSource::new(sub_rng(1, 5));
        let mut out = Vec::new();
        for k in 0..1000 {
            s.slot(k, 0, &mut out);
        }
        let of = |kind| out.iter().filter(|f| f.kind == kind).map(|f| f.bytes).collect::<Vec<_>>();
        let (i, p, a) = (of(TagKind::I), of(TagKind::P), of(TagKind::Audio));
        assert_eq!(i.len(), 10, "one I frame per 100 slots");
        assert_eq!(p.len(), 990);
        assert_eq!(a.len(), 1000);
        assert!(i.iter().all(|&b| (10_000..=100_000).contains(&b)));
        assert!(p.iter().all(|&b| (2_000..=10_000).contains(&b)));
        assert!(a.iter().all(|&b| b < 1000));
        let mean_p = p.iter().map(|&b| b as f64).sum::<f64>() / p.len() as f64;
        assert!((3_000.0..3_800.0).contains(&mean_p), "mean P {mean_p}");
    }

    #[test]
    fn a_backlogged_uplink_skips_p_frames_but_never_key_frames_or_audio() {
        let mut s = FrameSource::new(sub_rng(1, 5));
        let mut out = Vec::new();
        for k in 0..200 {
            s.slot(k, BACKLOG_SKIP_BYTES + 1, &mut out);
        }
        assert!(out.iter().all(|f| f.kind != TagKind::P));
        assert_eq!(out.iter().filter(|f| f.kind == TagKind::I).count(), 2);
        assert_eq!(out.iter().filter(|f| f.kind == TagKind::Audio).count(), 200);
        assert_eq!(s.skipped_p, 198);
    }
}
