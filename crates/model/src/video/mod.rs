//! The video layer's pure model: content, live source, playlists, players and ABR.
//!
//! Like the rest of this crate it reads no clock, does no I/O and draws randomness only from a
//! generator it is handed; a simulator app and a real player drive it with timestamped calls.
//!
//! Where to look:
//! - [`content`]: the representation ladder (seed 004 Table I by default), segment duration and
//!   per-segment sizes (CBR, the seeded VBR model in [`vbr`], or a user CSV in [`size_table`]).
//! - [`live`]: segment k available at t0 + (k+1)·d; the sliding playlist window.
//! - [`playlist`]: HLS media and master playlists (RFC 8216) and DASH MPDs (ISO/IEC 23009-1) as
//!   text, and the URL scheme an origin serves ([`playlist::paths`]).
//! - [`player`]: the segmented player (what to request and when, startup, stalls, liveness, QoE);
//!   [`playout`] is its buffer and playback clock; [`request_timing`] is seed 004's synchronised
//!   vs distributed requests.
//! - [`frame_player`]: the frame-level player for progressive download (seed 001's picture
//!   discards and buffer underflows).
//! - [`abr`]: the [`abr::AbrRule`] trait, one file per rule, the registry [`abr::ABR_RULES`].
//! - [`error`]: [`VideoError`], one line naming the key for every bad input.
//!
//! Calling sequence of an app (details in [`player`]):
//!
//! ```text
//! let content = Content::cbr(Ladder::seed004(), 2 s, 600)?;            // or ::vbr(.., &mut rng)
//! let live = LiveSource::new(t0, 2 s, 600, 5)?;
//! let abr = abr::build("client.abr", "throughput", &setup, &params)?;
//! let mut p = Player::new(content, Availability::Live(live), abr, PlayerConfig::seed004(2 s))?;
//! p.join(now);
//! loop { match p.next_action(now) {
//!     WaitUntil(t) => schedule a wake-up at t,
//!     ProbeSizes { segment } => HEAD ..., then p.on_segment_sizes(now, segment, &sizes),
//!     Fetch(req) => GET req.segment in req.quality (req.bytes long),
//!     Downloading => wait for bytes: p.on_first_byte(now), p.on_bytes(now, n), p.on_segment_done(now),
//!     Finished => stop,
//! } }
//! p.qoe(end); p.segments(); p.stalls();
//! ```
//!
//! An origin uses [`content::Content`] for body sizes, [`live::LiveSource`] for availability and
//! [`playlist`] for the playlist bodies and to parse request paths. A progressive client feeds
//! [`frame_player::FramePlayer::on_bytes`] with the body of `Content::progressive_frames`.
//!
//! Checked against other people's code: BOLA decision by decision against dash.js's own
//! `BolaRule.js` (`abr/testdata/bola_dashjs_trace.txt`, `bench/bola_vs_dashjs.mjs`); the playlists
//! by m3u8-rs and quick-xml in the tests, and by hls.js's `M3U8Parser` and dash.js's `DashParser`
//! in `bench/hls_vs_hlsjs.mjs`, `bench/mpd_vs_dashjs.mjs`.

pub mod abr;
pub mod content;
pub mod error;
pub mod frame_player;
pub mod live;
pub mod player;
pub mod playlist;
pub mod playout;
pub mod request_timing;
pub mod size_table;
pub mod vbr;

pub use content::{Content, Ladder, SizeSource};
pub use error::VideoError;
pub use live::LiveSource;
pub use player::{
    Availability, CatchUp, FetchRequest, Player, PlayerAction, PlayerConfig, Qoe, SegmentRecord,
};
pub use playout::{PlayState, Stall};
pub use request_timing::RequestTiming;
