//! tcpvideo-sim: a deterministic packet-level discrete-event simulator whose TCP behaves like Linux.
//!
//! Integer-nanosecond clock, one event queue, one seeded RNG: the same scenario and seed give
//! byte-identical outputs.

pub mod packet;
