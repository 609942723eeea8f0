//! Connections apart from flows: which TCP connection belongs to which flow, its ISNs and its
//! client port, and the statistics of the connections a flow has finished with.
//!
//! A flow is what the scenario names (a client, a server, an app). Most apps keep one persistent
//! connection for the flow's life; a video player with `connection = "per_segment"` opens a new
//! connection for every segment (HTTP/1.1 without keep-alive, or a client that closes after each
//! response: each connection with its own handshake, its own ISN, its own ephemeral port, and
//! slow start from the initial window). The simulation indexes endpoints by connection
//! (client 2c, server 2c + 1) and every packet carries its connection (`Packet::flow`).
//!
//! Numbering keeps persistent runs byte-identical to the time before this table existed:
//! connection c < flows is flow c's first connection, with the ISNs drawn for it in flow order
//! from `streams::ISN`; further connections are numbered from `flows` up in creation order and
//! draw their ISNs from their own stream (`streams::CONN_ISN`), so adding one changes nothing
//! that was drawn before.
//!
//! Ports (deviation from Linux): the client port is 32768 + (c mod 28 000), inside Linux's default
//! `ip_local_port_range` 32768–60999, not Linux's hashed search (`__inet_hash_connect`). The
//! client closes first and holds TIME_WAIT (the simulator's `time_wait`, 1 s by default); each
//! client is its own node, so a port repeats on one client only after 28 000 of its connections,
//! far longer than any TIME_WAIT — the 4-tuple-reuse path (`tcp_twsk_unique`) is never needed.
//!
//! A finished connection's endpoints are dropped when both reach CLOSED (their statistics are
//! folded into the flow's [`Retired`] first), so a 20-minute per-segment run holds the live
//! connections only. A packet that arrives for a dropped connection is discarded (Linux would
//! answer it with a RST); the client's TIME_WAIT has answered any retransmitted FIN before that.

use rand::Rng;
use rand_pcg::Pcg64;

use crate::tcp::{TcpLogEvent, TcpStats};

/// The first client port (Linux `ip_local_port_range` low end) and how many are used.
pub const FIRST_EPHEMERAL_PORT: u16 = 32768;
pub const EPHEMERAL_PORTS: u32 = 28000;

/// Client port of connection `conn`.
pub fn client_port(conn: u32) -> u16 {
    FIRST_EPHEMERAL_PORT + (conn % EPHEMERAL_PORTS) as u16
}

/// Connection → flow, and where new connections' numbers and ISNs come from.
pub struct ConnTable {
    /// `flow_of[c]`: the flow connection c belongs to.
    flow_of: Vec<u32>,
    flows: u32,
    /// ISNs (client, server) of connections numbered `flows` and up, drawn in creation order.
    isn_rng: Pcg64,
}

impl ConnTable {
    /// `flows` flows, connection c = flow c for each.
    pub fn new(flows: usize, isn_rng: Pcg64) -> ConnTable {
        ConnTable { flow_of: (0..flows as u32).collect(), flows: flows as u32, isn_rng }
    }

    pub fn flow_of(&self, conn: u32) -> usize {
        self.flow_of[conn as usize] as usize
    }

    /// Number of connections so far (endpoint slots needed: twice that).
    pub fn len(&self) -> usize {
        self.flow_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flow_of.is_empty()
    }

    /// Is `conn` a flow's first connection (numbered like the flow)?
    pub fn is_first(&self, conn: u32) -> bool {
        conn < self.flows
    }

    /// A further connection of `flow`: its number and its (client, server) ISNs.
    pub fn open(&mut self, flow: usize) -> (u32, (u32, u32)) {
        let c = self.flow_of.len() as u32;
        self.flow_of.push(flow as u32);
        let isns = (self.isn_rng.gen::<u32>(), self.isn_rng.gen::<u32>());
        (c, isns)
    }

    /// Ground-truth events carry the endpoint's connection; the tables are per flow.
    pub fn label_with_flow(&self, ev: &mut TcpLogEvent) {
        let f = ev.flow_mut();
        if *f >= self.flows {
            *f = self.flow_of[*f as usize];
        }
    }
}

/// What a flow's finished connections contributed, per side.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retired {
    pub connections: u64,
    pub sender: TcpStats,
    pub receiver: TcpStats,
}

impl Retired {
    /// Fold a finished connection's data sender and receiver statistics in.
    pub fn add(&mut self, sender: &TcpStats, receiver: &TcpStats) {
        self.connections += 1;
        fold(&mut self.sender, sender);
        fold(&mut self.receiver, receiver);
    }

    /// The flow's totals: its retired connections plus the live one.
    pub fn total(&self, live_sender: TcpStats, live_receiver: TcpStats) -> (TcpStats, TcpStats) {
        let (mut s, mut r) = (live_sender, live_receiver);
        if self.connections > 0 {
            fold(&mut s, &self.sender);
            fold(&mut r, &self.receiver);
        }
        (s, r)
    }
}

/// Counters add up, extremes combine; times and the last SRTT stay the live connection's.
fn fold(into: &mut TcpStats, s: &TcpStats) {
    into.bytes_sent += s.bytes_sent;
    into.bytes_acked += s.bytes_acked;
    into.bytes_received += s.bytes_received;
    into.bytes_read += s.bytes_read;
    into.segments_sent += s.segments_sent;
    into.data_segments_sent += s.data_segments_sent;
    into.retrans_fast += s.retrans_fast;
    into.retrans_timeout += s.retrans_timeout;
    into.rto_count += s.rto_count;
    into.zero_window_probes += s.zero_window_probes;
    into.keepalive_probes += s.keepalive_probes;
    into.tlp_probes += s.tlp_probes;
    into.retrans_tlp += s.retrans_tlp;
    into.spurious_rtos += s.spurious_rtos;
    into.spurious_recoveries += s.spurious_recoveries;
    into.max_cwnd_bytes = into.max_cwnd_bytes.max(s.max_cwnd_bytes);
    into.min_rtt = match (into.min_rtt, s.min_rtt) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    into.handshake_rtt = into.handshake_rtt.or(s.handshake_rtt);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{streams, sub_rng};
    use std::time::Duration;
    use tcpvideo_model::Time;

    #[test]
    fn further_connections_are_numbered_after_the_flows_in_creation_order_with_their_own_isns() {
        let mut t = ConnTable::new(3, sub_rng(7, streams::CONN_ISN));
        let (a, ia) = t.open(2);
        let (b, ib) = t.open(0);
        assert_eq!((a, b), (3, 4));
        assert_eq!((t.flow_of(3), t.flow_of(4), t.flow_of(1)), (2, 0, 1));
        assert!(t.is_first(2) && !t.is_first(3));
        // Same seed, same order: same ISNs; and they are not the flows' ISN stream.
        let mut again = ConnTable::new(3, sub_rng(7, streams::CONN_ISN));
        assert_eq!(again.open(2).1, ia);
        assert_eq!(again.open(0).1, ib);
        let mut flow_isns = sub_rng(7, streams::ISN);
        assert_ne!((flow_isns.gen::<u32>(), flow_isns.gen::<u32>()), ia);
    }

    #[test]
    fn client_ports_wrap_inside_linuxs_default_ephemeral_range() {
        assert_eq!(client_port(0), 32768);
        assert_eq!(client_port(27_999), 60_767);
        assert_eq!(client_port(28_000), 32768);
    }

    #[test]
    fn events_of_a_further_connection_are_labelled_with_its_flow() {
        let mut t = ConnTable::new(2, sub_rng(1, streams::CONN_ISN));
        let (c, _) = t.open(1);
        let mut ev = TcpLogEvent::Rto { at: Time::ZERO, flow: c, from_node: 0, backoff: 0, rto: Duration::from_secs(1) };
        t.label_with_flow(&mut ev);
        assert!(matches!(ev, TcpLogEvent::Rto { flow: 1, .. }));
        let mut first = TcpLogEvent::ZeroWindow { at: Time::ZERO, flow: 0, from_node: 0 };
        t.label_with_flow(&mut first);
        assert!(matches!(first, TcpLogEvent::ZeroWindow { flow: 0, .. }));
    }

    #[test]
    fn retired_connections_add_their_counters_and_keep_the_smallest_min_rtt() {
        let mut r = Retired::default();
        let s1 = TcpStats {
            bytes_sent: 100,
            retrans_fast: 2,
            min_rtt: Some(Duration::from_millis(60)),
            max_cwnd_bytes: 10,
            ..Default::default()
        };
        let r1 = TcpStats { bytes_received: 100, ..Default::default() };
        r.add(&s1, &r1);
        let live =
            TcpStats { bytes_sent: 50, retrans_fast: 1, min_rtt: Some(Duration::from_millis(55)), max_cwnd_bytes: 5, ..Default::default() };
        let (s, rcv) = r.total(live, TcpStats { bytes_received: 50, ..Default::default() });
        assert_eq!((s.bytes_sent, s.retrans_fast, s.max_cwnd_bytes), (150, 3, 10));
        assert_eq!(s.min_rtt, Some(Duration::from_millis(55)));
        assert_eq!(rcv.bytes_received, 150);
    }
}
