//! Holding back the newest x segments of a live HLS media playlist (ETHLE §III-A, Fig. 2).
//!
//! The held playlist is the upstream playlist without its last k segments, k = the stream's x cut
//! by two rules, so that to the receiver it looks like an earlier, valid version of the same live
//! playlist:
//! - RFC 8216 §6.2.2: a server must not remove a segment if the playlist's remaining duration
//!   would fall below three target durations. k stops there (the receiver is then held less than
//!   x; the caller sees it in [`HeldPlaylist::held`]).
//! - No going back: a receiver that was already shown segment N (e.g. it moved from hold-0 to
//!   hold-x) is never shown a playlist ending before N (RFC 8216 §6.2.1: a playlist update only
//!   appends at the end). It then waits x segment times on an unchanging playlist, which is the
//!   paper's transition.
//!
//! Everything else stays as upstream wrote it: the head is not touched, so EXT-X-MEDIA-SEQUENCE
//! and EXT-X-DISCONTINUITY-SEQUENCE are the upstream's (monotonic as long as upstream's are);
//! discontinuity, program-date-time, byte-range, key and map tags stay on their segments.
//! A playlist with EXT-X-ENDLIST has no live edge and is not held.
//!
//! Deviation, LL-HLS (RFC 8216bis §4.4.4.9, §4.4.5.2, §4.4.5.3): a held playlist is served as a
//! regular live playlist. Partial segments, part info, preload hints, rendition reports and
//! server control (blocking reload, delta updates) are removed: they describe the upstream's live
//! edge, which the receiver must not see, and a blocking reload for msn N would have to wait for
//! upstream N+x. The receiver falls back to ordinary reloads every target duration.
//! (m3u8-rs also drops tags after the last segment URI when parsing, i.e. the trailing parts.)
//!
//! Parsing and writing are m3u8-rs's; this file only decides what to cut.

use m3u8_rs::{ExtTag, MediaPlaylist};

/// LL-HLS tags removed from held playlists (names as m3u8-rs stores them, without "EXT-").
const LOW_LATENCY_TAGS: [&str; 6] = [
    "X-PART",
    "X-PART-INF",
    "X-PRELOAD-HINT",
    "X-RENDITION-REPORT",
    "X-SERVER-CONTROL",
    "X-SKIP",
];

/// A playlist as served to a hold-x receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldPlaylist {
    /// The playlist text.
    pub text: Vec<u8>,
    /// Segments actually held back (≤ x).
    pub held: u32,
    /// Media sequence number of the last segment served (None for an empty playlist).
    pub last_served_sequence: Option<u64>,
}

/// Media sequence number of the last segment of `playlist`.
pub fn last_sequence(playlist: &MediaPlaylist) -> Option<u64> {
    let n = playlist.segments.len() as u64;
    (n > 0).then(|| playlist.media_sequence + n - 1)
}

/// How many segments may be cut from the end while keeping ≥ 3 target durations (RFC 8216 §6.2.2).
pub fn removable_by_rfc8216(playlist: &MediaPlaylist) -> u32 {
    let minimum = 3.0 * playlist.target_duration as f64;
    let mut remaining: f64 = playlist.segments.iter().map(|s| s.duration as f64).sum();
    let mut removable = 0;
    for segment in playlist.segments.iter().rev() {
        let after = remaining - segment.duration as f64;
        // Small tolerance: EXTINF values are decimal and summed in floating point.
        if after + 1e-6 < minimum {
            break;
        }
        remaining = after;
        removable += 1;
    }
    removable
}

/// The playlist a receiver held back by `x` segments sees; `shown_up_to` is the last sequence
/// number this receiver was already shown, if any.
pub fn hold_back(playlist: &MediaPlaylist, x: u32, shown_up_to: Option<u64>) -> HeldPlaylist {
    let mut held = playlist.clone();
    let mut k = 0;
    if !playlist.end_list {
        k = x.min(removable_by_rfc8216(playlist));
        if let (Some(last), Some(shown)) = (last_sequence(playlist), shown_up_to) {
            let behind_allowed = last.saturating_sub(shown);
            k = k.min(behind_allowed.min(u32::MAX as u64) as u32);
        }
        let keep = playlist.segments.len() - k as usize;
        held.segments.truncate(keep);
        strip_low_latency_tags(&mut held);
    }
    let mut text = Vec::with_capacity(256 + 128 * held.segments.len());
    held.write_to(&mut text)
        .expect("writing a playlist into a Vec cannot fail");
    HeldPlaylist {
        text,
        held: k,
        last_served_sequence: last_sequence(&held),
    }
}

fn strip_low_latency_tags(playlist: &mut MediaPlaylist) {
    let keep = |t: &ExtTag| !LOW_LATENCY_TAGS.contains(&t.tag.as_str());
    playlist.unknown_tags.retain(keep);
    for segment in &mut playlist.segments {
        segment.unknown_tags.retain(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use m3u8_rs::{parse_playlist_res, Playlist};

    #[track_caller]
    fn media(text: &str) -> MediaPlaylist {
        match parse_playlist_res(text.as_bytes()) {
            Ok(Playlist::MediaPlaylist(p)) => p,
            other => panic!("not a media playlist: {other:?}"),
        }
    }

    /// ffmpeg `-f hls -hls_time 2 -hls_list_size 6 -hls_flags delete_segments` shape, window
    /// starting at `first`.
    fn sliding_window(first: u64, len: u64) -> String {
        let mut s = format!(
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:{first}\n"
        );
        for n in first..first + len {
            s.push_str(&format!("#EXTINF:2.000000,\nstream{n}.ts\n"));
        }
        s
    }

    fn uris(p: &MediaPlaylist) -> Vec<&str> {
        p.segments.iter().map(|s| s.uri.as_str()).collect()
    }

    #[test]
    fn holding_two_drops_the_newest_two_and_keeps_the_media_sequence() {
        let up = media(&sliding_window(100, 6));
        let out = hold_back(&up, 2, None);
        let back = media(std::str::from_utf8(&out.text).unwrap());
        assert_eq!(back.media_sequence, 100);
        assert_eq!(
            uris(&back),
            [
                "stream100.ts",
                "stream101.ts",
                "stream102.ts",
                "stream103.ts"
            ]
        );
        assert_eq!(out.held, 2);
        assert_eq!(out.last_served_sequence, Some(103));
    }

    #[test]
    fn never_shorter_than_three_target_durations() {
        // 5 × 2 s = 10 s; 3 × TD = 6 s: at most 2 segments may go, whatever x asks.
        let up = media(&sliding_window(7, 5));
        let out = hold_back(&up, 4, None);
        assert_eq!(out.held, 2);
        let back = media(std::str::from_utf8(&out.text).unwrap());
        let total: f32 = back.segments.iter().map(|s| s.duration).sum();
        assert!(total >= 6.0 - 1e-4, "{total}");
    }

    #[test]
    fn media_sequence_and_last_segment_never_go_back_across_reloads() {
        // Upstream slides one segment per reload; x changes between 0 and 3 (a receiver that
        // moves groups, and the cap); the served view must only move forward.
        let mut shown: Option<u64> = None;
        let mut last_media_sequence = 0;
        let xs = [0u32, 0, 3, 3, 1, 2, 3, 3, 0, 2];
        for (reload, &x) in xs.iter().enumerate() {
            let up = media(&sliding_window(50 + reload as u64, 8));
            let out = hold_back(&up, x, shown);
            let back = media(std::str::from_utf8(&out.text).unwrap());
            assert!(
                back.media_sequence >= last_media_sequence,
                "reload {reload}"
            );
            last_media_sequence = back.media_sequence;
            if let Some(prev) = shown {
                assert!(out.last_served_sequence.unwrap() >= prev, "reload {reload}");
            }
            shown = out.last_served_sequence;
        }
    }

    #[test]
    fn a_receiver_moved_to_hold_x_waits_on_its_last_view_instead_of_jumping_back() {
        let up = media(&sliding_window(10, 8)); // last = 17, shown 17 while in hold-0
        let out = hold_back(&up, 3, Some(17));
        assert_eq!(out.held, 0);
        let next = media(&sliding_window(11, 8)); // last = 18
        assert_eq!(hold_back(&next, 3, Some(17)).held, 1);
    }

    #[test]
    fn discontinuities_and_their_sequence_stay_on_their_segments() {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:2680\n\
#EXT-X-DISCONTINUITY-SEQUENCE:12\n#EXTINF:3.989,\nad/a1.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:4.004,\n\
live/2681.ts\n#EXTINF:4.004,\nlive/2682.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:4.004,\nad/b1.ts\n\
#EXTINF:4.004,\nad/b2.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:4.004,\nlive/2685.ts\n";
        let up = media(text);
        let out = hold_back(&up, 2, None);
        let back = media(std::str::from_utf8(&out.text).unwrap());
        assert_eq!(back.discontinuity_sequence, 12);
        assert_eq!(back.media_sequence, 2680);
        let flags: Vec<bool> = back.segments.iter().map(|s| s.discontinuity).collect();
        assert_eq!(flags, [false, true, false, true]);
        assert_eq!(
            uris(&back),
            ["ad/a1.ts", "live/2681.ts", "live/2682.ts", "ad/b1.ts"]
        );
    }

    #[test]
    fn program_date_time_stays_with_each_kept_segment() {
        let mut text = String::from(
            "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:300\n",
        );
        for i in 0..6 {
            text.push_str(&format!(
                "#EXT-X-PROGRAM-DATE-TIME:2026-11-23T23:00:{:02}.000Z\n#EXTINF:2.000,\ns{}.ts\n",
                i * 2,
                300 + i
            ));
        }
        let up = media(&text);
        let back = media(std::str::from_utf8(&hold_back(&up, 2, None).text).unwrap());
        for (i, seg) in back.segments.iter().enumerate() {
            assert_eq!(seg, &up.segments[i], "segment {i} changed");
        }
        assert_eq!(
            back.segments[3].program_date_time.unwrap().to_rfc3339(),
            "2026-11-23T23:00:06+00:00"
        );
    }

    #[test]
    fn byte_range_segments_keep_their_ranges_and_map() {
        let text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:40\n\
#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"720@0\"\n\
#EXT-X-BYTERANGE:375000@720\n#EXTINF:2.0,\nmain.mp4\n#EXT-X-BYTERANGE:375200\n#EXTINF:2.0,\nmain.mp4\n\
#EXT-X-BYTERANGE:374900\n#EXTINF:2.0,\nmain.mp4\n#EXT-X-BYTERANGE:375100\n#EXTINF:2.0,\nmain.mp4\n\
#EXT-X-BYTERANGE:375000\n#EXTINF:2.0,\nmain.mp4\n";
        let up = media(text);
        let out = hold_back(&up, 1, None);
        let back = media(std::str::from_utf8(&out.text).unwrap());
        assert_eq!(back.segments.len(), 4);
        assert_eq!(back.segments, up.segments[..4]);
        assert!(back.segments[0].map.is_some());
        assert_eq!(
            back.segments[1].byte_range.as_ref().unwrap().length,
            375_200
        );
    }

    #[test]
    fn low_latency_parts_hints_and_server_control_are_removed_from_held_playlists() {
        let text = "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:4\n\
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,CAN-SKIP-UNTIL=24.0\n\
#EXT-X-PART-INF:PART-TARGET=0.333\n#EXT-X-MEDIA-SEQUENCE:266\n\
#EXT-X-MAP:URI=\"init.mp4\"\n\
#EXTINF:4.00,\nfileSequence266.mp4\n#EXTINF:4.00,\nfileSequence267.mp4\n#EXTINF:4.00,\nfileSequence268.mp4\n\
#EXTINF:4.00,\nfileSequence269.mp4\n\
#EXT-X-PART:DURATION=0.333,URI=\"filePart270.0.mp4\",INDEPENDENT=YES\n\
#EXT-X-PART:DURATION=0.333,URI=\"filePart270.1.mp4\"\n#EXTINF:4.00,\nfileSequence270.mp4\n\
#EXT-X-PART:DURATION=0.333,URI=\"filePart271.0.mp4\",INDEPENDENT=YES\n\
#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"filePart271.1.mp4\"\n\
#EXT-X-RENDITION-REPORT:URI=\"../1M/waitForMSN.php\",LAST-MSN=270,LAST-PART=0\n";
        let up = media(text);
        let out = hold_back(&up, 1, None);
        let served = std::str::from_utf8(&out.text).unwrap();
        for tag in [
            "EXT-X-PART",
            "PRELOAD-HINT",
            "RENDITION-REPORT",
            "SERVER-CONTROL",
        ] {
            assert!(!served.contains(tag), "{tag} left in:\n{served}");
        }
        let back = media(served);
        assert_eq!(back.media_sequence, 266);
        assert_eq!(uris(&back).last(), Some(&"fileSequence269.mp4"));
    }

    #[test]
    fn an_ended_playlist_is_not_held() {
        let mut text = sliding_window(0, 6);
        text.push_str("#EXT-X-ENDLIST\n");
        let up = media(&text);
        let out = hold_back(&up, 3, None);
        assert_eq!(out.held, 0);
        assert_eq!(
            media(std::str::from_utf8(&out.text).unwrap())
                .segments
                .len(),
            6
        );
    }

    #[test]
    fn every_held_playlist_of_a_long_run_parses_back_as_a_media_playlist() {
        for first in 0..40u64 {
            for x in 0..5 {
                let up = media(&sliding_window(first * 3, 6 + first % 4));
                let out = hold_back(&up, x, None);
                let back = media(std::str::from_utf8(&out.text).unwrap());
                assert_eq!(back.segments.len(), up.segments.len() - out.held as usize);
                assert_eq!(back.target_duration, up.target_duration);
            }
        }
    }
}
