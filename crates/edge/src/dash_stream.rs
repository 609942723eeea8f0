//! MPD requests (MPEG-DASH live streams): the DASH twin of the edge's HLS playlist path.
//!
//! Each MPD request is fetched upstream (MPDs are small; no reuse window), the stream's first
//! fetch gives the backhaul RTT (TCP_INFO, or `--backhaul-rtt-ms`), the MPD gives b_seg (highest
//! Representation@bandwidth) and l_seg (template `@duration` or timeline `S@d`), and the same
//! model builds the stream's [`StreamPolicy`]; the receiver is placed (hold-0 / hold-x / 301) as
//! for HLS and a hold-x receiver gets [`hold_back_mpd`]'s MPD.
//!
//! Serving a held MPD also prefetches the segments it hides (number-based templates, the top
//! Representation of each adaptation set: [`held_segment_urls`]), resolved against the MPD's
//! directory, through the coalescing fetcher (fetched once however many receivers follow).
//!
//! A segment request the HLS index does not know is looked up in the DASH streams' number
//! templates (`dash_segment_map`: path → representation and number); for a hold-x receiver the
//! edge then fetches that Representation's next x segments the source has (as HLS's
//! `Edge::after_segment_request`), so a receiver that reloads the MPD less often than once per
//! segment still finds the lead refreshed at each segment it asks for.
//!
//! A receiver moved from hold-0 to hold-x is never shown an earlier live edge than before
//! (`dash_never_back`: its hold grows by one segment per segment time up to x; number-based
//! templates only). Not yet: prefetch for SegmentTimeline / `$Time$` templates and absolute
//! media URLs (skipped).

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use tcpvideo_model::ethle::{BackhaulModel, Group, HoldInputs, StartupReading, StreamPolicy};
use tcpvideo_model::units::Bandwidth;
use tracing::{info, warn};

use crate::dash_never_back::ShownEdges;
use crate::dash_segment_map::{number_templates, NumberTemplate};
use crate::edge::{Edge, PlaylistAnswer, Receiver};
use crate::metrics::Metrics;
use crate::mpd_rewrite::{held_segment_urls, hold_back_mpd, stream_facts};
use crate::prefetch::held_segments_to_fetch;
use crate::request_path::EdgePath;
use crate::segment_cache::SegmentKey;
use crate::upstream::BackhaulSample;

pub const MPD_TYPE: &str = "application/dash+xml";

#[derive(Default)]
struct DashStream {
    backhaul: Option<BackhaulSample>,
    policy: Option<StreamPolicy>,
    shown: ShownEdges,
    /// The MPD's directory (segment URLs are relative to it) and its number templates, from the
    /// latest MPD fetched.
    dir: String,
    templates: Vec<NumberTemplate>,
}

/// Per-MPD state of the edge.
#[derive(Default)]
pub struct DashStreams {
    streams: Mutex<HashMap<String, DashStream>>,
}

impl DashStreams {
    /// The stream's x, if its policy is built (tests, logs).
    pub fn stream_x(&self, key: &str) -> Option<u32> {
        self.streams.lock().unwrap().get(key)?.policy.as_ref().map(|p| p.stream_hold().held_segments())
    }
}

/// Answer one MPD request.
pub async fn answer_mpd(edge: &Edge, path: &EdgePath, receiver: &Receiver) -> PlaylistAnswer {
    let key = path.path_and_query();
    Metrics::bump(&edge.metrics.upstream_fetches);
    let (response, raw) = match edge.client.get_small(&key, edge.config.max_playlist_bytes).await {
        Ok(r) => r,
        Err(e) => {
            Metrics::bump(&edge.metrics.upstream_errors);
            warn!(mpd = %path.path, error = %e, "MPD rejected");
            return PlaylistAnswer::Error { status: 502, reason: e.to_string() };
        }
    };
    if !response.status.is_success() {
        return PlaylistAnswer::Error { status: response.status.as_u16(), reason: format!("upstream status {}", response.status) };
    }
    let Ok(text) = std::str::from_utf8(&raw) else {
        Metrics::bump(&edge.metrics.playlists_rejected);
        warn!(mpd = %path.path, bytes = raw.len(), "MPD rejected: not UTF-8");
        return PlaylistAnswer::Error { status: 502, reason: "upstream MPD is not UTF-8".into() };
    };
    let (dynamic, bandwidth, length) = match stream_facts(text) {
        Ok(f) => f,
        Err(e) => {
            Metrics::bump(&edge.metrics.playlists_rejected);
            warn!(mpd = %path.path, error = %e, "MPD rejected");
            return PlaylistAnswer::Error { status: 502, reason: "upstream MPD is not parsable".into() };
        }
    };
    let upstream_edge = newest_segment_number(text);
    let templates = number_templates(text).unwrap_or_default();
    let group = {
        let mut all = edge.dash.streams.lock().unwrap();
        let s = all.entry(key.clone()).or_default();
        s.dir = mpd_directory(path).to_string();
        s.templates = templates;
        if s.backhaul.is_none() {
            s.backhaul = edge.config.backhaul(response.backhaul);
        }
        if let (None, Some(b), Some(bps), Some(l_seg), true) = (&s.policy, s.backhaul, bandwidth, length, dynamic) {
            let bitrate = Bandwidth::from_bps(bps);
            let segment_bytes = bitrate.bytes_in(l_seg);
            let model = BackhaulModel { mss_bytes: b.mss_bytes, rtt: b.rtt, bottleneck: None, reading: StartupReading::DoublingPerRound };
            let th = model.predict(segment_bytes).throughput;
            let policy = StreamPolicy::new(HoldInputs {
                segment_bytes,
                segment_length: l_seg,
                bitrate,
                backhaul_throughput: th,
                ran_throughput: Bandwidth::ZERO,
                max_hold: edge.config.max_x,
            });
            let x = policy.stream_hold().held_segments();
            info!(mpd = %key, bitrate_bps = bps, segment_s = l_seg.as_secs_f64(), th_bh_bps = th.bits_per_sec, x, "stream policy (DASH)");
            edge.metrics.set_stream(&key, |g| g.hold_x = x);
            s.policy = Some(policy);
        }
        let group = match s.policy.as_mut() {
            Some(p) => p.on_request(receiver.key(), receiver.ran.unwrap_or(Bandwidth::from_bps(u64::MAX))),
            None => Group::Hold0,
        };
        match group {
            Group::Hold0 => {
                s.shown.serve(receiver.key(), 0, upstream_edge);
                group
            }
            Group::HoldX { x, assured } => match s.shown.serve(receiver.key(), x, upstream_edge) {
                0 => Group::Hold0,
                held => Group::HoldX { x: held, assured },
            },
            Group::Redirected => group,
        }
    };
    match group {
        Group::Redirected => edge.redirect(path),
        Group::Hold0 => PlaylistAnswer::Body { bytes: raw, content_type: MPD_TYPE },
        Group::HoldX { x, .. } => match hold_back_mpd(text, x) {
            Ok(held) => {
                prefetch_held(edge, path, text, held.held);
                PlaylistAnswer::Body { bytes: Bytes::from(held.text), content_type: MPD_TYPE }
            }
            Err(e) => {
                warn!(mpd = %path.path, error = %e, "MPD cannot be held: served unchanged");
                PlaylistAnswer::Body { bytes: raw, content_type: MPD_TYPE }
            }
        },
    }
}

/// `/live/stream.mpd` → `/live/`.
fn mpd_directory(path: &EdgePath) -> &str {
    &path.path[..path.path.rfind('/').map_or(0, |i| i + 1)]
}

/// After a segment request no HLS playlist listed: if a DASH stream's number template writes
/// this path, fetch the next x segments of the same Representation that the source has
/// (x of the receiver's group; nothing for hold-0). Returns whether the path was a DASH segment.
pub fn after_segment_request(edge: &Edge, path: &EdgePath, receiver: &Receiver) -> bool {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let Some(now) = chrono::DateTime::from_timestamp(since_epoch.as_secs() as i64, since_epoch.subsec_nanos()) else { return false };
    let to_fetch: Option<Vec<String>> = {
        let all = edge.dash.streams.lock().unwrap();
        all.values().find_map(|s| {
            let file = path.path.strip_prefix(s.dir.as_str())?;
            let (t, number) = s.templates.iter().find_map(|t| t.number_of(file).map(|n| (t, n)))?;
            if t.media.starts_with('/') || t.media.contains("://") {
                return Some(Vec::new()); // absolute media URLs: not resolved against the MPD (as `prefetch_held`)
            }
            let x = match s.policy.as_ref().and_then(|p| p.group_of(receiver.key())) {
                Some(Group::HoldX { x, .. }) => x,
                _ => 0,
            };
            let newest = t.newest_available(now).unwrap_or(0);
            Some(held_segments_to_fetch(number, x, newest).map(|n| format!("{}{}", s.dir, t.url(n))).collect())
        })
    };
    let Some(to_fetch) = to_fetch else { return false };
    for p in to_fetch {
        edge.fetcher.prefetch(&SegmentKey { path_and_query: p, range: None }, None);
    }
    true
}

/// The upstream live edge: the newest complete segment's number (number-based templates only).
fn newest_segment_number(mpd: &str) -> Option<u64> {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let now = chrono::DateTime::from_timestamp(since_epoch.as_secs() as i64, since_epoch.subsec_nanos())?;
    held_segment_urls(mpd, 1, now).ok()?.into_iter().map(|(n, _)| n).max()
}

/// Fetch the `x` segments a held MPD hides (relative media URLs only, against the MPD's directory).
fn prefetch_held(edge: &Edge, path: &EdgePath, mpd: &str, x: u32) {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let Some(now) = chrono::DateTime::from_timestamp(since_epoch.as_secs() as i64, since_epoch.subsec_nanos()) else { return };
    let urls = match held_segment_urls(mpd, x, now) {
        Ok(u) => u,
        Err(e) => {
            warn!(mpd = %path.path, error = %e, "held DASH segments not prefetched");
            return;
        }
    };
    let dir = mpd_directory(path);
    for (_, url) in urls {
        if url.starts_with('/') || url.contains("://") {
            continue;
        }
        edge.fetcher.prefetch(&SegmentKey { path_and_query: format!("{dir}{url}"), range: None }, None);
    }
}
