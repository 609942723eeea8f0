//! tcpvideo's ETHLE edge proxy (seed 002: Ge, Wang, Chai, Hellwagner, IEEE JSAC 2018), as a
//! library; `src/main.rs` is the thin `tcpvideo-edge` binary. The decisions (hold-0 / hold-x /
//! 301, x, th_bh) are `tcpvideo_model::ethle`'s, the same code the simulator runs.
//!
//! Where to look:
//! - [`edge`]: the request logic — playlist requests, the stream's policy, prefetch triggers.
//! - [`playlist_rewrite`]: holding back the newest x segments of an HLS media playlist;
//!   [`mpd_rewrite`] and [`dash_stream`]: the same for MPEG-DASH MPDs.
//! - [`coalescing_lock`]: the pure lock state machine (one upstream fetch per segment).
//! - [`in_flight`]: a fetch in progress, read by every waiter as bytes arrive;
//!   [`conn_socket`]: a receiver's socket the fetch task writes chunks to itself.
//! - [`segment_fetcher`]: cache → lock → upstream fetch with retries; [`segment_cache`]: bounded
//!   cache evicting segments that left the live window.
//! - [`prefetch`]: which held segments to fetch ahead.
//! - [`upstream`]: the backhaul HTTP client and its TCP_INFO RTT sample.
//! - [`stream_info`]: l_seg and b_seg from playlists; [`receiver_context`]: th_ran per receiver.
//! - [`request_path`]: the upstream namespace (what is refused); [`server`]: HTTP plumbing,
//!   `/metrics` ([`metrics`]), shutdown; [`config`]: the options.

pub mod coalescing_lock;
pub mod config;
pub mod conn_socket;
pub mod dash_never_back;
pub mod dash_segment_map;
pub mod dash_stream;
pub mod edge;
pub mod in_flight;
pub mod metrics;
pub mod mpd_rewrite;
pub mod playlist_rewrite;
pub mod prefetch;
pub mod receiver_context;
pub mod request_path;
pub mod segment_cache;
pub mod segment_fetcher;
pub mod server;
pub mod stream_info;
pub mod upstream;

pub use config::EdgeConfig;
pub use edge::Edge;
pub use server::serve;
