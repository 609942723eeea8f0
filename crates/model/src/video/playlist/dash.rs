//! DASH Media Presentation Descriptions as text, per ISO/IEC 23009-1 (MPEG-DASH), the
//! `isoff-live` profile that dash.js and every packager use for both live and on demand:
//! one Period, one video AdaptationSet, one Representation per quality (`id` = quality index,
//! `bandwidth` = peak segment bitrate in bit/s, §5.3.5.2), and a `SegmentTemplate` with
//! `$RepresentationID$` and `$Number$` (§5.3.9.4.4) so segment k of quality q is `q{q}/{k}.m4s`
//! ([`super::paths`]).
//!
//! On demand: `type="static"`, `mediaPresentationDuration`. Live: `type="dynamic"` with
//! `availabilityStartTime` = the source's t0 on the wall clock, `startNumber="0"`, so segment
//! `k` is available at availabilityStartTime + (k+1)·d (§5.3.9.5.3 with no
//! availabilityTimeOffset) — the same instant as [`crate::video::live::LiveSource::available_at`];
//! `timeShiftBufferDepth` = the live window, `minimumUpdatePeriod` = one segment, `publishTime` =
//! the time the MPD is generated.
//!
//! Simulated time is mapped to wall-clock time by an epoch the caller chooses (Unix seconds);
//! dates are written in UTC (`xs:dateTime` with `Z`).

use std::fmt::Write;
use std::time::Duration;

use super::hls::VIDEO_CODEC;
use crate::units::Time;
use crate::video::content::Content;
use crate::video::live::LiveSource;

/// `xs:duration` of a `Duration`, millisecond precision (`PT2.000S`).
pub fn xs_duration(d: Duration) -> String {
    format!("PT{}.{:03}S", d.as_secs(), d.subsec_millis())
}

/// `xs:dateTime` in UTC for Unix time `unix_ns` (`2026-11-23T00:00:00.000Z`).
pub fn xs_date_time(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let millis = (unix_ns / 1_000_000) % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Gregorian (year, month, day) of a count of days since 1970-01-01 (the proleptic-calendar
/// conversion by eras of 400 years described by H. Hinnant, "chrono-Compatible Low-Level Date
/// Algorithms").
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1st [0, 365]
    let mp = (5 * doy + 2) / 153; // month from March [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn write_adaptation_set(out: &mut String, content: &Content) {
    let d_ms = content.segment_duration().as_millis();
    out.push_str("    <AdaptationSet id=\"0\" contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\">\n");
    let _ = writeln!(
        out,
        "      <SegmentTemplate timescale=\"1000\" duration=\"{d_ms}\" startNumber=\"0\" \
         initialization=\"q$RepresentationID$/init.mp4\" media=\"q$RepresentationID$/$Number$.m4s\"/>"
    );
    for q in 0..content.ladder().len() {
        let bw = content.peak_bitrate(q).bits_per_sec.max(1);
        let _ = writeln!(
            out,
            "      <Representation id=\"{q}\" bandwidth=\"{bw}\" codecs=\"{VIDEO_CODEC}\"/>"
        );
    }
    out.push_str("    </AdaptationSet>\n");
}

const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
const NS_PROFILE: &str =
    "xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\"";

/// The on-demand MPD.
pub fn vod_mpd(content: &Content) -> String {
    let mut out = String::from(HEAD);
    let _ = writeln!(
        out,
        "<MPD {NS_PROFILE} type=\"static\" mediaPresentationDuration=\"{}\" minBufferTime=\"{}\">",
        xs_duration(content.total_duration()),
        xs_duration(content.segment_duration())
    );
    out.push_str("  <Period id=\"0\" start=\"PT0S\">\n");
    write_adaptation_set(&mut out, content);
    out.push_str("  </Period>\n</MPD>\n");
    out
}

/// The live MPD at simulated time `now`; `epoch_unix_ns` is the wall-clock time of simulated zero.
pub fn live_mpd(content: &Content, source: &LiveSource, now: Time, epoch_unix_ns: u64) -> String {
    let mut out = String::from(HEAD);
    let ast = xs_date_time(epoch_unix_ns + source.t0.as_nanos());
    let publish = xs_date_time(epoch_unix_ns + now.as_nanos());
    let _ = writeln!(
        out,
        "<MPD {NS_PROFILE} type=\"dynamic\" availabilityStartTime=\"{ast}\" publishTime=\"{publish}\" \
         minimumUpdatePeriod=\"{}\" timeShiftBufferDepth=\"{}\" minBufferTime=\"{}\">",
        xs_duration(source.segment_duration),
        xs_duration(source.segment_duration * source.window_segments as u32),
        xs_duration(source.segment_duration),
    );
    out.push_str("  <Period id=\"0\" start=\"PT0S\">\n");
    write_adaptation_set(&mut out, content);
    out.push_str("  </Period>\n</MPD>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::content::Ladder;
    use quick_xml::events::Event;
    use std::collections::BTreeMap;

    /// Parse with quick-xml (fails on malformed XML), return each element's attributes in order.
    fn elements(xml: &str) -> Vec<(String, BTreeMap<String, String>)> {
        let mut reader = quick_xml::Reader::from_str(xml);
        reader.config_mut().check_end_names = true;
        let mut out = Vec::new();
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) | Event::Empty(e) => {
                    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                    let attrs = e
                        .attributes()
                        .map(|a| {
                            let a = a.expect("well-formed attribute");
                            (
                                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                                a.unescape_value().unwrap().into_owned(),
                            )
                        })
                        .collect();
                    out.push((name, attrs));
                }
                Event::Eof => break,
                _ => {}
            }
        }
        out
    }

    fn content() -> Content {
        Content::cbr(Ladder::seed004(), Duration::from_secs(2), 600).unwrap()
    }

    #[test]
    fn vod_mpd_is_well_formed_with_the_required_attributes() {
        let els = elements(&vod_mpd(&content()));
        let mpd = &els[0].1;
        assert_eq!(els[0].0, "MPD");
        assert_eq!(mpd["xmlns"], "urn:mpeg:dash:schema:mpd:2011");
        assert_eq!(mpd["type"], "static");
        assert_eq!(mpd["mediaPresentationDuration"], "PT1200.000S");
        assert!(mpd.contains_key("profiles") && mpd.contains_key("minBufferTime"));
        let tpl = &els.iter().find(|(n, _)| n == "SegmentTemplate").unwrap().1;
        assert_eq!(
            (
                tpl["media"].as_str(),
                tpl["duration"].as_str(),
                tpl["timescale"].as_str()
            ),
            ("q$RepresentationID$/$Number$.m4s", "2000", "1000")
        );
        let reps: Vec<&BTreeMap<String, String>> = els
            .iter()
            .filter(|(n, _)| n == "Representation")
            .map(|(_, a)| a)
            .collect();
        assert_eq!(reps.len(), 6);
        assert_eq!(
            (reps[5]["id"].as_str(), reps[5]["bandwidth"].as_str()),
            ("5", "3000000")
        );
    }

    #[test]
    fn live_mpd_is_dynamic_and_dates_its_availability_start() {
        let src = LiveSource::new(Time::from_secs(10), Duration::from_secs(2), 600, 5).unwrap();
        // epoch 2026-11-23T00:00:00Z = 1_795_392_000 s since 1970
        let els = elements(&live_mpd(
            &content(),
            &src,
            Time::from_secs(30),
            1_795_392_000 * 1_000_000_000,
        ));
        let mpd = &els[0].1;
        assert_eq!(mpd["type"], "dynamic");
        assert_eq!(mpd["availabilityStartTime"], "2026-11-23T00:00:10.000Z");
        assert_eq!(mpd["publishTime"], "2026-11-23T00:00:30.000Z");
        assert_eq!(mpd["timeShiftBufferDepth"], "PT10.000S");
        assert_eq!(mpd["minimumUpdatePeriod"], "PT2.000S");
    }

    #[test]
    fn dates_cross_leap_years_and_centuries() {
        assert_eq!(xs_date_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            xs_date_time(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            xs_date_time(4_107_542_399_123_000_000),
            "2100-02-28T23:59:59.123Z"
        );
    }
}
