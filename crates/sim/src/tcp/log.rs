//! Ground-truth events the endpoint reports: why every retransmission happened, every RTO, every
//! recovery episode, zero windows, probes and restarts after idle.
//!
//! The simulator writes these to a table; the capture analyzer (crates/trace) is scored against
//! them (seed 000's timeout/stall taxonomy). Events are plain `Copy` data, pushed onto a `Vec`
//! the engine owns and reuses, so logging does not allocate per packet.

use std::time::Duration;

use tcpvideo_model::Time;

use crate::packet::NodeId;

/// Why a segment was sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetransmitCause {
    /// The retransmission that starts a fast-recovery episode (RACK, or 3 duplicate ACKs / RFC 6675
    /// IsLost of the first hole), and NewReno partial-ACK retransmissions when SACK is off.
    FastRetransmit,
    /// Further holes repaired by SACK-based recovery (RFC 6675 NextSeg rule 1) in the same episode.
    SackRecovery,
    /// Retransmissions of segments marked lost by a retransmission timeout (Linux `tcp_enter_loss`
    /// marks every un-SACKed segment lost; all of them are repaired in the Loss state).
    Timeout,
    /// A zero-window probe that carried data (not used: probes carry no data, as Linux's
    /// `tcp_xmit_probe_skb` with SND.UNA − 1).
    ZeroWindowProbe,
    /// A SYN or SYN/ACK sent again after its timer expired.
    SynTimeout,
    /// A tail-loss probe that re-sent the last segment (RACK-TLP, RFC 8985 §7; Linux
    /// `tcp_send_loss_probe`). A probe that carries new data is not a retransmission.
    TailLossProbe,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TcpLogEvent {
    Retransmit {
        at: Time,
        flow: u32,
        from_node: NodeId,
        seq: u32,
        len: u32,
        cause: RetransmitCause,
    },
    Rto {
        at: Time,
        flow: u32,
        from_node: NodeId,
        backoff: u32,
        rto: Duration,
    },
    EnterRecovery {
        at: Time,
        flow: u32,
        from_node: NodeId,
        cwnd_bytes: u64,
        ssthresh_bytes: u64,
    },
    ExitRecovery {
        at: Time,
        flow: u32,
        from_node: NodeId,
        cwnd_bytes: u64,
    },
    /// This endpoint (the receiver) advertised a zero window.
    ZeroWindow {
        at: Time,
        flow: u32,
        from_node: NodeId,
    },
    ZeroWindowProbe {
        at: Time,
        flow: u32,
        from_node: NodeId,
    },
    KeepAliveProbe {
        at: Time,
        flow: u32,
        from_node: NodeId,
    },
    RestartAfterIdle {
        at: Time,
        flow: u32,
        from_node: NodeId,
        cwnd_bytes: u64,
    },
}

impl TcpLogEvent {
    /// The connection the endpoint logged the event on (its flow number while the connection
    /// is a flow's first; `ConnectionTable::label_with_flow` relabels further connections).
    pub fn flow_mut(&mut self) -> &mut u32 {
        match self {
            TcpLogEvent::Retransmit { flow, .. }
            | TcpLogEvent::Rto { flow, .. }
            | TcpLogEvent::EnterRecovery { flow, .. }
            | TcpLogEvent::ExitRecovery { flow, .. }
            | TcpLogEvent::ZeroWindow { flow, .. }
            | TcpLogEvent::ZeroWindowProbe { flow, .. }
            | TcpLogEvent::KeepAliveProbe { flow, .. }
            | TcpLogEvent::RestartAfterIdle { flow, .. } => flow,
        }
    }

    /// `flow_mut`'s value (events are small `Copy` data: read through a copy, one match).
    pub fn flow(&self) -> u32 {
        let mut copy = *self;
        *copy.flow_mut()
    }

    /// When the event happened.
    pub fn at(&self) -> Time {
        match *self {
            TcpLogEvent::Retransmit { at, .. }
            | TcpLogEvent::Rto { at, .. }
            | TcpLogEvent::EnterRecovery { at, .. }
            | TcpLogEvent::ExitRecovery { at, .. }
            | TcpLogEvent::ZeroWindow { at, .. }
            | TcpLogEvent::ZeroWindowProbe { at, .. }
            | TcpLogEvent::KeepAliveProbe { at, .. }
            | TcpLogEvent::RestartAfterIdle { at, .. } => at,
        }
    }
}
