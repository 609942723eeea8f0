//! How a video server delivers a progressive-download response: YouTube's ustreamer (startup
//! burst, token-bucket application pacing) and Trickle's cwnd clamp, plus the modern alternatives
//! (a socket pacing cap, BBR). Source: Ghobadi, Cheng, Jain, Mathis, "Trickle: Rate Limiting
//! YouTube Video Streaming", USENIX ATC 2012.
//!
//! Where to look:
//! - [`token_bucket`]: ustreamer's pacer (tokens at 1.25·R, 64 kB / 16 kB blocks, no timer
//!   shorter than 100 ms, unbounded catch-up).
//! - [`trickle`]: Algorithm 1 (clamp = 1.2·rtt·R/MSS, lifted while goodput < R, floor 10 with
//!   write throttling at R).
//! - [`mode`]: the named delivery modes (the paper's A/B groups, `pacing-cap`, `bbr`).
//! - [`ustreamer`]: one connection's server side: startup phase, then the mode; the state machine
//!   the simulator's progressive server app and the real origin both drive.
//!
//! Pure: no clock reads, no I/O; times come in with each call.

pub mod mode;
pub mod token_bucket;
pub mod trickle;
pub mod ustreamer;

pub use mode::{DeliveryMode, UnknownMode, MODES};
pub use token_bucket::{PacerDecision, TokenBucketPacer};
pub use trickle::{trickle_step, TrickleDecision, TrickleInputs, TrickleParams};
pub use ustreamer::{ConnectionState, ServerStep, Ustreamer};
