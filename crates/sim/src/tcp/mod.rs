//! The simulator's TCP endpoint, modelled on Linux 6.x (see `endpoint.rs` for the control flow and
//! the list of deviations). One concept per file:
//!
//! | file | concept |
//! |---|---|
//! | `config.rs` | [`TcpConfig`] with Linux defaults |
//! | `seq.rs` | 32-bit sequence wraparound, offsets ↔ wire values |
//! | `rtt.rs` | RFC 6298 estimator as Linux computes it, backoff, Karn |
//! | `scoreboard.rs` | retransmission queue, SACK scoreboard, RFC 6675 pipe/IsLost/NextSeg |
//! | `prr.rs` | RFC 6937 proportional rate reduction (Linux `tcp_cwnd_reduction`) |
//! | `rate.rs` | delivery-rate samples for the congestion control (BBR) |
//! | `recv.rs` | receive queue, SACK generation, window advertisement, delayed-ACK state |
//! | `rcvbuf.rs` | receive-buffer autotuning (Linux `tcp_rcv_space_adjust`) |
//! | `endpoint.rs` | connection state, handshake, segment arrival (tcp_input.c's entry points) |
//! | `ack.rs` | one incoming ACK, step by step (Linux `tcp_ack`) |
//! | `recovery.rs` | CA states Open/Disorder/Recovery/Loss, loss marking, undo (`tcp_fastretrans_alert`) |
//! | `output.rs` | sending, retransmission, tail-loss probe, pacing (tcp_output.c) |
//! | `tso.rs` | GSO packets: size (`tcp_tso_autosize`), deferral (`tcp_tso_should_defer`), split |
//! | `timers.rs` | RTO, persist, keep-alive, TIME_WAIT as one `Timers` value (tcp_timer.c) |
//! | `stats.rs`, `log.rs` | per-socket counters and ground-truth events |
//! | `testing.rs` | a two-endpoint wire with a synthetic clock for protocol tests |
//!
//! The engine's contract is /work/notes/tcp_api.md.

mod ack;
pub mod config;
pub mod endpoint;
pub mod log;
mod output;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
mod recovery;
pub mod recv;
pub mod rtt;
pub mod scoreboard;
pub mod seq;
pub mod stats;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;
mod timers;
mod tso;

pub use config::{KeepAliveConfig, TcpConfig};
pub use endpoint::{Addr, SocketEvent, TcpEndpoint, TcpState};
pub use log::{RetransmitCause, TcpLogEvent};
pub use stats::TcpStats;
