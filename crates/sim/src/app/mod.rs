//! Applications: what drives the sockets of a flow.
//!
//! - [`bulk`]: a sender that writes N bytes (or without end) as fast as the send buffer takes them
//!   (iperf-like), optionally closing afterwards.
//! - [`reqresp`]: request/response on one persistent connection (HTTP/1.1 keep-alive segment
//!   downloads, seed 004): the client asks for N bytes, the server answers with N bytes; one
//!   outstanding request at a time, each issued at max(its scheduled time, end of the previous
//!   response), which is the download-and-wait cycle of a live client with a one-segment buffer.
//! - video (`app = "live"` / `"vod"`): [`player`] (the client: the model's player driving HTTP
//!   GET/HEAD requests) and [`origin`] (the server: playlists and segments from the model) on one
//!   persistent connection, speaking real HTTP/1.1 ([`http`]) whose bytes reach the pcap through
//!   [`crate::payload`]; [`video_outputs`] makes the QoE, segment, stall and buffer tables and
//!   [`stall_cause`] joins each stall to its TCP cause.
//! - progressive download (`app = "progressive"`): [`progressive`] (keys, the file),
//!   [`progressive_server`] (ustreamer / Trickle via the model's `Ustreamer::poll`),
//!   [`progressive_client`] (browser-like buffer player or frame-deadline player),
//!   [`progressive_outputs`] (the `progressive` table).
//! - [`crowd`] (`app = "publish"` / `"subscribe"`): seed 000's crowdsourced live streaming —
//!   publishers pushing FLV to a front-end that relays channels to subscribers.
//! - [`reader`]: the receiving application's read behaviour — read everything at once, read at a
//!   fixed rate, stop reading during pauses. A slow or paused reader fills the receive buffer and
//!   drives the advertised window to zero (the zero-window case of seed 000).
//!
//! Apps never touch the network: they call `send`/`recv`/`close` on endpoints and the simulation
//! flushes and schedules. Wake-ups they need go through the event queue as `Event::App` with the
//! kinds below.

pub mod bulk;
pub mod crowd;
pub mod http;
pub mod origin;
pub mod player;
pub mod progressive;
pub mod progressive_client;
pub mod progressive_outputs;
pub mod progressive_server;
pub mod reader;
pub mod reqresp;
pub mod stall_cause;
pub mod video_outputs;

/// `Event::App` kinds.
pub mod kind {
    /// Open the flow's connection.
    pub const START: u32 = 0;
    /// Issue the next request (reqresp).
    pub const REQUEST: u32 = 1;
    /// The reader may read again (end of a pause, rate tokens available).
    pub const READ: u32 = 2;
    /// The progressive server's pacing timer (ustreamer asked to be called again).
    pub const SERVE: u32 = 3;
    /// A crowdlive publisher's next frame slot, a subscriber leaving, the front-end's idle check.
    pub const CROWD_SLOT: u32 = 4;
    pub const CROWD_LEAVE: u32 = 5;
    pub const CROWD_IDLE: u32 = 6;
    /// Apply the k-th cwnd clamp of the schedule: `CLAMP + k`.
    pub const CLAMP: u32 = 1000;
}
