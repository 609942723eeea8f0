//! Cumulative per-endpoint counters (what `ss -ti` / `nstat` would show for one socket).
//!
//! The engine reports flow completion time, retransmissions split by cause, RTO count, srtt at the
//! end and the handshake RTT from these. All fields are cumulative and cheap to copy.

use std::time::Duration;

use tcpvideo_model::Time;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpStats {
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
    /// In-order payload bytes delivered to the receive buffer.
    pub bytes_received: u64,
    /// Bytes the application read.
    pub bytes_read: u64,
    /// All segments sent (SYN, pure ACKs, probes and data).
    pub segments_sent: u64,
    /// Segments carrying payload, retransmissions included.
    pub data_segments_sent: u64,
    /// Segments retransmitted by fast retransmit or SACK recovery.
    pub retrans_fast: u64,
    /// Segments retransmitted after an RTO (including SYN/SYN-ACK retransmissions).
    pub retrans_timeout: u64,
    /// Retransmission-timer expirations (SYN timeouts included).
    pub rto_count: u64,
    pub zero_window_probes: u64,
    pub keepalive_probes: u64,
    /// SYN → SYN/ACK (client) or SYN/ACK → ACK (server); `None` if the handshake segment was
    /// retransmitted and timestamps are off (Karn).
    pub handshake_rtt: Option<Duration>,
    pub established_at: Option<Time>,
    pub first_data_sent_at: Option<Time>,
    /// When everything the application had queued so far was acknowledged (for FCT).
    pub last_ack_of_data_at: Option<Time>,
    pub min_rtt: Option<Duration>,
    pub srtt: Option<Duration>,
    pub max_cwnd_bytes: u64,
    /// Tail-loss probes sent (new data or a retransmission of the last segment).
    pub tlp_probes: u64,
    /// Tail-loss probes that were retransmissions (not counted in `retrans_fast`/`retrans_timeout`).
    pub retrans_tlp: u64,
    /// RTOs found spurious afterwards (the window reduction was undone).
    pub spurious_rtos: u64,
    /// Fast recoveries found spurious at their end (D-SACK or timestamps; window restored).
    pub spurious_recoveries: u64,
}
