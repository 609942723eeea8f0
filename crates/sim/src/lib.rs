//! tcpvideo-sim: a deterministic packet-level discrete-event simulator whose TCP behaves like Linux.
//!
//! Integer-nanosecond clock, one event queue, one seeded RNG: the same scenario and seed give
//! byte-identical outputs.
//!
//! Layout: [`engine`] (clock, event queue, packet pool, RNG streams), [`network`] (nodes, links,
//! drop-tail queues, routing, taps), [`loss`] (Bernoulli, Gilbert–Elliott), [`pcap`] (capture
//! writer), [`scenario`] (TOML/JSON scenario files and their validation), [`population`] (users with drawn last miles, seed 003 presets), [`tcp`] (the Linux-like
//! endpoint), [`payload`] (real bytes for captured packets), [`app`] (bulk, request/response, readers), [`sim`] (a run: wiring, metrics, outputs).

pub mod app;
pub mod connection;
pub mod delay_jitter;
pub mod delay_spikes;
pub mod engine;
pub mod ethle_testbed;
pub mod event_queue;
pub mod keyed_loss;
pub mod loss;
pub mod network;
pub mod packet;
pub mod payload;
pub mod pcap;
pub mod population;
pub mod ran_latency;
pub mod reorder;
pub mod scenario;
pub mod sim;
pub mod tcp;
