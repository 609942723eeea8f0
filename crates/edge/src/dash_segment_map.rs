//! The number-based segment templates of a live MPD, both ways: segment number → URL (to fetch
//! ahead) and URL → (representation, number) (to know where a receiver's segment request sits
//! in the stream, the DASH twin of the HLS segment index built from playlists).
//!
//! ISO/IEC 23009-1 §5.3.9.4.4 (template identifiers `$RepresentationID$`, `$Number$` with an
//! optional `%0Nd` width, `$Bandwidth$`, `$$`) and §5.3.9.5.3 (segment n of a template with
//! `@duration` is available from availabilityStartTime + Period@start + (n − startNumber + 1) ·
//! duration; availabilityTimeOffset ignored). Only the first period, only templates with
//! `@duration` and `$Number$` (no SegmentTimeline, no `$Time$`): those are what ffmpeg's dash
//! muxer and most live packagers write with `-use_timeline 0`. A request is mapped back by
//! reading the digits where `$Number$` stands and checking that expanding the template with
//! that number gives the request's file name again (so widths and look-alike names never match
//! by accident).

use std::time::Duration;

use chrono::{DateTime, Utc};
use dash_mpd_core::SegmentTemplate;

use crate::mpd_rewrite::{segment_url, MpdRewriteError};

/// One Representation's number-based template in a dynamic MPD.
#[derive(Clone, Debug, PartialEq)]
pub struct NumberTemplate {
    pub media: String,
    pub representation_id: String,
    pub bandwidth: u64,
    pub start_number: u64,
    pub segment_length: Duration,
    /// availabilityStartTime + Period@start.
    pub period_start: DateTime<Utc>,
    /// The highest-bandwidth Representation of its adaptation set (the one b_seg is read from).
    pub top_of_adaptation_set: bool,
}

/// Segment length of a number-based template (`@duration` / `@timescale`).
pub(crate) fn template_segment_length(t: &SegmentTemplate) -> Option<Duration> {
    let d = t.duration?;
    let scale = t.timescale.unwrap_or(1).max(1) as f64;
    (d > 0.0).then(|| Duration::from_secs_f64(d / scale))
}

/// Every Representation of the first period with a number-based template (empty for static MPDs).
pub fn number_templates(xml: &str) -> Result<Vec<NumberTemplate>, MpdRewriteError> {
    let mpd = dash_mpd_core::parse(xml).map_err(|e| MpdRewriteError::Parse(e.to_string()))?;
    if mpd.mpdtype.as_deref() != Some("dynamic") {
        return Ok(Vec::new());
    }
    let ast = mpd.availabilityStartTime.ok_or(MpdRewriteError::NoAvailabilityStart)?;
    let Some(period) = mpd.periods.first() else { return Ok(Vec::new()) };
    let period_start = ast + chrono::Duration::from_std(period.start.unwrap_or_default()).unwrap_or_default();
    let mut out = Vec::new();
    for a in &period.adaptations {
        let top_bandwidth = a.representations.iter().map(|r| r.bandwidth.unwrap_or(0)).max();
        let mut top_taken = false;
        for r in &a.representations {
            let Some(t) = r.SegmentTemplate.as_ref().or(a.SegmentTemplate.as_ref()).or(period.SegmentTemplate.as_ref()) else {
                continue;
            };
            let (Some(media), Some(segment_length), None) = (t.media.as_deref(), template_segment_length(t), t.SegmentTimeline.as_ref())
            else {
                continue;
            };
            if !media.contains("$Number") {
                continue;
            }
            let bandwidth = r.bandwidth.unwrap_or(0);
            // One top per adaptation set, the first of equal bandwidths.
            let top = !top_taken && Some(bandwidth) == top_bandwidth;
            top_taken |= top;
            out.push(NumberTemplate {
                media: media.to_string(),
                representation_id: r.id.clone().unwrap_or_default(),
                bandwidth,
                start_number: t.startNumber.unwrap_or(1),
                segment_length,
                period_start,
                top_of_adaptation_set: top,
            });
        }
    }
    Ok(out)
}

impl NumberTemplate {
    /// The URL of segment `number`, as the template writes it.
    pub fn url(&self, number: u64) -> String {
        segment_url(&self.media, &self.representation_id, self.bandwidth, number)
    }

    /// The newest segment complete at `now` (None before the first one).
    pub fn newest_available(&self, now: DateTime<Utc>) -> Option<u64> {
        let since = now.signed_duration_since(self.period_start).to_std().ok()?;
        let complete = (since.as_secs_f64() / self.segment_length.as_secs_f64()).floor() as u64;
        (complete > 0).then(|| self.start_number + complete - 1)
    }

    /// The segment number of `file` (a URL relative to the MPD's directory), if this template
    /// writes exactly that name for some number.
    pub fn number_of(&self, file: &str) -> Option<u64> {
        let at = self.media.find("$Number")?;
        let token_end = at + 1 + self.media[at + 1..].find('$')? + 1;
        // The parts around $Number$ expand without a number (identifiers other than $Number$).
        let prefix = segment_url(&self.media[..at], &self.representation_id, self.bandwidth, 0);
        let suffix = segment_url(&self.media[token_end..], &self.representation_id, self.bandwidth, 0);
        let digits = file.strip_prefix(prefix.as_str())?.strip_suffix(suffix.as_str())?;
        if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: u64 = digits.parse().ok()?;
        (self.url(number) == file).then_some(number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_RENDITIONS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" availabilityStartTime="2026-11-24T02:00:00Z" publishTime="2026-11-24T02:01:00Z" minimumUpdatePeriod="PT2S">
  <Period id="0" start="PT10S">
    <AdaptationSet id="0" contentType="video">
      <SegmentTemplate timescale="1000" duration="2000" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="5"/>
      <Representation id="hi" bandwidth="15000000"/>
      <Representation id="lo" bandwidth="3000000"/>
    </AdaptationSet>
    <AdaptationSet id="1" contentType="audio">
      <Representation id="a" bandwidth="128000">
        <SegmentTemplate timescale="48000" duration="96000" media="$RepresentationID$/$Bandwidth$/s$Number$.m4s"/>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>"#;

    fn at(t: &str) -> DateTime<Utc> {
        chrono::DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn every_number_template_of_the_first_period_is_read_with_its_top_rendition_marked() {
        let t = number_templates(TWO_RENDITIONS).unwrap();
        let ids: Vec<(&str, bool)> = t.iter().map(|t| (t.representation_id.as_str(), t.top_of_adaptation_set)).collect();
        assert_eq!(ids, [("hi", true), ("lo", false), ("a", true)]);
        assert_eq!(t[0].start_number, 5);
        assert_eq!(t[2].segment_length, Duration::from_secs(2));
        assert_eq!(t[0].period_start, at("2026-11-24T02:00:10Z"));
        assert!(number_templates(&TWO_RENDITIONS.replace("dynamic", "static")).unwrap().is_empty());
    }

    #[test]
    fn a_request_path_maps_back_to_its_representation_and_number() {
        let t = number_templates(TWO_RENDITIONS).unwrap();
        assert_eq!(t[0].number_of("chunk-hi-00042.m4s"), Some(42));
        assert_eq!(t[1].number_of("chunk-lo-00042.m4s"), Some(42));
        assert_eq!(t[0].number_of("chunk-lo-00042.m4s"), None, "another representation's segment");
        assert_eq!(t[2].number_of("a/128000/s7.m4s"), Some(7));
        assert_eq!(t[2].number_of("a/128000/s07.m4s"), None, "no width in the template: not its name");
        assert_eq!(t[0].number_of("chunk-hi-123456.m4s"), Some(123_456), "%05d is a minimum width");
        for bad in ["chunk-hi-0004x.m4s", "chunk-hi-.m4s", "init-hi.m4s", "chunk-hi-00042.m4s.bak", "chunk-hi-99999999999999999999.m4s"] {
            assert_eq!(t[0].number_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_newest_available_segment_counts_from_the_period_start() {
        let t = &number_templates(TWO_RENDITIONS).unwrap()[0];
        // Period starts 02:00:10, 2-s segments from 5: at 02:00:15 two are complete (5, 6).
        assert_eq!(t.newest_available(at("2026-11-24T02:00:15Z")), Some(6));
        assert_eq!(t.newest_available(at("2026-11-24T02:00:11Z")), None);
        assert_eq!(t.newest_available(at("2026-11-24T01:00:00Z")), None);
    }
}
