//! Applications: what drives the sockets of a flow.
//!
//! - [`bulk`]: a sender that writes N bytes (or without end) as fast as the send buffer takes them
//!   (iperf-like), optionally closing afterwards.
//! - [`reqresp`]: request/response on one persistent connection (HTTP/1.1 keep-alive segment
//!   downloads, seed 004): the client asks for N bytes, the server answers with N bytes; one
//!   outstanding request at a time, each issued at max(its scheduled time, end of the previous
//!   response), which is the download-and-wait cycle of a live client with a one-segment buffer.
//! - [`reader`]: the receiving application's read behaviour — read everything at once, read at a
//!   fixed rate, stop reading during pauses. A slow or paused reader fills the receive buffer and
//!   drives the advertised window to zero (the zero-window case of seed 000).
//!
//! Apps never touch the network: they call `send`/`recv`/`close` on endpoints and the simulation
//! flushes and schedules. Wake-ups they need go through the event queue as `Event::App` with the
//! kinds below.

pub mod bulk;
pub mod reader;
pub mod reqresp;

/// `Event::App` kinds.
pub mod kind {
    /// Open the flow's connection.
    pub const START: u32 = 0;
    /// Issue the next request (reqresp).
    pub const REQUEST: u32 = 1;
    /// The reader may read again (end of a pause, rate tokens available).
    pub const READ: u32 = 2;
    /// Apply the k-th cwnd clamp of the schedule: `CLAMP + k`.
    pub const CLAMP: u32 = 1000;
}
