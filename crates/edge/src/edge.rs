//! The ETHLE edge's request logic, between the HTTP plumbing (`server`) and the model
//! (`tcpvideo_model::ethle`).
//!
//! Playlist request (ETHLE §III-A): fetch the stream's media playlist upstream (reused for
//! `playlist_ttl`; one refresh at a time per stream), and on the stream's first fetch take the
//! backhaul RTT from TCP_INFO on that connection; read l_seg and b_seg (`stream_info`); predict
//! th_bh with the BBR STARTUP model (doubling reading, see the model's header for why) and build
//! the stream's `StreamPolicy`; place the receiver (hold-0 / hold-x / redirect) with its th_ran;
//! serve hold-0 the upstream bytes, hold-x the held playlist (`playlist_rewrite`), redirect a 301
//! to the source; prefetch the held segments. Master playlists pass through (their BANDWIDTH
//! values are remembered for the media playlists they name). Anything else (segments, init
//! sections, keys, MPDs) is a segment request served through `segment_fetcher`.
//!
//! Start-up (a cold edge; not in the paper, which measured a warm one). Counted in backhaul RTTs
//! R up to the first player's first segment's first byte (docs/edge_demo.md): E2E, a player on a
//! new connection to the source, spends 3 (handshake, playlist, segment request). The edge:
//! - a new stream's first playlist request opens a few segment connections at once
//!   (`UpstreamClient::preconnect`), ready after 1 R, while the playlist (handshake + request,
//!   2 R) is fetched; later playlists reuse that keep-alive connection
//!   (`upstream::SmallRequestPool`);
//! - without a bitrate in the playlists, the edge answers at once, hold-0, instead of first
//!   asking the source for the newest segment's size (a HEAD: 1 R); the size comes from the
//!   Content-Length of that segment's GET, which the start-up prefetch sends anyway, and the
//!   receiver is moved to hold-x when the policy is known (the paper's one-way move; the live
//!   edge it was shown never goes back, so the held x segments build up as the source advances);
//! - a receiver's first playlist prefetches where hls.js will start
//!   (`prefetch::startup_segments_to_fetch`) on those connections, so the player's first segment
//!   request (0 R after the playlist over the RAN) joins a fetch whose first byte comes 1 R after
//!   the playlist: 3 R, as E2E. Each segment still rides its own new connection from the initial
//!   window (the model's premise).
//!
//! MPD requests go to `dash_stream` (the same decision, `mpd_rewrite` for the held MPD). The backhaul
//! model uses the source's sending MSS from TCP_INFO (`upstream::source_send_mss`) and no
//! bottleneck (the paper's case). A stream whose bitrate cannot be found (no BANDWIDTH, EXT-X-BITRATE, byte range,
//! or size of the newest segment) is served hold-0 and logged.
//!
//! Log lines for the cold-start timeline (`bench/ethle_real.py`, `edge_demo/timeline.py`):
//! "first playlist request", "backhaul measured", "stream policy", "first playlist answered",
//! "first segment request" / "first segment answered" (per receiver and stream, `server`),
//! "segment fetch started" / "upstream first byte" (per fetch, `segment_fetcher`).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use m3u8_rs::{MediaPlaylist, Playlist};
use tcpvideo_model::ethle::{BackhaulModel, Group, HoldInputs, StartupReading, StreamPolicy};
use tcpvideo_model::units::Bandwidth;
use tracing::{info, warn};

use crate::config::EdgeConfig;
use crate::metrics::Metrics;
use crate::playlist_rewrite::{hold_back, last_sequence};
use crate::prefetch::{held_segments_to_fetch, startup_segments_to_fetch};
use crate::receiver_context::ContextStore;
use crate::request_path::{resolve_reference, EdgePath};
use crate::segment_cache::{SegmentKey, StreamPosition};
use crate::segment_fetcher::SegmentFetcher;
use crate::stream_info::{bitrate_from_playlist, bitrate_from_size, range_headers, segment_length};
use crate::upstream::{BackhaulSample, UpstreamClient};

/// What the edge answers to a playlist request.
#[derive(Debug)]
pub enum PlaylistAnswer {
    Body { bytes: Bytes, content_type: &'static str },
    Redirect { location: String },
    Error { status: u16, reason: String },
}

const M3U8_TYPE: &str = "application/vnd.apple.mpegurl";

/// A listed segment: sequence number, edge path, and its Range header (byte-range segments).
type Listed = (u64, EdgePath, Option<String>);

/// One media playlist's view of the source, refreshed at most every `playlist_ttl`.
struct UpstreamView {
    fetched_at: Instant,
    playlist: Arc<MediaPlaylist>,
    raw: Bytes,
    /// (sequence, edge path) of each listed segment, in order.
    segments: Vec<Listed>,
}

#[derive(Default)]
struct StreamState {
    view: Option<UpstreamView>,
    backhaul: Option<BackhaulSample>,
    policy: Option<StreamPolicy>,
    policy_unavailable_logged: bool,
    /// Last sequence each receiver was shown (held or not): playlists never go back.
    shown: HashMap<u64, u64>,
    newest_requested: Option<u64>,
    newest_prefetched: Option<u64>,
    /// Segment connections were opened ahead for this stream's first segment fetches.
    preconnected: bool,
    /// The newest segment's size is being fetched for the bitrate (no policy until it is known).
    probing_bitrate: bool,
    /// Receivers whose first segment request was seen (logged once each, for the timeline).
    started_segments: HashSet<u64>,
}

struct Stream {
    refresh: tokio::sync::Mutex<()>,
    state: Mutex<StreamState>,
}

pub struct Edge {
    pub config: EdgeConfig,
    pub client: UpstreamClient,
    pub fetcher: Arc<SegmentFetcher>,
    pub metrics: Arc<Metrics>,
    pub context: ContextStore,
    /// MPEG-DASH streams (`dash_stream`).
    pub dash: crate::dash_stream::DashStreams,
    streams: Mutex<HashMap<String, Arc<Stream>>>,
    master_bandwidth: Mutex<HashMap<String, Bandwidth>>,
    segment_index: Mutex<HashMap<String, StreamPosition>>,
}

/// A receiver as the edge knows it: an id and its th_ran (None: unknown, treated as unlimited).
#[derive(Clone, Debug)]
pub struct Receiver {
    pub id: String,
    pub ran: Option<Bandwidth>,
}

impl Receiver {
    pub(crate) fn key(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.id.hash(&mut h);
        h.finish()
    }
}

impl Edge {
    pub fn new(config: EdgeConfig) -> Arc<Edge> {
        let metrics = Arc::new(Metrics::default());
        let client = UpstreamClient::new(config.upstream.clone(), config.header_timeout, config.body_idle_timeout);
        let fetcher = SegmentFetcher::new(client.clone(), config.cache_bytes, config.max_object_bytes, config.retries, metrics.clone());
        Arc::new(Edge {
            config,
            client,
            fetcher,
            metrics,
            context: ContextStore::default(),
            dash: Default::default(),
            streams: Mutex::new(HashMap::new()),
            master_bandwidth: Mutex::new(HashMap::new()),
            segment_index: Mutex::new(HashMap::new()),
        })
    }

    fn stream(&self, path: &str) -> Arc<Stream> {
        self.streams
            .lock()
            .unwrap()
            .entry(path.to_string())
            .or_insert_with(|| Arc::new(Stream { refresh: tokio::sync::Mutex::new(()), state: Mutex::new(StreamState::default()) }))
            .clone()
    }

    /// Where a segment path sits in its stream, if a playlist listed it.
    pub fn position_of(&self, path: &EdgePath) -> Option<StreamPosition> {
        self.segment_index.lock().unwrap().get(&path.path_and_query()).cloned()
    }

    /// A playlist request (`.m3u8`).
    pub async fn playlist(self: &Arc<Self>, path: &EdgePath, receiver: &Receiver) -> PlaylistAnswer {
        let stream_key = path.path_and_query();
        let stream = self.stream(&stream_key);
        {
            let mut s = stream.state.lock().unwrap();
            if !s.shown.contains_key(&receiver.key()) {
                info!(stream = %stream_key, receiver = %receiver.id, "first playlist request");
            }
            if !s.preconnected {
                // A new stream: its first segment fetches follow the playlist by one backhaul
                // RTT at most; open their connections now, while the playlist itself is fetched,
                // so their handshakes are done by then (each still carries one fetch).
                s.preconnected = true;
                self.client.preconnect(STARTUP_PRECONNECTS);
            }
        }
        if let Some(Group::Redirected) = stream.state.lock().unwrap().policy.as_ref().and_then(|p| p.group_of(receiver.key())) {
            return self.redirect(path);
        }
        let master = match self.refresh(&stream, path).await {
            Ok(master) => master,
            Err(answer) => return answer,
        };
        if let Some(raw) = master {
            return PlaylistAnswer::Body { bytes: raw, content_type: M3U8_TYPE };
        }
        self.ensure_policy(&stream, &stream_key);
        self.answer_media(&stream, &stream_key, path, receiver)
    }

    /// Fetch the playlist upstream if the view is stale. `Ok(Some(raw))` for a master playlist.
    async fn refresh(&self, stream: &Stream, path: &EdgePath) -> Result<Option<Bytes>, PlaylistAnswer> {
        let _one_refresh_at_a_time = stream.refresh.lock().await;
        {
            let s = stream.state.lock().unwrap();
            if let Some(v) = &s.view {
                if v.fetched_at.elapsed() < self.config.playlist_ttl {
                    return Ok(None);
                }
            }
        }
        Metrics::bump(&self.metrics.upstream_fetches);
        let (response, raw) = match self.client.get_small(&path.path_and_query(), self.config.max_playlist_bytes).await {
            Ok(r) => r,
            Err(e) => {
                Metrics::bump(&self.metrics.upstream_errors);
                if matches!(e, crate::upstream::UpstreamError::TooLarge { .. }) {
                    Metrics::bump(&self.metrics.playlists_rejected);
                }
                warn!(playlist = %path.path, error = %e, "playlist rejected");
                let status = if e.to_string().contains("timed out") { 504 } else { 502 };
                return Err(PlaylistAnswer::Error { status, reason: e.to_string() });
            }
        };
        if !response.status.is_success() {
            return Err(PlaylistAnswer::Error { status: response.status.as_u16(), reason: format!("upstream status {}", response.status) });
        }
        let parsed = match m3u8_rs::parse_playlist_res(&raw) {
            Ok(p) => p,
            Err(_) => {
                Metrics::bump(&self.metrics.playlists_rejected);
                let head: String = String::from_utf8_lossy(&raw[..raw.len().min(40)]).escape_debug().collect();
                warn!(playlist = %path.path, bytes = raw.len(), starts_with = %head, "playlist rejected: not a parsable HLS playlist");
                return Err(PlaylistAnswer::Error { status: 502, reason: "upstream playlist is not HLS".into() });
            }
        };
        match parsed {
            Playlist::MasterPlaylist(master) => {
                let mut known = self.master_bandwidth.lock().unwrap();
                for variant in &master.variants {
                    if let Some(p) = resolve_reference(&path.path, &variant.uri, &self.config.upstream.authority) {
                        known.insert(p.path_and_query(), Bandwidth::from_bps(variant.bandwidth));
                    }
                }
                Ok(Some(raw))
            }
            Playlist::MediaPlaylist(media) => {
                self.install_view(stream, path, media, raw, response.backhaul);
                Ok(None)
            }
        }
    }

    fn install_view(&self, stream: &Stream, path: &EdgePath, media: MediaPlaylist, raw: Bytes, backhaul: Option<BackhaulSample>) {
        let stream_key = path.path_and_query();
        let ranges = range_headers(&media);
        let segments: Vec<Listed> = media
            .segments
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                resolve_reference(&path.path, &s.uri, &self.config.upstream.authority)
                    .map(|p| (media.media_sequence + i as u64, p, ranges[i].clone()))
            })
            .collect();
        {
            let mut index = self.segment_index.lock().unwrap();
            index.retain(|_, pos| pos.stream != stream_key || pos.sequence >= media.media_sequence);
            for (seq, p, _) in &segments {
                index.insert(p.path_and_query(), StreamPosition { stream: stream_key.clone(), sequence: *seq });
            }
        }
        self.fetcher.evict_left_window(&stream_key, media.media_sequence);
        let mut s = stream.state.lock().unwrap();
        if s.backhaul.is_none() {
            let sample = self.config.backhaul(backhaul);
            if let Some(b) = sample {
                info!(stream = %stream_key, rtt_us = b.rtt.as_micros() as u64, mss = b.mss_bytes, "backhaul measured");
                self.metrics.set_stream(&stream_key, |g| g.backhaul_rtt_us = b.rtt.as_micros() as u64);
            }
            s.backhaul = sample;
        }
        s.view = Some(UpstreamView { fetched_at: Instant::now(), playlist: Arc::new(media), raw, segments });
    }

    /// Build the stream's policy once RTT and bitrate are known. Without a bitrate in the
    /// playlists, the newest segment's size is fetched in the background (`size_of`: its GET's
    /// Content-Length; the segment is needed anyway) and the policy follows when it arrives;
    /// until then receivers are served hold-0 and moved to hold-x after (the paper's one-way
    /// move, §III-B; `hold_back` never shows a receiver an earlier live edge).
    fn ensure_policy(self: &Arc<Self>, stream: &Arc<Stream>, stream_key: &str) {
        let playlist = {
            let s = stream.state.lock().unwrap();
            if s.policy.is_some() || s.probing_bitrate {
                return;
            }
            match (&s.view, s.backhaul) {
                (Some(v), Some(_)) => v.playlist.clone(),
                _ => return,
            }
        };
        let bitrate = self.master_bandwidth.lock().unwrap().get(stream_key).copied().or_else(|| bitrate_from_playlist(&playlist));
        if bitrate.is_some() {
            self.install_policy(stream, stream_key, &playlist, bitrate);
            return;
        }
        let Some(newest) = stream.state.lock().unwrap().view.as_ref().and_then(|v| v.segments.last().cloned()) else {
            self.install_policy(stream, stream_key, &playlist, None);
            return;
        };
        {
            // One probe per stream, however many first requests raced here.
            let mut s = stream.state.lock().unwrap();
            if s.probing_bitrate || s.policy.is_some() {
                return;
            }
            s.probing_bitrate = true;
        }
        let (edge, stream, stream_key) = (self.clone(), stream.clone(), stream_key.to_string());
        tokio::spawn(async move {
            let duration = playlist.segments.last().map_or(0.0, |s| s.duration as f64);
            let (seq, path, range) = newest;
            let key = SegmentKey { path_and_query: path.path_and_query(), range: range.clone() };
            edge.prefetch(&stream_key, vec![(seq, path, range)]);
            let position = StreamPosition { stream: stream_key.clone(), sequence: seq };
            let size = edge.fetcher.size_of(&key, Some(position)).await;
            let bitrate = size.and_then(|bytes| bitrate_from_size(bytes, duration));
            edge.install_policy(&stream, &stream_key, &playlist, bitrate);
        });
    }

    fn install_policy(&self, stream: &Stream, stream_key: &str, playlist: &MediaPlaylist, bitrate: Option<Bandwidth>) {
        let mut s = stream.state.lock().unwrap();
        s.probing_bitrate = false;
        let (Some(backhaul), None) = (s.backhaul, &s.policy) else { return };
        let l_seg = segment_length(playlist);
        let Some(bitrate) = bitrate else {
            if !s.policy_unavailable_logged {
                warn!(stream = %stream_key, "no bitrate (BANDWIDTH, EXT-X-BITRATE, byte range or segment size): serving hold-0");
                s.policy_unavailable_logged = true;
            }
            return;
        };
        let segment_bytes = bitrate.bytes_in(l_seg);
        let model =
            BackhaulModel { mss_bytes: backhaul.mss_bytes, rtt: backhaul.rtt, bottleneck: None, reading: StartupReading::DoublingPerRound };
        let prediction = model.predict(segment_bytes);
        let policy = StreamPolicy::new(HoldInputs {
            segment_bytes,
            segment_length: l_seg,
            bitrate,
            backhaul_throughput: prediction.throughput,
            ran_throughput: Bandwidth::ZERO,
            max_hold: self.config.max_x,
        });
        let x = policy.stream_hold().held_segments();
        info!(stream = %stream_key, bitrate_bps = bitrate.bits_per_sec, segment_s = l_seg.as_secs_f64(), th_bh_bps = prediction.throughput.bits_per_sec, x, "stream policy");
        self.metrics.set_stream(stream_key, |g| g.hold_x = x);
        s.policy = Some(policy);
    }

    fn answer_media(self: &Arc<Self>, stream: &Stream, stream_key: &str, path: &EdgePath, receiver: &Receiver) -> PlaylistAnswer {
        let mut s = stream.state.lock().unwrap();
        let Some(view) = s.view.as_ref() else {
            return PlaylistAnswer::Error { status: 502, reason: "no playlist".into() };
        };
        let (playlist, raw) = (view.playlist.clone(), view.raw.clone());
        let rkey = receiver.key();
        let group = match s.policy.as_mut() {
            Some(policy) => policy.on_request(rkey, receiver.ran.unwrap_or(Bandwidth::from_bps(u64::MAX))),
            None => Group::Hold0,
        };
        if let Some(p) = &s.policy {
            let (h0, hx, red) = p.counts();
            self.metrics.set_stream(stream_key, |g| {
                g.receivers_hold0 = h0 as u64;
                g.receivers_hold_x = hx as u64;
                g.receivers_redirected = red as u64;
            });
        }
        let new_receiver = !s.shown.contains_key(&rkey);
        let (answer, served_edge, ahead) = match group {
            Group::Redirected => {
                drop(s);
                return self.redirect(path);
            }
            Group::Hold0 => {
                let last = last_sequence(&playlist);
                if let Some(last) = last {
                    s.shown.insert(rkey, last);
                }
                (PlaylistAnswer::Body { bytes: raw, content_type: M3U8_TYPE }, last, Vec::new())
            }
            Group::HoldX { x, .. } => {
                let held = hold_back(&playlist, x, s.shown.get(&rkey).copied());
                let mut ahead = Vec::new();
                if let Some(last) = held.last_served_sequence {
                    s.shown.insert(rkey, last);
                    let newest = last_sequence(&playlist).unwrap_or(last);
                    ahead = held_segments_to_fetch(last, x, newest).collect();
                }
                (PlaylistAnswer::Body { bytes: Bytes::from(held.text), content_type: M3U8_TYPE }, held.last_served_sequence, ahead)
            }
        };
        // A new receiver's start (a cold edge has none of it yet) first, then the held segments.
        let startup = match (new_receiver, served_edge) {
            (true, Some(edge)) => startup_segments_to_fetch(edge, playlist.media_sequence).collect(),
            _ => Vec::new(),
        };
        let to_fetch: Vec<Listed> = startup
            .into_iter()
            .chain(ahead)
            .filter_map(|seq| s.view.as_ref()?.segments.iter().find(|(q, _, _)| *q == seq).cloned())
            .collect();
        drop(s);
        if new_receiver {
            let (group, x) = match group {
                Group::Hold0 => ("hold-0", 0),
                Group::HoldX { x, .. } => ("hold-x", x),
                Group::Redirected => ("redirected", 0),
            };
            info!(stream = %stream_key, receiver = %receiver.id, group, x, served_edge, "first playlist answered");
        }
        self.prefetch(stream_key, to_fetch);
        answer
    }

    fn prefetch(&self, stream_key: &str, segments: Vec<Listed>) {
        let mut newest = None;
        for (seq, p, range) in segments {
            let key = SegmentKey { path_and_query: p.path_and_query(), range };
            self.fetcher.prefetch(&key, Some(StreamPosition { stream: stream_key.to_string(), sequence: seq }));
            newest = Some(seq);
        }
        if let Some(n) = newest {
            let stream = self.stream(stream_key);
            let mut s = stream.state.lock().unwrap();
            s.newest_prefetched = Some(s.newest_prefetched.map_or(n, |p| p.max(n)));
            let lead = s.newest_prefetched.unwrap_or(0) as i64 - s.newest_requested.unwrap_or(0) as i64;
            self.metrics.set_stream(stream_key, |g| g.prefetch_lead_segments = lead);
        }
    }

    /// A receiver's segment request has arrived: true (and a log line for the cold-start
    /// timeline) if it is this receiver's first of the stream.
    pub fn note_segment_request(&self, position: &StreamPosition, receiver: &Receiver, segment: &str) -> bool {
        let stream = self.stream(&position.stream);
        let first = stream.state.lock().unwrap().started_segments.insert(receiver.key());
        if first {
            info!(stream = %position.stream, receiver = %receiver.id, segment, sequence = position.sequence, "first segment request");
        }
        first
    }

    /// After a receiver's segment request: keep the stream's lead x segments ahead of it.
    pub fn after_segment_request(&self, position: &StreamPosition, receiver: &Receiver) {
        let stream = self.stream(&position.stream);
        let to_fetch = {
            let mut s = stream.state.lock().unwrap();
            s.newest_requested = Some(s.newest_requested.map_or(position.sequence, |n| n.max(position.sequence)));
            let x = match s.policy.as_ref().and_then(|p| p.group_of(receiver.key())) {
                Some(Group::HoldX { x, .. }) => x,
                _ => 0,
            };
            let Some(view) = s.view.as_ref() else { return };
            let newest = view.segments.last().map_or(0, |(q, _, _)| *q);
            held_segments_to_fetch(position.sequence, x, newest)
                .filter_map(|seq| view.segments.iter().find(|(q, _, _)| *q == seq).cloned())
                .collect::<Vec<_>>()
        };
        self.prefetch(&position.stream, to_fetch);
    }

    pub fn redirect(&self, path: &EdgePath) -> PlaylistAnswer {
        Metrics::bump(&self.metrics.redirects);
        PlaylistAnswer::Redirect { location: self.config.upstream.url_for(&path.path_and_query()) }
    }

    /// `/metrics`: the edge's counters and gauges and the upstream client's connection counts.
    pub fn metrics_text(&self) -> String {
        let (opened, reused) = self.client.small_pool.counts();
        self.metrics.render_with(&[
            (
                "ethle_upstream_small_connections_opened_total",
                "new upstream connections opened for playlists and MPDs (SmallRequestPool, the standby one included)",
                opened,
            ),
            ("ethle_upstream_small_requests_reused_total", "playlist and MPD requests sent on a reused keep-alive connection", reused),
            (
                "ethle_upstream_preconnected_used_total",
                "segment fetches that went on a connection opened ahead (handshake done before the request)",
                self.client.preconnected.used(),
            ),
        ])
    }

    /// The stream's x (for tests and the log), if its policy is built.
    pub fn stream_x(&self, stream_key: &str) -> Option<u32> {
        let stream = self.streams.lock().unwrap().get(stream_key)?.clone();
        let s = stream.state.lock().unwrap();
        s.policy.as_ref().map(|p| p.stream_hold().held_segments())
    }
}

/// Connections opened ahead on a stream's first playlist request: the 4 start-up segments of a
/// new hls.js receiver, which the edge fetches the moment the playlist arrives (the held ones
/// follow the policy, one RTT later, and open their own).
const STARTUP_PRECONNECTS: usize = 4;

/// How long to wait for a playlist before the server gives up on it.
pub const PLAYLIST_DEADLINE: Duration = Duration::from_secs(30);
