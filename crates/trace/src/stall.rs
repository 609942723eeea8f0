//! Stall detection and classification (Zhou et al. §2.1–§2.2, Table 2).
//!
//! Seed 000 §2.1: "TCP stall is defined as an event where the duration between two consecutive
//! packets received/sent by the server is larger than min(τ·SRTT, RTO). Parameter τ is set to 2
//! in this work as the TCP endpoint is able to at least receive or send one packet during 2×RTT
//! in the ideal condition. As the front-end server (where we collected the data) is the
//! receiver for upload flows, only the 3-way handshake (3WHS) round trip time (RTT) can be
//! measured [...] Thus, RTT is used in 3WHS as the smooth RTT (SRTT) for this flow."
//! §2.2: "As the front-end server is the TCP sender in the video content distributing phase,
//! RTT is computed dynamically each time it receives acknowledgment of the transmitted data."
//!
//! So a flow has two thresholds: the upload one from the 3WHS RTT (and the RTO RFC 6298 derives
//! from that single sample), and the download one from the emulated SRTT/RTO just before the
//! gap. Whether a flow is upload or download is known only at its end (which side sent more
//! payload), so a gap is kept as a *candidate* if it exceeds either threshold and both
//! classifications are computed when the gap ends; the flow's direction then picks one.
//! Like Linux (`tcp_synack_rtt_meas`), the 3WHS RTT is also the download estimator's first
//! sample. A flow caught without its handshake has no 3WHS RTT: its upload threshold is then the
//! initial RTO (1 s, RFC 6298 §2.1) and its download threshold waits for the first ACK sample.
//!
//! The classification looks at the state when the gap began and at the packet that ended it
//! ("Based on the position where each stall happens", §2.2). Rules, in order:
//!
//! Both directions, first: Handshake — the gap began before the three-way handshake completed
//! (a SYN or SYN+ACK was lost and its timer, 1 s in Linux, resent it). The seed's classes all
//! describe an established connection; without this rule a lost SYN+ACK at the server became a
//! "resource constraint" stall (issue 12). Our own addition, named after what happened.
//!
//! Download (server sends), Table 2:
//! 1. Timeout — "Timeout stalls are those caused by the timeout retransmissions": the gap ends
//!    with a server retransmission that was timer-driven (see `retrans`). A tail-loss probe
//!    (`tlp.rs`) is not an RTO: a gap it ends falls to the rules below, as in the simulator's
//!    truth (issue 16; a definition choice — TAPO, predating TLP, counts it as a timeout).
//! 2. Zero rwnd — "zero receive windows (rwnd) stalls happen when viewers do not have enough
//!    buffer to store the data": the client's last advertised window before the gap was smaller
//!    than one segment (zero, or too small for the sender to send a full segment — TAPO's rule
//!    `rwnd < max_snd_seg_size`, its parser/rules.txt; issue 16 found the simulator's server
//!    holding data behind a 1–2 kB window for 300 ms, which the zero-only rule called a
//!    resource-constraint stall). (Checked before keep-alive because zero-window probes look like
//!    keep-alives on the wire.) A window below one segment but not zero holds data back only if
//!    data waited. Linux sends data that fits the window at once (`tcp_snd_wnd_test`) and sends
//!    data that does not by the persist timer, max(RTO, 200 ms) after the window-shrinking ACK if
//!    data already waited (`tcp_ack_probe`, `tcp_probe0_when`, `tcp_write_wakeup` fills the
//!    window). So when nothing was outstanding and the gap either ends with new server data that
//!    fits the window, or lasts longer than that persist interval (Linux's RTO formula, SRTT +
//!    max(4·RTTVAR, 200 ms), if longer than RFC 6298's; +10 % and 10 ms; + the server-side half
//!    RTT away from the server) whatever ends it, the server had nothing to send at the gap's
//!    start — resource constraint, as the simulator's truth says (issue 16: crowdlive tlp_off
//!    port 32790 at 39.69 s, a 430-byte window and a 430-byte segment 386 ms later, SRTT 105 ms:
//!    persist interval ≈ 305 ms; `--full` seed 3 port 32871 at 55.98 s, a 90-byte window and
//!    4.9 s of silence until the viewer's window update). A gap within the persist time keeps
//!    TAPO's rule: from the wire, data that waited cannot be told from data that came just
//!    after the ACK (`Flow::small_window_may_have_held_data`).
//! 3. Keep-alive — "when there is no data to transmit, the front-end server will send a
//!    keep-alive packet every 5s": the gap ends with a TCP keep-alive (a segment with
//!    SEG.SEQ = SND.NXT − 1 and 0 or 1 byte, RFC 9293 §3.8.4) from either side.
//! 4. Packet delay — "packet delay stalls happen when ACKs are delayed, either by network or
//!    receiver": data was outstanding when the gap began and the gap ended without a timeout
//!    retransmission (typically with the late ACK).
//! 5. Resource constraint — "happens when there is no data in the buffer to transmit": nothing
//!    was outstanding when the gap began, whatever ends the gap (new data, a request, or the
//!    viewer's FIN: the server had nothing to send all along — issue 16's ground truth; before,
//!    a gap ended by FIN or RST was `other`).
//! 6. Other — not produced by these rules today (kept for stalls no rule explains).
//!
//! Upload (server receives), §2.1:
//! 1. Keep-alive — "those caused by keep-alive packets sent by servers every 5s": the gap ends
//!    with a keep-alive (either side).
//! 2. Reordering — "When a stall happens, receivers may have received a series of disordered
//!    packets, or sequential packets. The stalls of the former is further distinguished as
//!    reordering stalls": the server held out-of-order data when the gap began, or the packet
//!    ending the gap is disordered (below the highest sequence received).
//! 3. Normal — "and the latter as normal stalls".

use std::time::Duration;

use serde::Serialize;

/// Class of a stall. Download classes and upload classes share one enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StallKind {
    Timeout,
    ResourceConstraint,
    PacketDelay,
    ZeroRwnd,
    KeepAlive,
    Other,
    Normal,
    Reordering,
    Handshake,
}

impl StallKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StallKind::Timeout => "timeout",
            StallKind::ResourceConstraint => "resource_constraint",
            StallKind::PacketDelay => "packet_delay",
            StallKind::ZeroRwnd => "zero_rwnd",
            StallKind::KeepAlive => "keep_alive",
            StallKind::Other => "other",
            StallKind::Normal => "normal",
            StallKind::Reordering => "reordering",
            StallKind::Handshake => "handshake",
        }
    }
    pub const DOWNLOAD: [StallKind; 7] = [
        StallKind::ResourceConstraint,
        StallKind::PacketDelay,
        StallKind::ZeroRwnd,
        StallKind::KeepAlive,
        StallKind::Timeout,
        StallKind::Handshake,
        StallKind::Other,
    ];
    pub const UPLOAD: [StallKind; 4] = [StallKind::Normal, StallKind::Reordering, StallKind::KeepAlive, StallKind::Handshake];
}

/// What the classifier needs to know about the gap.
#[derive(Clone, Copy, Debug, Default)]
pub struct GapContext {
    /// The gap began before the handshake completed (SYN or SYN+ACK seen, its ACK not yet).
    pub in_handshake: bool,
    /// The packet ending the gap is a timer-driven retransmission (RTO) of server data.
    pub end_is_timeout_retrans: bool,
    /// ... and is a TCP keep-alive probe (from either side).
    pub end_is_keepalive: bool,
    /// ... and has FIN or RST.
    pub end_is_fin_or_rst: bool,
    /// ... and is client data below the highest client sequence already received.
    pub end_is_disordered: bool,
    /// Server data outstanding (sent, not yet cumulatively acknowledged) when the gap began.
    pub server_outstanding: bool,
    /// The client's last advertised receive window (scaled, bytes) when the gap began was zero or
    /// below one segment (the sender could not send a full segment).
    pub client_rwnd_zero: bool,
    /// The server held out-of-order client data (a hole) when the gap began.
    pub server_has_hole: bool,
}

/// Classify a download stall (Table 2 classes), rules in the module comment.
pub fn classify_download(c: &GapContext) -> StallKind {
    if c.in_handshake {
        StallKind::Handshake
    } else if c.end_is_timeout_retrans {
        StallKind::Timeout
    } else if c.client_rwnd_zero {
        StallKind::ZeroRwnd
    } else if c.end_is_keepalive {
        StallKind::KeepAlive
    } else if c.server_outstanding {
        StallKind::PacketDelay
    } else {
        StallKind::ResourceConstraint
    }
}

/// Classify an upload stall (§2.1 classes), rules in the module comment.
pub fn classify_upload(c: &GapContext) -> StallKind {
    if c.in_handshake {
        StallKind::Handshake
    } else if c.end_is_keepalive {
        StallKind::KeepAlive
    } else if c.server_has_hole || c.end_is_disordered {
        StallKind::Reordering
    } else {
        StallKind::Normal
    }
}

/// The stall threshold min(τ·SRTT, RTO); with no SRTT yet, the RTO alone. τ·SRTT is rounded
/// down to whole nanoseconds.
pub fn threshold(tau: f64, srtt: Option<Duration>, rto: Duration) -> Duration {
    match srtt {
        Some(s) => Duration::from_nanos((tau * s.as_nanos() as f64) as u64).min(rto),
        None => rto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_min_of_tau_srtt_and_rto() {
        let ns = Duration::from_nanos;
        assert_eq!(threshold(2.0, Some(ns(50)), ns(300)), ns(100));
        assert_eq!(threshold(2.0, Some(ns(200)), ns(300)), ns(300));
        assert_eq!(threshold(2.0, None, ns(1000)), ns(1000));
        assert_eq!(threshold(1.5, Some(ns(3)), ns(1000)), ns(4), "4.5 ns rounds down");
    }

    #[test]
    fn timeout_wins_over_outstanding_data() {
        let c = GapContext { end_is_timeout_retrans: true, server_outstanding: true, ..Default::default() };
        assert_eq!(classify_download(&c), StallKind::Timeout);
    }

    #[test]
    fn zero_window_probe_is_zero_rwnd_not_keepalive() {
        let c = GapContext { end_is_keepalive: true, client_rwnd_zero: true, server_outstanding: true, ..Default::default() };
        assert_eq!(classify_download(&c), StallKind::ZeroRwnd);
    }

    #[test]
    fn an_idle_sender_gap_is_resource_constraint_even_when_the_viewers_fin_ends_it() {
        assert_eq!(classify_download(&GapContext::default()), StallKind::ResourceConstraint);
        let c = GapContext { end_is_fin_or_rst: true, ..Default::default() };
        assert_eq!(classify_download(&c), StallKind::ResourceConstraint);
    }

    #[test]
    fn upload_hole_makes_reordering_stall() {
        assert_eq!(classify_upload(&GapContext { server_has_hole: true, ..Default::default() }), StallKind::Reordering);
        assert_eq!(classify_upload(&GapContext::default()), StallKind::Normal);
        assert_eq!(classify_upload(&GapContext { end_is_keepalive: true, ..Default::default() }), StallKind::KeepAlive);
    }
}
