//! HLS playlists as text, per RFC 8216 (HTTP Live Streaming).
//!
//! - Media playlist (§4.3.3): `#EXTM3U`, `#EXT-X-VERSION:3` (decimal EXTINF durations need
//!   version 3, §4.3.2.1/§7), `#EXT-X-TARGETDURATION` = the largest segment duration rounded to
//!   the nearest integer (§4.3.3.1), `#EXT-X-MEDIA-SEQUENCE` = the number of the first listed
//!   segment (§4.3.3.2), one `#EXTINF:<duration>,` + URI per segment; on demand also
//!   `#EXT-X-PLAYLIST-TYPE:VOD` and `#EXT-X-ENDLIST` (§4.3.3.4, §4.3.3.5); a live playlist lists
//!   the source's sliding window and gets `#EXT-X-ENDLIST` once the event is over (§6.2.2).
//! - Master playlist (§4.3.4): one `#EXT-X-STREAM-INF` per quality with BANDWIDTH = the peak
//!   segment bitrate (§4.3.4.2, required), AVERAGE-BANDWIDTH, and CODECS (a SHOULD; H.264 High
//!   profile level 3.1, [`VIDEO_CODEC`], the same string as the MPD's), followed by the media
//!   playlist URI. The content is video only (no audio rendition), as in seed 004.
//!
//! Segment URIs are relative (`{k}.ts`, resolved against `/q{quality}/index.m3u8`, §4.1).
//! Lines end with `\n` (allowed by §4.1).

use std::fmt::Write;
use std::time::Duration;

use super::paths::VideoPath;
use crate::units::Time;
use crate::video::content::Content;
use crate::video::live::LiveSource;

/// RFC 6381 codec string announced for every quality (H.264 High profile, level 3.1).
pub const VIDEO_CODEC: &str = "avc1.64001f";

/// EXT-X-TARGETDURATION: segment duration rounded to the nearest integer second (at least 1).
pub fn target_duration_s(segment_duration: Duration) -> u64 {
    (segment_duration.as_secs_f64().round() as u64).max(1)
}

fn write_header(out: &mut String, segment_duration: Duration, media_sequence: u64) {
    out.push_str("#EXTM3U\n#EXT-X-VERSION:3\n");
    let _ = writeln!(
        out,
        "#EXT-X-TARGETDURATION:{}",
        target_duration_s(segment_duration)
    );
    let _ = writeln!(out, "#EXT-X-MEDIA-SEQUENCE:{media_sequence}");
}

fn write_segments(out: &mut String, segments: std::ops::Range<u64>, segment_duration: Duration) {
    for k in segments {
        let _ = writeln!(
            out,
            "#EXTINF:{:.3},\n{k}.ts",
            segment_duration.as_secs_f64()
        );
    }
}

/// The on-demand media playlist of one quality: every segment, then EXT-X-ENDLIST.
pub fn vod_media_playlist(content: &Content) -> String {
    let mut out = String::with_capacity(64 + 24 * content.segment_count() as usize);
    write_header(&mut out, content.segment_duration(), 0);
    out.push_str("#EXT-X-PLAYLIST-TYPE:VOD\n");
    write_segments(
        &mut out,
        0..content.segment_count(),
        content.segment_duration(),
    );
    out.push_str("#EXT-X-ENDLIST\n");
    out
}

/// The live media playlist at `now`: the source's sliding window (possibly empty before the
/// first segment exists), and EXT-X-ENDLIST once the last segment is out.
pub fn live_media_playlist(source: &LiveSource, now: Time) -> String {
    let window = source.window(now);
    let mut out = String::with_capacity(96 + 24 * (window.end - window.start) as usize);
    write_header(&mut out, source.segment_duration, window.start);
    write_segments(&mut out, window, source.segment_duration);
    if source.ended(now) {
        out.push_str("#EXT-X-ENDLIST\n");
    }
    out
}

/// The master playlist: one variant stream per quality, lowest first.
pub fn master_playlist(content: &Content) -> String {
    let mut out = String::from("#EXTM3U\n#EXT-X-VERSION:3\n");
    for q in 0..content.ladder().len() {
        let peak = content.peak_bitrate(q).bits_per_sec.max(1);
        let avg = content.average_bitrate(q).bits_per_sec.max(1);
        let uri = VideoPath::MediaPlaylist { quality: q }.to_path();
        let _ = writeln!(
            out,
            "#EXT-X-STREAM-INF:BANDWIDTH={peak},AVERAGE-BANDWIDTH={avg},CODECS=\"{VIDEO_CODEC}\"\n{}",
            &uri[1..]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::content::Ladder;

    fn content() -> Content {
        Content::cbr(Ladder::seed004(), Duration::from_secs(2), 4).unwrap()
    }

    #[test]
    fn vod_playlist_is_what_rfc_8216_asks_for() {
        let text = vod_media_playlist(&content());
        let want = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n\
                    #EXTINF:2.000,\n0.ts\n#EXTINF:2.000,\n1.ts\n#EXTINF:2.000,\n2.ts\n#EXTINF:2.000,\n3.ts\n#EXT-X-ENDLIST\n";
        assert_eq!(text, want);
    }

    #[test]
    fn a_real_parser_accepts_the_playlists() {
        let c = content();
        let vod = m3u8_rs::parse_media_playlist_res(vod_media_playlist(&c).as_bytes())
            .expect("m3u8-rs parses the VOD playlist");
        assert_eq!(
            (
                vod.target_duration,
                vod.media_sequence,
                vod.segments.len(),
                vod.end_list
            ),
            (2, 0, 4, true)
        );
        assert_eq!(vod.segments[3].uri, "3.ts");
        assert!((vod.segments[0].duration - 2.0).abs() < 1e-6);

        let src = LiveSource::new(Time::ZERO, Duration::from_secs(2), 4, 3).unwrap();
        let live = m3u8_rs::parse_media_playlist_res(
            live_media_playlist(&src, Time::from_secs(9)).as_bytes(),
        )
        .unwrap();
        // at 9 s segments 0..=3 exist (segment 3 at 8 s); window of 3 → 1, 2, 3; the event is over
        assert_eq!(
            (live.media_sequence, live.segments.len(), live.end_list),
            (1, 3, true)
        );
        let live = m3u8_rs::parse_media_playlist_res(
            live_media_playlist(&src, Time::from_secs(5)).as_bytes(),
        )
        .unwrap();
        assert_eq!(
            (live.media_sequence, live.segments.len(), live.end_list),
            (0, 2, false)
        );

        let master = m3u8_rs::parse_master_playlist_res(master_playlist(&c).as_bytes())
            .expect("m3u8-rs parses the master");
        let bw: Vec<u64> = master.variants.iter().map(|v| v.bandwidth).collect();
        assert_eq!(
            bw,
            vec![250_000, 500_000, 750_000, 1_000_000, 1_500_000, 3_000_000]
        );
        assert_eq!(master.variants[2].uri, "q2/index.m3u8");
        assert_eq!(master.variants[2].codecs.as_deref(), Some(VIDEO_CODEC));
    }
}
