//! tcpvideo's video origin server (seed 003: Ghobadi, Cheng, Jain, Mathis, "Trickle: Rate
//! Limiting YouTube Video Streaming", USENIX ATC 2012), as a library; `src/main.rs` is the thin
//! `tcpvideo-origin` binary. It serves a directory of media (progressive files, HLS and DASH
//! playlists and segments) over HTTP/1.1, and delivers each response in a mode — bulk,
//! ustreamer's token-bucket application pacing, Trickle with a real cwnd clamp, a pacing cap,
//! BBR, a fixed cwnd limit. The decisions are `tcpvideo_model::delivery`'s (`Ustreamer::poll`),
//! the same code the simulator runs.
//!
//! Where to look:
//! - [`server`]: accept loop, connection cap, routing, response heads, shutdown; [`metrics`].
//! - [`request_head`]: reading one HTTP/1.1 request head (keep-alive, pipelining, bounds).
//! - [`served_path`]: the root and what is refused (traversal, encoded slashes, symlinks out).
//! - [`byte_range`]: single-range requests (206/416); [`content_type`]: media types.
//! - [`delivery_choice`]: which mode a request gets (query, path rules, default).
//! - [`delivery_body`]: the body that drives `Ustreamer` against the real socket.
//! - [`socket_control`]: TCP_INFO, SO_MAX_PACING_RATE, SO_COOKIE, TCP_CONGESTION.
//! - [`cwnd_clamp`]: the sock_ops BPF clamp (`bpf/trickle_clamp/`) and its fallback.

pub mod byte_range;
pub mod content_type;
pub mod cwnd_clamp;
pub mod delivery_body;
pub mod delivery_choice;
pub mod metrics;
pub mod request_head;
pub mod served_path;
pub mod server;
pub mod socket_control;

pub use cwnd_clamp::{ClampControl, ClampProgram};
pub use delivery_choice::{DeliveryRules, OriginMode};
pub use served_path::ServedRoot;
pub use server::{serve, Origin};
