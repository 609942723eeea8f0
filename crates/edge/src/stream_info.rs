//! What the edge reads about a live stream from its playlists (ETHLE §III-A, "video stream
//! information"): segment length l_seg and bitrate b_seg.
//!
//! - l_seg: the mean EXTINF of the playlist's segments (the paper's segment length); the
//!   TARGETDURATION (an upper bound, rounded up to whole seconds) only when there are none.
//! - b_seg, in this order: the BANDWIDTH of the master playlist's variant that points at this
//!   media playlist (peak rate, RFC 8216 §4.3.4.2); the newest EXT-X-BITRATE (kbit/s, RFC 8216bis
//!   §4.4.4.8); the newest segment's EXT-X-BYTERANGE length ÷ its EXTINF. When none applies the
//!   server asks upstream for the newest segment's size (HEAD) and uses size ÷ EXTINF
//!   ([`bitrate_from_size`]).

use std::time::Duration;

use m3u8_rs::MediaPlaylist;
use tcpvideo_model::units::Bandwidth;

/// l_seg of a media playlist.
pub fn segment_length(playlist: &MediaPlaylist) -> Duration {
    let n = playlist.segments.len();
    if n == 0 {
        return Duration::from_secs(playlist.target_duration);
    }
    let total: f64 = playlist.segments.iter().map(|s| s.duration as f64).sum();
    Duration::from_secs_f64((total / n as f64).max(0.0))
}

/// b_seg from the media playlist alone (EXT-X-BITRATE, then byte range ÷ duration).
pub fn bitrate_from_playlist(playlist: &MediaPlaylist) -> Option<Bandwidth> {
    for segment in playlist.segments.iter().rev() {
        let tagged = segment
            .unknown_tags
            .iter()
            .find(|t| t.tag == "X-BITRATE")
            .and_then(|t| t.rest.as_deref())
            .and_then(|kbps| kbps.trim().parse::<u64>().ok());
        if let Some(kbps) = tagged {
            return Some(Bandwidth::from_bps(kbps * 1000));
        }
    }
    let newest = playlist.segments.last()?;
    let range = newest.byte_range.as_ref()?;
    bitrate_from_size(range.length, newest.duration as f64)
}

/// size ÷ duration, for a segment of `bytes` lasting `duration_s` seconds.
pub fn bitrate_from_size(bytes: u64, duration_s: f64) -> Option<Bandwidth> {
    (duration_s > 0.0 && bytes > 0)
        .then(|| Bandwidth::from_bps((bytes as f64 * 8.0 / duration_s).round() as u64))
}

/// The Range header of each segment (`None` without EXT-X-BYTERANGE), as a player sends it
/// (`bytes=first-last`, inclusive). A range without an offset starts right after the previous
/// range of the same URI (RFC 8216 §4.3.2.2).
pub fn range_headers(playlist: &MediaPlaylist) -> Vec<Option<String>> {
    let mut previous_end: Option<(&str, u64)> = None;
    playlist
        .segments
        .iter()
        .map(|s| {
            let r = s.byte_range.as_ref()?;
            let start = match (r.offset, previous_end) {
                (Some(o), _) => o,
                (None, Some((uri, end))) if uri == s.uri => end,
                (None, _) => 0,
            };
            previous_end = Some((s.uri.as_str(), start + r.length));
            Some(format!(
                "bytes={}-{}",
                start,
                (start + r.length).saturating_sub(1)
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use m3u8_rs::{parse_playlist_res, Playlist};

    fn media(text: &str) -> MediaPlaylist {
        match parse_playlist_res(text.as_bytes()) {
            Ok(Playlist::MediaPlaylist(p)) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn segment_length_is_the_mean_extinf_not_the_rounded_target_duration() {
        let p =
            media("#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:2.002,\na.ts\n#EXTINF:2.002,\nb.ts\n");
        let l = segment_length(&p).as_secs_f64();
        assert!((l - 2.002).abs() < 1e-5, "{l}");
    }

    #[test]
    fn ext_x_bitrate_is_read_in_kilobits() {
        let p =
            media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BITRATE:15000\n#EXTINF:2.0,\na.ts\n");
        assert_eq!(bitrate_from_playlist(&p), Some(Bandwidth::from_mbps(15)));
    }

    #[test]
    fn byte_range_over_duration_gives_the_bitrate() {
        let p = media("#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:3750000@0\n#EXTINF:2.0,\nmain.mp4\n");
        assert_eq!(bitrate_from_playlist(&p), Some(Bandwidth::from_mbps(15)));
    }

    #[test]
    fn byte_ranges_without_offset_continue_after_the_previous_range() {
        let p = media(
            "#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\na.ts\n\
#EXT-X-BYTERANGE:1000@720\n#EXTINF:2.0,\nmain.mp4\n#EXT-X-BYTERANGE:500\n#EXTINF:2.0,\nmain.mp4\n",
        );
        assert_eq!(
            range_headers(&p),
            [
                None,
                Some("bytes=720-1719".to_string()),
                Some("bytes=1720-2219".to_string())
            ]
        );
    }

    #[test]
    fn plain_segments_give_no_bitrate_from_the_playlist() {
        let p = media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\na.ts\n");
        assert_eq!(bitrate_from_playlist(&p), None);
        assert_eq!(bitrate_from_size(0, 2.0), None);
    }
}
