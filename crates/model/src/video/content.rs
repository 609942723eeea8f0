//! Content: what a video is to the network — a representation ladder, a segment duration, and the
//! size in bytes of every segment in every quality.
//!
//! Sources:
//! - the default ladder is seed 004 (Kupka, Halvorsen, Griwodz) Table I: 250, 500, 750, 1000,
//!   1500, 3000 kbit/s; segment duration 2 s (seed 004 §IV, 10 s in §IV-B);
//! - sizes come from one of three [`SizeSource`]s: constant bitrate (size = bitrate · duration / 8,
//!   exactly), the seeded VBR model of [`super::vbr`], or a user's CSV table ([`super::size_table`]),
//!   the way SABRE takes a manifest of segment sizes.
//!
//! Every segment starts with an I-frame (seed 004 §IV-B: "quality switching between segments
//! requires that every segment starts with an intra encoded frame"); [`Content::frame_sizes`]
//! splits a segment into frames for the frame-level (progressive) player.
//!
//! Units: bitrates are [`Bandwidth`], durations `Duration`, sizes `u64` bytes.

use std::time::Duration;

use super::error::VideoError;
use super::vbr::VbrModel;
use crate::units::Bandwidth;

/// Seed 004 Table I, in kbit/s (quality 0 .. 5).
pub const SEED004_LADDER_KBPS: [u64; 6] = [250, 500, 750, 1000, 1500, 3000];

/// The representations a stream is encoded in, lowest first. Quality `q` is an index into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ladder {
    bitrates: Vec<Bandwidth>,
}

impl Ladder {
    /// Seed 004 Table I.
    pub fn seed004() -> Ladder {
        Ladder {
            bitrates: SEED004_LADDER_KBPS
                .iter()
                .map(|k| Bandwidth::from_bps(k * 1000))
                .collect(),
        }
    }

    /// From user input in kbit/s (scenario key `key`, e.g. `"video.ladder_kbps"`): rejects an empty
    /// list, non-positive or non-finite values, and a ladder that does not increase strictly.
    pub fn from_kbps(key: &str, kbps: &[f64]) -> Result<Ladder, VideoError> {
        if kbps.is_empty() {
            return Err(VideoError::EmptyLadder {
                key: key.to_string(),
            });
        }
        let mut bitrates = Vec::with_capacity(kbps.len());
        for (i, &k) in kbps.iter().enumerate() {
            if !k.is_finite() || k <= 0.0 {
                return Err(VideoError::NonPositiveBitrate {
                    key: format!("{key}[{i}]"),
                    value: format!("{k}"),
                });
            }
            if i > 0 && k <= kbps[i - 1] {
                return Err(VideoError::LadderNotIncreasing {
                    key: format!("{key}[{i}]"),
                    value: k,
                    previous: kbps[i - 1],
                });
            }
            bitrates.push(Bandwidth::from_bps((k * 1000.0).round() as u64));
        }
        Ok(Ladder { bitrates })
    }

    /// Number of qualities.
    pub fn len(&self) -> usize {
        self.bitrates.len()
    }

    /// Always false for a constructed ladder (constructors reject empty ones); for clippy.
    pub fn is_empty(&self) -> bool {
        self.bitrates.is_empty()
    }

    /// Nominal (average) bitrate of quality `q`.
    pub fn bitrate(&self, quality: usize) -> Bandwidth {
        self.bitrates[quality.min(self.bitrates.len() - 1)]
    }

    /// All bitrates, lowest first.
    pub fn bitrates(&self) -> &[Bandwidth] {
        &self.bitrates
    }

    /// Highest quality index.
    pub fn top(&self) -> usize {
        self.bitrates.len() - 1
    }
}

/// Where the per-segment sizes come from.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeSource {
    /// Constant bitrate: every segment of quality q is bitrate(q) · d / 8 bytes.
    Cbr,
    /// The seeded VBR model (log-normal segment complexity, I-frame at each segment start).
    Vbr(VbrModel),
}

/// A stream: ladder, segment duration, segment count, and the size table.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    ladder: Ladder,
    segment_duration: Duration,
    /// sizes[segment][quality] in bytes.
    sizes_bytes: Vec<Vec<u64>>,
    /// Frames per second, for [`Content::frame_sizes`].
    frame_rate: u32,
    /// Size of a segment's leading I-frame relative to one of its P-frames (see [`super::vbr`]).
    i_to_p_ratio: f64,
}

/// Default frame rate when none is given (25 fps, European broadcast such as seed 004's soccer).
pub const DEFAULT_FRAME_RATE: u32 = 25;

impl Content {
    /// Constant bitrate content: `segment_count` segments of `segment_duration` for every rung.
    pub fn cbr(
        ladder: Ladder,
        segment_duration: Duration,
        segment_count: u64,
    ) -> Result<Content, VideoError> {
        check_duration(segment_duration)?;
        let per_quality: Vec<u64> = ladder
            .bitrates()
            .iter()
            .map(|b| b.bytes_in(segment_duration))
            .collect();
        let sizes_bytes = (0..segment_count).map(|_| per_quality.clone()).collect();
        Ok(Content {
            ladder,
            segment_duration,
            sizes_bytes,
            frame_rate: DEFAULT_FRAME_RATE,
            i_to_p_ratio: VbrModel::default().i_to_p_ratio,
        })
    }

    /// Sizes drawn from the VBR model with the caller's seeded generator (same seed ⇒ same sizes).
    pub fn vbr<R: rand::Rng + ?Sized>(
        ladder: Ladder,
        segment_duration: Duration,
        segment_count: u64,
        model: &VbrModel,
        rng: &mut R,
    ) -> Result<Content, VideoError> {
        check_duration(segment_duration)?;
        model.validate()?;
        let sizes_bytes = model.draw_sizes(&ladder, segment_duration, segment_count, rng);
        Ok(Content {
            ladder,
            segment_duration,
            sizes_bytes,
            frame_rate: model.frame_rate,
            i_to_p_ratio: model.i_to_p_ratio,
        })
    }

    /// From a size table already parsed and checked by [`super::size_table::parse_size_table`].
    pub fn from_table(
        ladder: Ladder,
        segment_duration: Duration,
        sizes_bytes: Vec<Vec<u64>>,
    ) -> Result<Content, VideoError> {
        check_duration(segment_duration)?;
        for (s, row) in sizes_bytes.iter().enumerate() {
            if row.len() < ladder.len() {
                return Err(VideoError::SizeTableMissing {
                    key: "video.size_table".into(),
                    segment: s as u64,
                    quality: row.len(),
                });
            }
        }
        Ok(Content {
            ladder,
            segment_duration,
            sizes_bytes,
            frame_rate: DEFAULT_FRAME_RATE,
            i_to_p_ratio: VbrModel::default().i_to_p_ratio,
        })
    }

    /// From the text of a CSV size table (`segment,quality,bytes`, see [`super::size_table`]);
    /// `key` names the input in errors.
    pub fn from_csv(
        ladder: Ladder,
        segment_duration: Duration,
        key: &str,
        csv_text: &str,
    ) -> Result<Content, VideoError> {
        let sizes = super::size_table::parse_size_table(key, csv_text, ladder.len())?;
        Content::from_table(ladder, segment_duration, sizes)
    }

    /// Build from a [`SizeSource`] (CBR or VBR); the RNG is only drawn from for VBR.
    pub fn build<R: rand::Rng + ?Sized>(
        ladder: Ladder,
        segment_duration: Duration,
        segment_count: u64,
        source: &SizeSource,
        rng: &mut R,
    ) -> Result<Content, VideoError> {
        match source {
            SizeSource::Cbr => Content::cbr(ladder, segment_duration, segment_count),
            SizeSource::Vbr(model) => {
                Content::vbr(ladder, segment_duration, segment_count, model, rng)
            }
        }
    }

    pub fn ladder(&self) -> &Ladder {
        &self.ladder
    }

    pub fn segment_duration(&self) -> Duration {
        self.segment_duration
    }

    /// Number of segments in the stream.
    pub fn segment_count(&self) -> u64 {
        self.sizes_bytes.len() as u64
    }

    /// Media duration of the whole stream.
    pub fn total_duration(&self) -> Duration {
        self.segment_duration * self.sizes_bytes.len() as u32
    }

    /// Size of `segment` in `quality`, bytes; `None` past the end of the stream or the ladder.
    pub fn segment_bytes(&self, segment: u64, quality: usize) -> Option<u64> {
        self.sizes_bytes
            .get(segment as usize)
            .and_then(|row| row.get(quality))
            .copied()
    }

    /// Sizes of `segment` in every quality (what a HEAD per quality answers), lowest first.
    pub fn segment_sizes(&self, segment: u64) -> Option<&[u64]> {
        self.sizes_bytes
            .get(segment as usize)
            .map(|r| &r[..self.ladder.len()])
    }

    /// Peak segment bitrate of `quality` over the stream (RFC 8216 §4.3.4.2 BANDWIDTH).
    pub fn peak_bitrate(&self, quality: usize) -> Bandwidth {
        let max = self
            .sizes_bytes
            .iter()
            .map(|r| r[quality])
            .max()
            .unwrap_or(0);
        Bandwidth::from_bytes_per(max, self.segment_duration)
    }

    /// Average bitrate of `quality` over the stream (RFC 8216 AVERAGE-BANDWIDTH).
    pub fn average_bitrate(&self, quality: usize) -> Bandwidth {
        let total: u64 = self
            .sizes_bytes
            .iter()
            .filter_map(|r| r.get(quality).copied())
            .sum();
        Bandwidth::from_bytes_per(total, self.total_duration())
    }

    pub fn frame_rate(&self) -> u32 {
        self.frame_rate
    }

    /// Frames per segment (at least one: the I-frame).
    pub fn frames_per_segment(&self) -> u64 {
        ((self.segment_duration.as_nanos() * self.frame_rate as u128 / 1_000_000_000) as u64).max(1)
    }

    /// Frame sizes of the whole stream in one quality, segment after segment: the file a
    /// progressive download carries (for [`super::frame_player::FramePlayer`]).
    pub fn progressive_frames(&self, quality: usize) -> Vec<u64> {
        (0..self.segment_count())
            .flat_map(|k| self.frame_sizes(k, quality))
            .collect()
    }

    /// Frame sizes of one segment: an I-frame of `i_to_p_ratio` P-frames, then P-frames sharing the
    /// rest equally; the sizes add up to the segment's size exactly (the remainder of the integer
    /// division goes to the I-frame).
    pub fn frame_sizes(&self, segment: u64, quality: usize) -> Vec<u64> {
        let total = self.segment_bytes(segment, quality).unwrap_or(0);
        super::vbr::split_into_frames(total, self.frames_per_segment(), self.i_to_p_ratio)
    }
}

fn check_duration(d: Duration) -> Result<(), VideoError> {
    if d.is_zero() {
        return Err(VideoError::invalid(
            "video.segment_duration",
            "must be longer than zero",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ladder_is_seed004_table_one() {
        let l = Ladder::seed004();
        let kbps: Vec<u64> = l.bitrates().iter().map(|b| b.bits_per_sec / 1000).collect();
        assert_eq!(kbps, vec![250, 500, 750, 1000, 1500, 3000]);
    }

    #[test]
    fn cbr_segment_of_500_kbit_for_2_s_is_125_kb() {
        let c = Content::cbr(Ladder::seed004(), Duration::from_secs(2), 3).unwrap();
        assert_eq!(c.segment_bytes(2, 1), Some(125_000));
        assert_eq!(c.segment_bytes(3, 1), None);
        assert_eq!(
            c.segment_sizes(0).unwrap(),
            &[62_500, 125_000, 187_500, 250_000, 375_000, 750_000]
        );
    }

    #[test]
    fn negative_bitrate_is_an_error_naming_the_rung() {
        let e = Ladder::from_kbps("video.ladder_kbps", &[250.0, -500.0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "video.ladder_kbps[1]: bitrate must be a positive number of kbit/s, got -500"
        );
    }

    #[test]
    fn decreasing_ladder_is_an_error() {
        let e = Ladder::from_kbps("video.ladder_kbps", &[500.0, 250.0]).unwrap_err();
        assert!(matches!(e, VideoError::LadderNotIncreasing { .. }), "{e}");
    }

    #[test]
    fn frames_of_a_segment_add_up_and_start_with_the_largest() {
        let c = Content::cbr(Ladder::seed004(), Duration::from_secs(2), 1).unwrap();
        let f = c.frame_sizes(0, 1);
        assert_eq!(f.len(), 50);
        assert_eq!(f.iter().sum::<u64>(), 125_000);
        assert!(f[0] > f[1] * 4, "I-frame {} vs P-frame {}", f[0], f[1]);
    }

    #[test]
    fn a_csv_table_becomes_content_and_a_gap_is_named() {
        let ladder = Ladder::from_kbps("ladder", &[500.0, 1000.0]).unwrap();
        let csv = "segment,quality,bytes\n0,0,100\n0,1,200\n1,0,110\n1,1,220\n";
        let c =
            Content::from_csv(ladder.clone(), Duration::from_secs(2), "sizes.csv", csv).unwrap();
        assert_eq!((c.segment_count(), c.segment_bytes(1, 1)), (2, Some(220)));
        let e = Content::from_csv(ladder, Duration::from_secs(2), "sizes.csv", "0,0,100\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "sizes.csv: size table has no row for segment 0 quality 1"
        );
    }

    #[test]
    fn the_progressive_file_is_every_segment_with_an_i_frame_at_each_start() {
        let c = Content::cbr(Ladder::seed004(), Duration::from_secs(2), 3).unwrap();
        let f = c.progressive_frames(1);
        assert_eq!((f.len(), f.iter().sum::<u64>()), (150, 375_000));
        assert!(f[50] > f[49] && f[100] > f[99], "I-frames at 0, 50, 100");
    }
}
