//! The live source: when each segment exists, and which segments the live playlist lists.
//!
//! Seed 004 §I/§V: a segment becomes available "as soon as it has been recorded, completely
//! encoded and uploaded"; the stream starts being recorded at `t0`, so segment `k` (covering media
//! `[k·d, (k+1)·d)`) is available at `t0 + (k+1)·d`. Encoding and upload take no time here (the
//! paper's simulation makes the same assumption); a scenario that needs a packaging delay adds it
//! to `t0`.
//!
//! The live media playlist lists a sliding window of the newest `window_segments` available
//! segments (RFC 8216 §6.2.2: the server removes segments from the start of a live playlist and
//! bumps EXT-X-MEDIA-SEQUENCE). An on-demand stream is every segment available from time zero.

use std::time::Duration;

use super::error::VideoError;
use crate::units::Time;

/// Default sliding window: 5 segments (hls.js and most packagers keep 3–10; RFC 8216 §6.2.2 asks
/// for at least three target durations).
pub const DEFAULT_WINDOW_SEGMENTS: u64 = 5;

/// A live stream on a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveSource {
    /// When recording of segment 0 starts.
    pub t0: Time,
    /// Media duration of every segment.
    pub segment_duration: Duration,
    /// Number of segments the event lasts (the stream ends after the last one).
    pub segment_count: u64,
    /// Segments listed in the live media playlist.
    pub window_segments: u64,
}

impl LiveSource {
    pub fn new(
        t0: Time,
        segment_duration: Duration,
        segment_count: u64,
        window_segments: u64,
    ) -> Result<LiveSource, VideoError> {
        if segment_duration.is_zero() {
            return Err(VideoError::invalid(
                "video.segment_duration",
                "must be longer than zero",
            ));
        }
        if segment_count == 0 {
            return Err(VideoError::invalid(
                "video.segments",
                "a live event has at least one segment",
            ));
        }
        if window_segments == 0 {
            return Err(VideoError::invalid(
                "video.live.window_segments",
                "the live playlist must list at least one segment",
            ));
        }
        Ok(LiveSource {
            t0,
            segment_duration,
            segment_count,
            window_segments,
        })
    }

    /// When segment `k` can be fetched: t0 + (k+1)·d.
    pub fn available_at(&self, segment: u64) -> Time {
        self.t0 + self.segment_duration * (segment + 1) as u32
    }

    /// When recording of segment `k` started (the live edge's media time maps to wall time this way).
    pub fn recorded_at(&self, segment: u64) -> Time {
        self.t0 + self.segment_duration * segment as u32
    }

    /// Newest segment available at `now`, `None` before the first one exists.
    pub fn newest_available(&self, now: Time) -> Option<u64> {
        let since = now.as_nanos().checked_sub(self.t0.as_nanos())?;
        let completed = since / self.segment_duration.as_nanos() as u64;
        if completed == 0 {
            return None;
        }
        Some((completed - 1).min(self.segment_count.saturating_sub(1)))
    }

    /// True when every segment has been produced (the playlist gets EXT-X-ENDLIST).
    pub fn ended(&self, now: Time) -> bool {
        self.segment_count > 0 && now >= self.available_at(self.segment_count - 1)
    }

    /// Segments the live playlist lists at `now`: the newest `window_segments` available ones.
    pub fn window(&self, now: Time) -> std::ops::Range<u64> {
        match self.newest_available(now) {
            None => 0..0,
            Some(newest) => (newest + 1).saturating_sub(self.window_segments)..newest + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> LiveSource {
        LiveSource::new(Time::from_secs(10), Duration::from_secs(2), 100, 3).unwrap()
    }

    #[test]
    fn segment_k_is_available_one_segment_after_its_recording_starts() {
        assert_eq!(src().available_at(0), Time::from_secs(12));
        assert_eq!(src().available_at(4), Time::from_secs(20));
    }

    #[test]
    fn newest_available_steps_exactly_at_availability() {
        let s = src();
        assert_eq!(s.newest_available(Time::from_secs(11)), None);
        assert_eq!(s.newest_available(Time::from_nanos(11_999_999_999)), None);
        assert_eq!(s.newest_available(Time::from_secs(12)), Some(0));
        assert_eq!(
            s.newest_available(Time::from_nanos(13_999_999_999)),
            Some(0)
        );
        assert_eq!(s.newest_available(Time::from_secs(14)), Some(1));
    }

    #[test]
    fn playlist_window_slides_over_the_newest_segments() {
        let s = src();
        assert_eq!(s.window(Time::from_secs(12)), 0..1);
        assert_eq!(s.window(Time::from_secs(21)), 2..5);
        assert_eq!(s.window(Time::from_secs(10_000)), 97..100);
        assert!(s.ended(Time::from_secs(210)) && !s.ended(Time::from_secs(209)));
    }
}
