//! linkem: tcpvideo's user-space link emulator. Real Linux TCP in network namespaces needs links
//! with delay, jitter, random loss and trace-driven rate, and this kernel has no netem
//! (shared/anchors/machine.md), so linkem moves IP packets between two TUN devices and applies
//! a link model in between — the model the simulator uses for the same scenario keys.
//!
//! Where things live:
//! * `bottleneck.rs` — drop-tail FIFO (packets or bytes) served at a rate or by a Mahimahi trace;
//! * `trace.rs` — the Mahimahi trace format (delivery opportunities, looping);
//! * `delay.rs` — propagation delay, jitter without reordering, per-address delays;
//! * `pipe.rs` — one direction: bottleneck → loss (the simulator's loss models) → delay;
//! * `counters.rs` — what a direction did: drops by cause, exact queue statistics, queue samples,
//!   release lateness;
//! * `forwarder.rs` — the running link: a thread between two fds, ppoll on CLOCK_MONOTONIC;
//! * `spec.rs` — `key=value` settings (the binary's flags, the Python binding's dicts);
//! * `tun.rs`, `netns.rs` — opening a TUN device inside a network namespace;
//! * `qdisc_sampler.rs` — a kernel qdisc's backlog over rtnetlink (tbf links of `emulate`);
//! * `bin/linkem.rs` — the small command-line front.
//!
//! The first four are pure state machines over explicit timestamps and tested with synthetic
//! times; only `forwarder.rs`, `tun.rs`, `netns.rs` and `qdisc_sampler.rs` touch the system.

pub mod bottleneck;
pub mod counters;
pub mod delay;
pub mod forwarder;
pub mod netns;
pub mod pipe;
pub mod qdisc_sampler;
pub mod spec;
pub mod trace;
pub mod tun;

pub use bottleneck::Service;
pub use forwarder::{Link, LinkConfig};
pub use pipe::DirectionConfig;
