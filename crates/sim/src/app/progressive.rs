//! Progressive download (`app = "progressive"`): one HTTP/1.1 GET of one video file, served the
//! way YouTube's ustreamer serves it (startup burst, then a throttling-phase delivery mode of
//! [`tcpvideo_model::delivery`]), read by a browser-like player. Ghobadi et al., "Trickle: Rate
//! Limiting YouTube Video Streaming", USENIX ATC 2012, §2–§4 (seed 003); the same server also
//! carries seed 001's streaming testbed (a frame-deadline player over one progressive response).
//!
//! Where to look:
//! - this file: the flow's keys (`progressive = { ... }`), validated into [`ProgressiveDef`], and
//!   the file it serves ([`ProgressiveDef::content`]).
//! - [`super::progressive_server`]: the server side, driving [`Ustreamer::poll`] per connection
//!   (write n bytes, wake at, cwnd clamp, max pacing rate) and recording the phase statistics.
//! - [`super::progressive_client`]: the client side: the request, the response head, and the
//!   playback model ([`Playback`]: the model's [`Playout`] buffer in media seconds, or its
//!   frame-deadline [`FramePlayer`]).
//!
//! The file is CBR at `rate` for `media` seconds, cut into `chunk`-long pieces; a piece becomes
//! playable when its last byte has been read (a browser's media element appends data in small
//! pieces; 1 s is our choice — the seed does not describe the player).
//!
//! [`Ustreamer::poll`]: tcpvideo_model::delivery::Ustreamer::poll
//! [`Playout`]: tcpvideo_model::video::playout::Playout
//! [`FramePlayer`]: tcpvideo_model::video::frame_player::FramePlayer
//! [`Playback`]: super::progressive_client::Playback

use std::time::Duration;

use serde::Deserialize;
use tcpvideo_model::delivery::DeliveryMode;
use tcpvideo_model::video::{Content, Ladder};
use tcpvideo_model::Bandwidth;

use crate::scenario::{Qty, ScenarioError};

/// `progressive = { ... }` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressiveSpec {
    /// Delivery mode after the startup phase (`tcpvideo_model::delivery::MODES`; default "baseline").
    pub mode: Option<String>,
    /// Encoding rate of the file, R (default 1 Mbit/s).
    pub rate: Option<Qty>,
    /// Length of the video in media time (default 120 s).
    pub media: Option<Qty>,
    /// Media time sent in the startup phase (paper: 30–40 s; default 30 s).
    pub startup_media: Option<Qty>,
    /// "buffer" (default: playback buffer in media seconds, stalls) or "frames" (frame deadlines,
    /// picture discards and underflows: seed 001).
    pub playback: Option<String>,
    /// Media buffered before playback starts (buffer player: default 2 s; frame player: default
    /// 1 s, the client's playout buffer — VLC's network caching — which the server also hands to
    /// its congestion control as `AppInfo::playout_buffer`, seed 001).
    pub startup_threshold: Option<Qty>,
    /// Media buffered before playback resumes after a stall (buffer player; default 2 s).
    pub rebuffer_threshold: Option<Qty>,
    /// Granularity at which the buffer player receives media (default 1 s).
    pub chunk: Option<Qty>,
    /// Frame player only: the client reads from its socket only while it holds less than this
    /// much media ahead of the playout clock (VLC's playout buffer, seed 001's POB, pushing back
    /// through TCP flow control when full); at least `startup_threshold`. Default: reads at once.
    pub read_ahead: Option<Qty>,
}

/// How the client plays what it reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlaybackDef {
    /// Playout buffer in media seconds (startup and rebuffer thresholds).
    Buffer { startup_threshold: Duration, rebuffer_threshold: Duration },
    /// Seed 001's frame-deadline player: the model's defaults but for the playout buffer filled
    /// before playback starts (VLC's network caching).
    Frames { startup_threshold: Duration },
}

/// A progressive flow, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressiveDef {
    /// The mode's registry name (for the tables).
    pub mode_name: String,
    pub mode: DeliveryMode,
    pub rate: Bandwidth,
    pub media: Duration,
    pub startup_media: Duration,
    pub chunk: Duration,
    pub playback: PlaybackDef,
    /// Media the frame player's reader holds at most ahead of the playout clock (None: no limit).
    pub read_ahead: Option<Duration>,
}

/// The path the client asks for (a YouTube-like progressive MP4).
pub const FILE_PATH: &str = "/videoplayback/video.mp4";

impl ProgressiveDef {
    /// The served file: `rate` CBR, `media` long, in `chunk` pieces (the last one may be shorter
    /// in media time; it is rounded up to a whole chunk, so the file may run up to one chunk long).
    pub fn content(&self) -> Content {
        let n = self.media.as_nanos().div_ceil(self.chunk.as_nanos()).max(1) as u64;
        let ladder = Ladder::from_kbps("progressive.rate", &[self.rate.bits_per_sec as f64 / 1000.0]).expect("rate validated");
        Content::cbr(ladder, self.chunk, n).expect("chunk validated")
    }

    /// Body bytes of the file.
    pub fn file_bytes(&self) -> u64 {
        let c = self.content();
        (0..c.segment_count()).filter_map(|k| c.segment_bytes(k, 0)).sum()
    }
}

/// Validate `progressive = { ... }` of the flow at `path`.
pub fn progressive_of(spec: Option<&ProgressiveSpec>, path: &str) -> Result<ProgressiveDef, ScenarioError> {
    let d = ProgressiveSpec::default();
    let s = spec.unwrap_or(&d);
    let p = |k: &str| format!("{path}.{k}");
    let mode_name = s.mode.clone().unwrap_or_else(|| "baseline".into());
    let mode = DeliveryMode::from_name(&mode_name).map_err(|e| ScenarioError(format!("{}: {e}", p("mode"))))?;
    let dur = |q: &Option<Qty>, k: &str, default: Duration| -> Result<Duration, ScenarioError> {
        q.as_ref().map(|q| q.duration(&p(k))).transpose().map(|v| v.unwrap_or(default))
    };
    let rate = match &s.rate {
        Some(q) => q.rate(&p("rate"))?,
        None => Bandwidth::from_mbps(1),
    };
    if rate.bits_per_sec < 8_000 {
        return Err(ScenarioError(format!("{}: must be at least 8 kbit/s", p("rate"))));
    }
    let media = dur(&s.media, "media", Duration::from_secs(120))?;
    if media < Duration::from_secs(1) || media > Duration::from_secs(86_400) {
        return Err(ScenarioError(format!("{}: must be between 1 s and 24 h", p("media"))));
    }
    let startup_media = dur(&s.startup_media, "startup_media", Duration::from_secs(30))?;
    let chunk = dur(&s.chunk, "chunk", Duration::from_secs(1))?;
    if chunk < Duration::from_millis(10) || chunk > media {
        return Err(ScenarioError(format!("{}: must be between 10 ms and the media length", p("chunk"))));
    }
    let startup_threshold = dur(&s.startup_threshold, "startup_threshold", Duration::from_secs(2))?;
    let rebuffer_threshold = dur(&s.rebuffer_threshold, "rebuffer_threshold", Duration::from_secs(2))?;
    let playback = match s.playback.as_deref() {
        None | Some("buffer") => PlaybackDef::Buffer { startup_threshold, rebuffer_threshold },
        Some("frames") => {
            if s.rebuffer_threshold.is_some() {
                return Err(ScenarioError(format!("{}: not used by playback \"frames\"", p("rebuffer_threshold"))));
            }
            let startup_threshold = dur(&s.startup_threshold, "startup_threshold", Duration::from_secs(1))?;
            if startup_threshold.is_zero() || startup_threshold > media {
                return Err(ScenarioError(format!("{}: must be above 0 and at most the media length", p("startup_threshold"))));
            }
            PlaybackDef::Frames { startup_threshold }
        }
        Some(o) => return Err(ScenarioError(format!("{}: unknown playback {o:?} (buffer, frames)", p("playback")))),
    };
    let read_ahead = match (&s.read_ahead, playback) {
        (None, _) => None,
        (Some(_), PlaybackDef::Buffer { .. }) => {
            return Err(ScenarioError(format!("{}: only with playback \"frames\"", p("read_ahead"))));
        }
        (Some(q), PlaybackDef::Frames { startup_threshold }) => {
            let r = q.duration(&p("read_ahead"))?;
            if r < startup_threshold {
                return Err(ScenarioError(format!("{}: must be at least startup_threshold ({:?})", p("read_ahead"), startup_threshold)));
            }
            Some(r)
        }
    };
    Ok(ProgressiveDef { mode_name, mode, rate, media, startup_media, chunk, playback, read_ahead })
}

/// Both ends of one progressive connection (the request is one GET, so the "wire" is its length).
#[derive(Clone, Debug)]
pub struct ProgressiveConn {
    pub client: super::progressive_client::ProgressiveClient,
    pub server: super::progressive_server::ProgressiveServer,
    /// Request bytes the server has read.
    pub request_read: u64,
}

impl ProgressiveConn {
    pub fn new(def: &ProgressiveDef) -> ProgressiveConn {
        let server = super::progressive_server::ProgressiveServer::new(def.clone());
        let head_len = server.response_head().len() as u64;
        let client = super::progressive_client::ProgressiveClient::new(def, &def.content(), head_len);
        ProgressiveConn { client, server, request_read: 0 }
    }

    /// The server read `n` request bytes: true once the whole GET is in (serve from then on).
    pub fn request_complete_after(&mut self, n: u64) -> bool {
        let before = self.request_read;
        self.request_read += n;
        before < self.client.request_len && self.request_read >= self.client.request_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> ProgressiveSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_are_a_two_minute_1_mbps_file_under_baseline_pacing() {
        let d = progressive_of(None, "flow[0].progressive").unwrap();
        assert_eq!(d.mode_name, "baseline");
        assert_eq!(d.file_bytes(), 15_000_000);
        assert_eq!(d.startup_media, Duration::from_secs(30));
    }

    #[test]
    fn a_bad_mode_or_playback_is_one_line_naming_the_key() {
        let e = progressive_of(Some(&spec("mode = \"trikle\"")), "flow[2].progressive").unwrap_err().0;
        assert!(e.starts_with("flow[2].progressive.mode: unknown delivery mode 'trikle'"), "{e}");
        assert!(!e.contains('\n'));
        let e = progressive_of(Some(&spec("playback = \"vlc\"")), "f.progressive").unwrap_err().0;
        assert!(e.starts_with("f.progressive.playback: unknown playback"), "{e}");
        let e = progressive_of(Some(&spec("playback = \"frames\"\nrebuffer_threshold = \"1s\"")), "f.progressive").unwrap_err().0;
        assert!(e.starts_with("f.progressive.rebuffer_threshold: not used"), "{e}");
        let e = progressive_of(Some(&spec("playback = \"frames\"\nstartup_threshold = \"0s\"")), "f.progressive").unwrap_err().0;
        assert!(e.starts_with("f.progressive.startup_threshold: must be above 0"), "{e}");
        let e = progressive_of(Some(&spec("rate = \"1kbps\"")), "f.progressive").unwrap_err().0;
        assert!(e.starts_with("f.progressive.rate:"), "{e}");
    }
}
