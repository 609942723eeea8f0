//! tcpvideo-model: the algorithms of tcpvideo as pure state machines.
//!
//! Everything in this crate takes events with explicit timestamps and returns decisions. It never
//! reads a clock, does I/O, or draws randomness it was not handed. The same code is driven by the
//! packet-level simulator (`tcpvideo-sim`), by the real servers, and by unit tests with a synthetic
//! ACK clock — which is what makes "simulated vs real" comparisons honest.
//!
//! Layout:
//! - [`units`]: typed time, duration and rate used at every module boundary.
//! - [`cc`]: the [`cc::CongestionControl`] trait and one file per algorithm.
//! - [`delivery`]: ustreamer's startup and token-bucket pacing, Trickle, pacing cap (seed 003).
//! - [`ethle`]: the ETHLE edge's hold policy and its BBR STARTUP backhaul model (seed 002).
//! - [`splitmix`]: the seedable SplitMix64 generator and seed hash.
//! - [`video`]: content, live source, HLS/DASH playlists, players and ABR rules.

pub mod cc;
pub mod delivery;
pub mod ethle;
pub mod splitmix;
pub mod units;
pub mod video;

pub use units::{Bandwidth, Time};
