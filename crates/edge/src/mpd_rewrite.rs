//! Holding back the newest x segments of a live MPEG-DASH MPD (ETHLE §III-A, footnote 2: "In
//! MPEG-DASH, it can be done by manipulating the availabilityStartTime attribute").
//!
//! A dynamic MPD tells the client which segments exist in one of two ways (ISO/IEC 23009-1
//! §5.3.9.4–5.3.9.6), and each is held back its own way:
//! - **number-based `SegmentTemplate`** (`@duration`, `$Number$`): segment n is available at
//!   availabilityStartTime + Period@start + (n − startNumber + 1)·duration (§5.3.9.5.3, ignoring
//!   availabilityTimeOffset). Moving availabilityStartTime *later* by x·duration makes every
//!   segment appear x segment times later, so the client's live edge is x segments behind the
//!   source's. (The issue's "move back" means back in the stream: the time itself moves forward.)
//! - **`SegmentTimeline`**: the client's live edge is the last `S` listed. The last x segments are
//!   dropped from every timeline (a trailing `S@r` run is shortened first); at least one segment
//!   stays. availabilityStartTime is left alone (it anchors `@t`).
//!
//! A static MPD (on demand) passes through unchanged. An MPD with both kinds gets both. Parsing and
//! writing are dash-mpd-core's (the parser of the dash-mpd project, without its downloader's
//! network and ffmpeg dependencies); this file only decides what to change.
//!
//! [`segment_url`] expands a number-based template's `media` for prefetching segments the
//! receiver cannot see yet (`$RepresentationID$`, `$Number$` with an optional `%0Nd` width,
//! `$Bandwidth$`, `$$`).
//!
//! Not handled: `$Time$` templates without a timeline, `SegmentList`, multi-period shifts beyond
//! the first period's template, and MPD patches.

use std::time::Duration;

use dash_mpd_core::{SegmentTemplate, SegmentTimeline, MPD};

use crate::dash_segment_map::{number_templates, template_segment_length};

/// An MPD as served to a hold-x receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldMpd {
    pub text: String,
    /// Segments actually held back (≤ x; fewer when a timeline is shorter than x + 1).
    pub held: u32,
    /// How far availabilityStartTime moved later (zero when it did not).
    pub availability_shift: Duration,
}

/// Why an MPD cannot be held.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MpdRewriteError {
    #[error("not a parsable MPD: {0}")]
    Parse(String),
    #[error("dynamic MPD without availabilityStartTime")]
    NoAvailabilityStart,
    #[error("could not write the held MPD: {0}")]
    Write(String),
}

/// Every SegmentTemplate of the MPD (period, adaptation set and representation levels).
fn templates_mut(mpd: &mut MPD) -> Vec<&mut SegmentTemplate> {
    let mut out = Vec::new();
    for p in mpd.periods.iter_mut() {
        if let Some(t) = p.SegmentTemplate.as_mut() {
            out.push(t);
        }
        for a in p.adaptations.iter_mut() {
            if let Some(t) = a.SegmentTemplate.as_mut() {
                out.push(t);
            }
            for r in a.representations.iter_mut() {
                if let Some(t) = r.SegmentTemplate.as_mut() {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// Segments a timeline lists (each `S` is 1 + r segments; r < 0, "until the next S or the period
/// end", counts as one here).
pub fn timeline_segments(timeline: &SegmentTimeline) -> u64 {
    timeline.segments.iter().map(|s| 1 + s.r.unwrap_or(0).max(0) as u64).sum()
}

/// Drop the last `x` segments of a timeline, keeping at least one; returns how many were dropped.
fn drop_last(timeline: &mut SegmentTimeline, x: u32) -> u32 {
    let mut dropped = 0;
    while dropped < x && timeline_segments(timeline) > 1 {
        let Some(last) = timeline.segments.last_mut() else { break };
        match last.r {
            Some(r) if r > 0 => last.r = Some(r - 1),
            _ => {
                timeline.segments.pop();
            }
        }
        dropped += 1;
    }
    dropped
}

/// The MPD a receiver held back by `x` segments sees.
pub fn hold_back_mpd(xml: &str, x: u32) -> Result<HeldMpd, MpdRewriteError> {
    let mut mpd = dash_mpd_core::parse(xml).map_err(|e| MpdRewriteError::Parse(e.to_string()))?;
    if mpd.mpdtype.as_deref() != Some("dynamic") || x == 0 {
        return Ok(HeldMpd { text: xml.to_string(), held: 0, availability_shift: Duration::ZERO });
    }
    let mut held: Option<u32> = None;
    let mut number_length: Option<Duration> = None;
    for t in templates_mut(&mut mpd) {
        if let Some(timeline) = t.SegmentTimeline.as_mut() {
            let d = drop_last(timeline, x);
            held = Some(held.map_or(d, |h| h.min(d)));
        } else if let Some(l) = template_segment_length(t) {
            number_length = Some(number_length.map_or(l, |m| m.max(l)));
        }
    }
    let mut shift = Duration::ZERO;
    if let Some(l) = number_length {
        let ast = mpd.availabilityStartTime.as_mut().ok_or(MpdRewriteError::NoAvailabilityStart)?;
        shift = l * x;
        *ast += chrono::Duration::from_std(shift).map_err(|e| MpdRewriteError::Write(e.to_string()))?;
        held = Some(held.map_or(x, |h| h.min(x)));
    }
    let text = quick_xml_text(&mpd)?;
    Ok(HeldMpd { text, held: held.unwrap_or(0), availability_shift: shift })
}

fn quick_xml_text(mpd: &MPD) -> Result<String, MpdRewriteError> {
    let body = mpd.to_string();
    if body.is_empty() {
        return Err(MpdRewriteError::Write("empty serialisation".into()));
    }
    Ok(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}"))
}

/// What the hold decision needs from an MPD: the highest Representation@bandwidth (bit/s) and
/// the segment length (number-based `@duration`, else the longest timeline `S@d`, over
/// `@timescale`). `None` for a field the MPD does not give.
pub fn stream_facts(xml: &str) -> Result<(bool, Option<u64>, Option<Duration>), MpdRewriteError> {
    let mut mpd = dash_mpd_core::parse(xml).map_err(|e| MpdRewriteError::Parse(e.to_string()))?;
    let dynamic = mpd.mpdtype.as_deref() == Some("dynamic");
    let bandwidth =
        mpd.periods.iter().flat_map(|p| p.adaptations.iter()).flat_map(|a| a.representations.iter()).filter_map(|r| r.bandwidth).max();
    let mut length: Option<Duration> = None;
    for t in templates_mut(&mut mpd) {
        let l = template_segment_length(t).or_else(|| {
            let scale = t.timescale.unwrap_or(1).max(1) as f64;
            let d = t.SegmentTimeline.as_ref()?.segments.iter().map(|s| s.d).max()?;
            Some(Duration::from_secs_f64(d as f64 / scale))
        });
        if let Some(l) = l {
            length = Some(length.map_or(l, |m| m.max(l)));
        }
    }
    Ok((dynamic, bandwidth, length))
}

/// The segments a receiver held back by `x` cannot see yet, which the edge prefetches: for each
/// adaptation set of the first period, its highest-bandwidth Representation (the one the hold
/// decision's b_seg is; the others are not fetched ahead) with a number-based template, the `x`
/// newest segments available at `now` as (number, URL as the template writes it). Segment n is
/// available at availabilityStartTime + Period@start + (n − startNumber + 1)·duration
/// (§5.3.9.5.3, availabilityTimeOffset ignored). Empty for static MPDs, timelines and before the
/// first segment.
pub fn held_segment_urls(xml: &str, x: u32, now: chrono::DateTime<chrono::Utc>) -> Result<Vec<(u64, String)>, MpdRewriteError> {
    let templates = number_templates(xml)?;
    let mut out = Vec::new();
    if x == 0 {
        return Ok(out);
    }
    for t in templates.iter().filter(|t| t.top_of_adaptation_set) {
        let Some(newest) = t.newest_available(now) else { continue };
        let oldest_held = newest.saturating_sub(x as u64 - 1).max(t.start_number);
        out.extend((oldest_held..=newest).map(|n| (n, t.url(n))));
    }
    Ok(out)
}

/// The URL of segment `number` of a number-based template's `media` (ISO/IEC 23009-1 §5.3.9.4.4).
pub fn segment_url(media: &str, representation_id: &str, bandwidth: u64, number: u64) -> String {
    let mut out = String::with_capacity(media.len() + 16);
    let mut rest = media;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('$') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let ident = &after[..end];
        let (name, width) = match ident.split_once('%') {
            Some((n, f)) => (n, f.trim_start_matches('0').trim_end_matches('d').parse::<usize>().ok()),
            None => (ident, None),
        };
        let value = match name {
            "" => "$".to_string(),
            "RepresentationID" => representation_id.to_string(),
            "Number" => number.to_string(),
            "Bandwidth" => bandwidth.to_string(),
            _ => format!("${ident}$"),
        };
        match width {
            Some(w) if name == "Number" || name == "Bandwidth" => out.push_str(&format!("{value:0>w$}")),
            _ => out.push_str(&value),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like ffmpeg's dash muxer output for a live stream (`-f dash -window_size 5
    /// -use_template 1 -use_timeline 0 -seg_duration 2`).
    const FFMPEG_LIVE: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic"
     minimumUpdatePeriod="PT2S" suggestedPresentationDelay="PT6S" availabilityStartTime="2026-11-24T02:00:00Z"
     publishTime="2026-11-24T02:01:00Z" timeShiftBufferDepth="PT10S" minBufferTime="PT4S">
  <Period id="0" start="PT0.0S">
    <AdaptationSet id="0" contentType="video" segmentAlignment="true" bitstreamSwitching="true">
      <Representation id="0" mimeType="video/mp4" codecs="avc1.640028" bandwidth="15000000" width="1920" height="1080" frameRate="30/1">
        <SegmentTemplate timescale="1000000" duration="2000000" initialization="init-stream$RepresentationID$.m4s" media="chunk-stream$RepresentationID$-$Number%05d$.m4s" startNumber="1"/>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>"#;

    /// Shaped like a DASH-IF live simulator / packager MPD with a SegmentTimeline and repeats.
    const TIMELINE_LIVE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" profiles="urn:mpeg:dash:profile:isoff-live:2011"
     availabilityStartTime="1970-01-01T00:00:00Z" publishTime="2026-11-24T02:01:00Z" minimumUpdatePeriod="PT4S"
     timeShiftBufferDepth="PT30S" minBufferTime="PT2S">
  <Period id="p0" start="PT0S">
    <AdaptationSet mimeType="video/mp4" segmentAlignment="true">
      <SegmentTemplate timescale="90000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/t$Time$.m4s">
        <SegmentTimeline>
          <S t="900000" d="360000" r="5"/>
          <S d="180000"/>
        </SegmentTimeline>
      </SegmentTemplate>
      <Representation id="v1" bandwidth="50000000" codecs="avc1.640033" width="3840" height="2160"/>
    </AdaptationSet>
  </Period>
</MPD>"#;

    #[test]
    fn a_number_template_mpd_starts_x_segment_times_later_and_parses_back() {
        let h = hold_back_mpd(FFMPEG_LIVE, 3).unwrap();
        assert_eq!(h.held, 3);
        assert_eq!(h.availability_shift, Duration::from_secs(6));
        let back = dash_mpd_core::parse(&h.text).unwrap();
        assert_eq!(back.availabilityStartTime.unwrap().to_rfc3339(), "2026-11-24T02:00:06+00:00");
        // everything else as upstream wrote it
        let orig = dash_mpd_core::parse(FFMPEG_LIVE).unwrap();
        assert_eq!(back.periods, orig.periods);
        assert_eq!(back.publishTime, orig.publishTime);
    }

    #[test]
    fn a_timeline_loses_its_last_x_segments_from_the_repeat_run_first() {
        // 6 + 1 = 7 segments; hold 2 → the lone 180000 S goes, then one repeat of the run.
        let h = hold_back_mpd(TIMELINE_LIVE, 2).unwrap();
        assert_eq!((h.held, h.availability_shift), (2, Duration::ZERO));
        let back = dash_mpd_core::parse(&h.text).unwrap();
        let tl = back.periods[0].adaptations[0].SegmentTemplate.as_ref().unwrap().SegmentTimeline.as_ref().unwrap();
        assert_eq!(timeline_segments(tl), 5);
        assert_eq!(tl.segments.len(), 1);
        assert_eq!((tl.segments[0].t, tl.segments[0].d, tl.segments[0].r), (Some(900000), 360000, Some(4)));
        assert_eq!(back.availabilityStartTime, dash_mpd_core::parse(TIMELINE_LIVE).unwrap().availabilityStartTime);
    }

    #[test]
    fn a_timeline_keeps_one_segment_and_says_it_held_fewer() {
        let h = hold_back_mpd(TIMELINE_LIVE, 20).unwrap();
        assert_eq!(h.held, 6);
        let back = dash_mpd_core::parse(&h.text).unwrap();
        let tl = back.periods[0].adaptations[0].SegmentTemplate.as_ref().unwrap().SegmentTimeline.as_ref().unwrap();
        assert_eq!(timeline_segments(tl), 1);
    }

    #[test]
    fn successive_holds_of_a_growing_timeline_never_go_back() {
        // Upstream grows by one segment per reload; the held edge grows with it, one behind x.
        let mut last_edge = 0;
        for extra in 0..4 {
            let xml = TIMELINE_LIVE.replace("r=\"5\"", &format!("r=\"{}\"", 5 + extra));
            let back = dash_mpd_core::parse(&hold_back_mpd(&xml, 2).unwrap().text).unwrap();
            let tl = back.periods[0].adaptations[0].SegmentTemplate.as_ref().unwrap().SegmentTimeline.as_ref().unwrap();
            let edge = timeline_segments(tl);
            assert!(edge > last_edge);
            last_edge = edge;
        }
    }

    #[test]
    fn static_mpds_and_hold_0_pass_through_byte_for_byte() {
        let vod = FFMPEG_LIVE.replace("type=\"dynamic\"", "type=\"static\"");
        assert_eq!(hold_back_mpd(&vod, 3).unwrap().text, vod);
        assert_eq!(hold_back_mpd(FFMPEG_LIVE, 0).unwrap().text, FFMPEG_LIVE);
    }

    #[test]
    fn garbage_and_a_dynamic_mpd_without_a_start_are_rejected() {
        assert!(matches!(hold_back_mpd("#EXTM3U\n", 1), Err(MpdRewriteError::Parse(_))));
        let no_ast = FFMPEG_LIVE.replace("availabilityStartTime=\"2026-11-24T02:00:00Z\"", "");
        assert_eq!(hold_back_mpd(&no_ast, 1), Err(MpdRewriteError::NoAvailabilityStart));
    }

    #[test]
    fn the_decision_inputs_are_read_from_both_kinds_of_mpd() {
        assert_eq!(stream_facts(FFMPEG_LIVE).unwrap(), (true, Some(15_000_000), Some(Duration::from_secs(2))));
        assert_eq!(stream_facts(TIMELINE_LIVE).unwrap(), (true, Some(50_000_000), Some(Duration::from_secs(4))));
    }

    #[test]
    fn the_held_segments_to_prefetch_are_the_x_newest_available_of_the_top_representation() {
        let at = |t: &str| chrono::DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&chrono::Utc);
        // AST 02:00:00, 2-s segments from number 1: at 02:01:00.5 thirty are complete (1..=30).
        let got = held_segment_urls(FFMPEG_LIVE, 2, at("2026-11-24T02:01:00.5Z")).unwrap();
        assert_eq!(got, vec![(29, "chunk-stream0-00029.m4s".to_string()), (30, "chunk-stream0-00030.m4s".to_string())]);
        // exactly at a boundary segment 31 becomes available
        assert_eq!(held_segment_urls(FFMPEG_LIVE, 1, at("2026-11-24T02:01:02Z")).unwrap()[0].0, 31);
        // before the first segment, for hold-0, timelines and static MPDs: nothing
        assert!(held_segment_urls(FFMPEG_LIVE, 2, at("2026-11-24T02:00:01Z")).unwrap().is_empty());
        assert!(held_segment_urls(FFMPEG_LIVE, 0, at("2026-11-24T02:01:00Z")).unwrap().is_empty());
        assert!(held_segment_urls(TIMELINE_LIVE, 2, at("2026-11-24T02:01:00Z")).unwrap().is_empty());
        let on_demand = FFMPEG_LIVE.replace("type=\"dynamic\"", "type=\"static\"");
        assert!(held_segment_urls(&on_demand, 2, at("2026-11-24T02:01:00Z")).unwrap().is_empty());
        // no more than the stream has: early on, x = 4 gives the 2 that exist
        assert_eq!(held_segment_urls(FFMPEG_LIVE, 4, at("2026-11-24T02:00:05Z")).unwrap().len(), 2);
    }

    #[test]
    fn number_templates_expand_for_prefetch() {
        assert_eq!(segment_url("chunk-stream$RepresentationID$-$Number%05d$.m4s", "0", 15_000_000, 42), "chunk-stream0-00042.m4s");
        assert_eq!(segment_url("$RepresentationID$/$Bandwidth$/s$Number$.m4s", "v1", 800, 7), "v1/800/s7.m4s");
        assert_eq!(segment_url("a$$b-$Number$", "x", 1, 3), "a$b-3");
        assert_eq!(segment_url("seg-$Time$.m4s", "x", 1, 3), "seg-$Time$.m4s");
    }
}
