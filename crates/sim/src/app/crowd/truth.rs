//! Ground truth at the front-end for scoring the capture analyzer (issue 16): every stall and
//! every timeout retransmission of every crowdlive connection, classified from the simulator's
//! own state — what the server socket held, what the network dropped, why a segment was resent —
//! never inferred from packets.
//!
//! What is recorded (hooks in `sim.rs`): each packet the front-end's socket sends or receives,
//! with the socket state right after it ([`Snapshot`]); the endpoint's log events (why each
//! retransmission happened, RTO firings, keep-alive and window probes); and every packet of these
//! connections the network dropped (random loss or a full queue).
//!
//! Stalls (seed 000 §2.1–2.2): a gap between consecutive packets sent or received by the server
//! longer than min(2·SRTT, RTO), SRTT and RTO being the server socket's own at the gap's start
//! (for an upload the server never sends data, so its SRTT is the handshake's — the seed's
//! "RTT in 3WHS"). Classes, from the state at the gap's start and the packet that ends it:
//! - download: `timeout` (the gap ends with the retransmission an RTO firing sent), `zero_rwnd`
//!   (the peer's advertised window was 0, or below one segment while data waited to be sent: the
//!   viewer's buffer held the server back), `keep_alive` (ended by a keep-alive probe of either
//!   side), `packet_delay` (data was outstanding), `resource_constraint` (nothing outstanding and
//!   nothing queued: neither the socket nor the front-end had unsent bytes), `other`;
//! - upload: `keep_alive`, `reordering` (the server socket held out-of-order data), `normal`;
//! - both: `handshake` (the gap began before the connection was established).
//!
//! Timeout retransmissions (seed §3.2, Table 5): the segment an RTO firing retransmits. Types, in
//! the analyzer's rule order (`tcpvideo_trace::retrans`: the seed's order, nothing-lost first)
//! but from the truth: `double` (the segment had been retransmitted before), `ack_delay_loss` (no
//! copy of the segment sent before the RTO was dropped: the data arrived, its ACK did not come
//! back in time), `tail` (the segment is among the last three of the flow: fewer than 3 new data
//! segments follow it in the whole flow — "the lost packet is in the last three packets of the
//! flow"), `less_packet` (fewer than 4 segments out at the RTO, counted as the seed's Eq. 1 /
//! Linux's `packets_out`: every segment from SND.UNA to SND.NXT, the lost one and SACKed ones
//! included, whatever their size — "the server sends less than 4 packets out"),
//! `continuous_loss` (every segment outstanding at the RTO had a dropped copy), `other`. Issue 16
//! session 11: the seed's reading became the only one; before, `less_packet` was "at most 3
//! segments out at any time between the segment's first send and the RTO" and a `tail` also
//! "fewer than 3 segments sent after it before the RTO".
//!
//! Tail-loss probes (RACK-TLP) that re-send a segment are listed among the timeouts with type
//! `tlp_probe`: they are timer-driven but no RTO, and the seed's taxonomy predates them.
//!
//! Frames: every data segment the data sender emits (the persist timer's window-filling segments
//! of one byte and their re-sends included: issue 16 session 11), with the frame kind of its first payload
//! byte (from the tag spans the application wrote: a byte belongs to the last FLV tag whose
//! HTTP chunk — its chunk-size line, RFC 9112 §7.1 — begins at or before it; the HTTP head is
//! `meta`. Until issue 16 session 10 a span began at the FLV tag header, so a segment starting
//! with a chunk-size line was typed as the frame before it).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use tcpvideo_model::Time;

use super::front_end::WireSpan;
use crate::network::DropCause;
use crate::packet::{flags, Packet};
use crate::tcp::{RetransmitCause, TcpEndpoint, TcpLogEvent};

/// The front-end socket's state right after a packet event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    pub established: bool,
    pub unacked_bytes: u64,
    pub peer_window_zero: bool,
    /// The peer's window is below one segment (zero included).
    pub peer_window_small: bool,
    /// Neither the socket nor the application had bytes waiting to be sent.
    pub nothing_queued: bool,
    pub holds_out_of_order: bool,
    pub srtt: Option<Duration>,
    pub rto: Duration,
    pub mss: u64,
    /// Segments in the network, Linux `tcp_packets_in_flight` (the seed's Eq. 1 in segments):
    /// diagnostic context of each timeout (issue 16 session 14), no rule reads it.
    pub in_flight_pkts: u64,
    /// SACKed segments (`sacked_out`).
    pub sacked_pkts: u64,
    /// Congestion window in full segments (effective: PRR during recovery, clamp applied).
    pub cwnd_pkts: u64,
}

impl Snapshot {
    pub fn of(ep: &TcpEndpoint, app_unsent: u64) -> Snapshot {
        use crate::tcp::TcpState;
        Snapshot {
            established: !matches!(ep.state(), TcpState::Listen | TcpState::SynSent | TcpState::SynReceived),
            unacked_bytes: ep.unacked_bytes(),
            peer_window_zero: ep.peer_window_bytes() == 0,
            peer_window_small: ep.peer_window_bytes() < ep.mss_bytes(),
            nothing_queued: app_unsent == 0 && ep.unsent_bytes() == 0,
            holds_out_of_order: ep.holds_out_of_order(),
            srtt: ep.srtt(),
            rto: ep.rto(),
            mss: ep.mss_bytes().max(1),
            in_flight_pkts: ep.in_flight_pkts(),
            sacked_pkts: ep.sacked_pkts(),
            cwnd_pkts: ep.cwnd_bytes() / ep.mss_bytes().max(1),
        }
    }
}

/// What a packet at the front-end was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktKind {
    Data,
    /// Data retransmitted, with the sender's reason; `rto_fired`: sent by an RTO firing.
    Retrans {
        cause: RetransmitCause,
        rto_fired: bool,
    },
    KeepAlive,
    WindowProbe,
    Control,
}

impl PktKind {
    /// A short name for the tables (`out`: sent by the front-end).
    fn label(self, out: bool) -> String {
        let what = match self {
            PktKind::Data => "data".to_string(),
            PktKind::Retrans { cause, rto_fired } => format!("retrans_{cause:?}{}", if rto_fired { "_rto" } else { "" }),
            PktKind::KeepAlive => "keepalive".into(),
            PktKind::WindowProbe => "window_probe".into(),
            PktKind::Control => "control".into(),
        };
        format!("{}_{what}", if out { "server" } else { "client" })
    }
}

#[derive(Clone, Copy, Debug)]
struct PktEvent {
    t: Time,
    /// true = sent by the front-end.
    out: bool,
    /// Stream offset of the first payload byte (sequence minus ISN minus 1).
    off: u64,
    len: u32,
    kind: PktKind,
    state: Snapshot,
}

#[derive(Clone, Debug, Default)]
struct FlowTruth {
    publisher: bool,
    channel: u32,
    /// ISN of the client→server and server→client directions.
    isn: (u32, u32),
    client_port: u16,
    events: Vec<PktEvent>,
    /// (time, first offset, end offset, cause) of dropped data copies of the data direction.
    drops: Vec<(Time, u64, u64, DropCause)>,
}

/// Collects the truth of a run's crowdlive connections.
#[derive(Debug, Default)]
pub struct Truth {
    flows: Vec<Option<FlowTruth>>,
}

fn offset(seq: u32, isn: u32) -> u64 {
    seq.wrapping_sub(isn).wrapping_sub(1) as u64
}

impl Truth {
    pub fn track(&mut self, f: usize, publisher: bool, channel: u32) {
        if self.flows.len() <= f {
            self.flows.resize(f + 1, None);
        }
        self.flows[f] = Some(FlowTruth { publisher, channel, ..Default::default() });
    }

    pub fn tracks(&self, f: usize) -> bool {
        matches!(self.flows.get(f), Some(Some(_)))
    }

    pub fn opened(&mut self, f: usize, client_isn: u32, server_isn: u32, client_port: u16) {
        if let Some(Some(t)) = self.flows.get_mut(f) {
            t.isn = (client_isn, server_isn);
            t.client_port = client_port;
        }
    }

    /// A packet of flow `f` reached the front-end.
    pub fn received(&mut self, now: Time, p: &Packet, state: Snapshot) {
        let Some(Some(t)) = self.flows.get_mut(p.flow as usize) else { return };
        let kind = if p.flags & (flags::SYN | flags::FIN | flags::RST) != 0 {
            PktKind::Control
        } else if p.payload_len <= 1 && p.seq.wrapping_add(p.payload_len) != 0 && is_keepalive_seq(t, p) {
            PktKind::KeepAlive
        } else if p.payload_len > 0 {
            PktKind::Data
        } else {
            PktKind::Control
        };
        t.events.push(PktEvent { t: now, out: false, off: offset(p.seq, t.isn.0), len: p.payload_len, kind, state });
    }

    /// The front-end's socket of flow `f` sent `pkts` and logged `log` in one step.
    pub fn sent(&mut self, now: Time, f: usize, pkts: &[Packet], log: &[TcpLogEvent], state: Snapshot) {
        let Some(Some(t)) = self.flows.get_mut(f) else { return };
        let rto_fired = log.iter().any(|e| matches!(e, TcpLogEvent::Rto { .. }));
        let ka = log.iter().any(|e| matches!(e, TcpLogEvent::KeepAliveProbe { .. }));
        let zwp = log.iter().any(|e| matches!(e, TcpLogEvent::ZeroWindowProbe { .. }));
        let mut first_timeout = true;
        for p in pkts {
            let off = offset(p.seq, t.isn.1);
            let cause = log.iter().find_map(|e| match e {
                TcpLogEvent::Retransmit { seq, cause, .. } if *seq == p.seq => Some(*cause),
                _ => None,
            });
            let kind = if p.flags & (flags::SYN | flags::RST) != 0 {
                PktKind::Control
            } else if let Some(cause) = cause.filter(|_| p.payload_len > 0) {
                let fired = rto_fired && cause == RetransmitCause::Timeout && first_timeout;
                if fired {
                    first_timeout = false;
                }
                PktKind::Retrans { cause, rto_fired: fired }
            } else if ka && p.payload_len <= 1 {
                PktKind::KeepAlive
            } else if zwp && p.payload_len == 0 {
                // Linux's zero-window probe carries no data (SND.UNA − 1); the persist timer's
                // window-filling segment (tcp_write_wakeup, 1 byte into a 1-byte window) is data
                // (issue 16 session 11: it and its re-sends were missing from the truth).
                PktKind::WindowProbe
            } else if p.payload_len > 0 {
                PktKind::Data
            } else {
                PktKind::Control
            };
            t.events.push(PktEvent { t: now, out: true, off, len: p.payload_len, kind, state });
        }
    }

    /// The network dropped `p` (random loss or a full queue).
    pub fn dropped(&mut self, now: Time, p: &Packet, from_client: bool, cause: DropCause) {
        let Some(Some(t)) = self.flows.get_mut(p.flow as usize) else { return };
        if p.payload_len == 0 || from_client != t.publisher {
            return; // only data copies of the data direction matter
        }
        let isn = if from_client { t.isn.0 } else { t.isn.1 };
        let off = offset(p.seq, isn);
        t.drops.push((now, off, off + p.payload_len as u64, cause));
    }

    /// Write `truth_flows.csv`, `truth_stalls.csv`, `truth_timeouts.csv`, `truth_packets.csv` and
    /// `truth_drops.csv` (every dropped data copy of a flow's data direction, with its cause:
    /// `queue` full or `random` loss) into `dir`. `spans(f)` gives flow f's tag spans of its data
    /// direction.
    pub fn write<'a>(&self, dir: &Path, spans: impl Fn(usize) -> Option<&'a [WireSpan]>) -> std::io::Result<()> {
        let open = |name: &str| -> std::io::Result<std::io::BufWriter<std::fs::File>> {
            Ok(std::io::BufWriter::new(std::fs::File::create(dir.join(name))?))
        };
        let mut fl = open("truth_flows.csv")?;
        let mut st = open("truth_stalls.csv")?;
        let mut to = open("truth_timeouts.csv")?;
        let mut pk = open("truth_packets.csv")?;
        let mut dr = open("truth_drops.csv")?;
        writeln!(fl, "flow,role,channel,client_port,data_packets")?;
        writeln!(st, "flow,direction,start_ns,end_ns,duration_ns,threshold_ns,kind,unacked_bytes,peer_window_zero,nothing_queued,holds_out_of_order,end_packet")?;
        writeln!(to, "flow,ts_ns,offset,len,timeout_type,frame,{}", TimeoutContext::HEADER)?;
        writeln!(pk, "flow,ts_ns,offset,len,retransmission,frame")?;
        writeln!(dr, "flow,ts_ns,offset,len,cause,frame")?;
        for (f, t) in self.flows.iter().enumerate() {
            let Some(t) = t else { continue };
            let spans = spans(f).unwrap_or(&[]);
            // The last tag that started at or before the byte; the HTTP head before the first
            // tag is "meta" (stream control, as the analyzer labels message heads).
            let frame = |off: u64| -> &'static str {
                let i = spans.partition_point(|s| s.start <= off);
                if i == 0 {
                    "meta"
                } else {
                    spans[i - 1].kind.label()
                }
            };
            let data_dir_out = !t.publisher;
            let mut n_data = 0u64;
            for e in &t.events {
                if e.out == data_dir_out && e.len > 0 && matches!(e.kind, PktKind::Data | PktKind::Retrans { .. }) {
                    n_data += 1;
                    let re = matches!(e.kind, PktKind::Retrans { .. });
                    writeln!(pk, "{f},{},{},{},{},{}", e.t.as_nanos(), e.off, e.len, re, frame(e.off))?;
                }
            }
            writeln!(fl, "{f},{},{},{},{n_data}", if t.publisher { "publish" } else { "subscribe" }, t.channel, t.client_port)?;
            for &(at, lo, hi, cause) in &t.drops {
                writeln!(dr, "{f},{},{lo},{},{},{}", at.as_nanos(), hi - lo, cause.label(), frame(lo))?;
            }
            for s in stalls(t) {
                let (a, b) = (&t.events[s.4], &t.events[s.4 + 1]);
                writeln!(
                    st,
                    "{f},{},{},{},{},{},{},{},{},{},{},{}",
                    if t.publisher { "upload" } else { "download" },
                    s.0.as_nanos(),
                    s.1.as_nanos(),
                    s.1.as_nanos() - s.0.as_nanos(),
                    s.2.as_nanos(),
                    s.3,
                    a.state.unacked_bytes,
                    a.state.peer_window_zero,
                    a.state.nothing_queued,
                    a.state.holds_out_of_order,
                    b.kind.label(b.out),
                )?;
            }
            if !t.publisher {
                for (i, e) in t.events.iter().enumerate() {
                    match e.kind {
                        PktKind::Retrans { rto_fired: true, .. } => {
                            let (ty, ctx) = (timeout_type(t, i), TimeoutContext::of(t, i));
                            writeln!(to, "{f},{},{},{},{ty},{},{ctx}", e.t.as_nanos(), e.off, e.len, frame(e.off))?;
                        }
                        // A tail-loss probe is timer-driven too but is no RTO: listed so that an
                        // analyzer calling it a timeout shows up as its own category.
                        PktKind::Retrans { cause: RetransmitCause::TailLossProbe, .. } => {
                            let ctx = TimeoutContext::of(t, i);
                            writeln!(to, "{f},{},{},{},tlp_probe,{},{ctx}", e.t.as_nanos(), e.off, e.len, frame(e.off))?;
                        }
                        _ => {}
                    }
                }
            }
        }
        for w in [&mut fl, &mut st, &mut to, &mut pk] {
            w.flush()?;
        }
        Ok(())
    }
}

/// A received segment of 0–1 bytes at SND.NXT − 1 of the client (RFC 9293 §3.8.4): known from
/// the highest offset the front-end has seen from the client.
fn is_keepalive_seq(t: &FlowTruth, p: &Packet) -> bool {
    let off = offset(p.seq, t.isn.0);
    let high = t.events.iter().rev().filter(|e| !e.out && e.len > 0).map(|e| e.off + e.len as u64).max();
    match high {
        Some(h) => off + 1 == h,
        None => off == u64::MAX || off + 1 == 0,
    }
}

/// The stalls of one connection: (start, end, threshold, class, index of the gap's first event).
fn stalls(t: &FlowTruth) -> Vec<(Time, Time, Duration, &'static str, usize)> {
    let mut out = Vec::new();
    for (i, w) in t.events.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        let s = a.state;
        let Some(srtt) = s.srtt else {
            // No RTT yet: the handshake itself is the gap (its timer is 1 s in Linux).
            if b.t.saturating_since(a.t) > Duration::from_secs(1) {
                out.push((a.t, b.t, Duration::from_secs(1), "handshake", i));
            }
            continue;
        };
        let threshold = (srtt * 2).min(s.rto);
        if b.t.saturating_since(a.t) <= threshold {
            continue;
        }
        let class = if !s.established {
            "handshake"
        } else if t.publisher {
            if b.kind == PktKind::KeepAlive {
                "keep_alive"
            } else if s.holds_out_of_order {
                "reordering"
            } else {
                "normal"
            }
        } else if matches!(b.kind, PktKind::Retrans { rto_fired: true, .. }) {
            "timeout"
        } else if s.peer_window_zero || (s.peer_window_small && !s.nothing_queued) {
            "zero_rwnd"
        } else if b.kind == PktKind::KeepAlive {
            "keep_alive"
        } else if s.unacked_bytes > 0 {
            "packet_delay"
        } else if s.nothing_queued {
            "resource_constraint"
        } else {
            "other"
        };
        out.push((a.t, b.t, threshold, class, i));
    }
    out
}

/// What the sender had in the network when a timed-out segment was first sent and when its timer
/// fired, and what it sent in between — columns of `truth_timeouts.csv` after the type, read by
/// no rule (issue 16 session 14: why voice RTOs are rarely "less packet"). Segments counted as
/// Linux does, one per segment whatever its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TimeoutContext {
    /// `packets_out` (SND.UNA..SND.NXT) right after the first copy was sent, itself included.
    out_at_send: u64,
    /// Eq. 1 `in_flight` (SACKed and marked-lost segments left out) right after the first copy.
    in_flight_at_send: u64,
    /// Congestion window, full segments, right after the first copy was sent.
    cwnd_at_send: u64,
    /// New-data segments sent after the first copy and before the timer fired.
    sent_after: u64,
    /// Of those, how many had their copy dropped before the timer fired.
    lost_after: u64,
    /// Milliseconds from the first copy to the next new-data segment (or to the RTO if none).
    next_send_ms: u64,
    /// `packets_out`, Eq. 1 `in_flight`, SACKed segments and cwnd just before the timer fired.
    out_at_rto: u64,
    in_flight_at_rto: u64,
    sacked_at_rto: u64,
    cwnd_at_rto: u64,
}

impl TimeoutContext {
    const HEADER: &'static str = "out_at_send,in_flight_at_send,cwnd_at_send,sent_after,lost_after,next_send_ms,out_at_rto,in_flight_at_rto,sacked_at_rto,cwnd_at_rto";

    /// The context of the timer-driven re-send `t.events[i]` (all zero if its first copy is unknown).
    fn of(t: &FlowTruth, i: usize) -> TimeoutContext {
        let e = &t.events[i];
        let (lo, hi) = (e.off, e.off + e.len as u64);
        let overlaps = |x: &PktEvent| x.out && x.len > 0 && x.off < hi && x.off + x.len as u64 > lo;
        let Some(first) = t.events[..i].iter().position(overlaps) else { return TimeoutContext::default() };
        let new_data = |x: &&PktEvent| x.out && x.len > 0 && x.off >= hi && matches!(x.kind, PktKind::Data);
        let after: Vec<&PktEvent> = t.events[first + 1..i].iter().filter(new_data).collect();
        let dropped = |x: &PktEvent| t.drops.iter().any(|&(when, dl, dh, _)| when <= e.t && dl < x.off + x.len as u64 && dh > x.off);
        let t0 = t.events[first].t;
        let next = after.first().map_or(e.t, |x| x.t);
        let (s, r) = (t.events[first].state, t.events[i - 1].state);
        TimeoutContext {
            out_at_send: segments_out(t, first),
            in_flight_at_send: s.in_flight_pkts,
            cwnd_at_send: s.cwnd_pkts,
            sent_after: after.len() as u64,
            lost_after: after.iter().filter(|x| dropped(x)).count() as u64,
            next_send_ms: next.saturating_since(t0).as_millis() as u64,
            out_at_rto: segments_out(t, i - 1),
            in_flight_at_rto: r.in_flight_pkts,
            sacked_at_rto: r.sacked_pkts,
            cwnd_at_rto: r.cwnd_pkts,
        }
    }
}

impl std::fmt::Display for TimeoutContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self;
        write!(
            f,
            "{},{},{},{},{},{},{},{},{},{}",
            c.out_at_send,
            c.in_flight_at_send,
            c.cwnd_at_send,
            c.sent_after,
            c.lost_after,
            c.next_send_ms,
            c.out_at_rto,
            c.in_flight_at_rto,
            c.sacked_at_rto,
            c.cwnd_at_rto
        )
    }
}

/// Data segments outstanding right after the front-end's packet `t.events[k]`, as Linux counts
/// `packets_out` (one per segment sent and not cumulatively acknowledged, whatever its size):
/// the first transmissions that end above SND.UNA (the highest byte sent minus the socket's
/// unacknowledged bytes). Issue 16 session 7: counting `unacked_bytes / MSS` instead made five
/// 200-byte voice segments "one packet out", so voice-only connections looked less-packet.
fn segments_out(t: &FlowTruth, k: usize) -> u64 {
    let is_first_tx = |x: &PktEvent| x.out && x.len > 0 && matches!(x.kind, PktKind::Data);
    let sent = &t.events[..=k];
    let snd_nxt = sent.iter().filter(|x| is_first_tx(x)).map(|x| x.off + x.len as u64).max().unwrap_or(0);
    let snd_una = snd_nxt.saturating_sub(t.events[k].state.unacked_bytes);
    sent.iter().rev().filter(|x| is_first_tx(x)).take_while(|x| x.off + x.len as u64 > snd_una).count() as u64
}

/// The type of the timeout retransmission at `t.events[i]` (rules in the module comment).
fn timeout_type(t: &FlowTruth, i: usize) -> &'static str {
    let e = &t.events[i];
    let (lo, hi) = (e.off, e.off + e.len as u64);
    let overlaps = |x: &PktEvent| x.out && x.len > 0 && x.off < hi && x.off + x.len as u64 > lo;
    let before = &t.events[..i];
    let Some(first) = before.iter().position(overlaps) else { return "other" };
    if before[first + 1..].iter().any(|x| overlaps(x) && matches!(x.kind, PktKind::Retrans { .. })) {
        return "double";
    }
    let dropped = |a: u64, b: u64| t.drops.iter().any(|&(when, dl, dh, _)| when <= e.t && dl < b && dh > a);
    if !dropped(lo, hi) {
        return "ack_delay_loss";
    }
    let new_data_after =
        |evs: &[PktEvent]| evs.iter().filter(|x| x.out && x.len > 0 && x.off >= hi && matches!(x.kind, PktKind::Data)).count();
    if new_data_after(&t.events[first..]) < 3 {
        return "tail";
    }
    // At the RTO: the state right before the retransmission.
    if segments_out(t, i - 1) < 4 {
        return "less_packet";
    }
    let window = &before[first..];
    // Every segment outstanding at the RTO (sent, at or after the lost one, not yet acknowledged
    // as far as the sender knew) had a dropped copy.
    let outstanding_end = lo + e.state.unacked_bytes.max(e.len as u64);
    let mut all_lost = true;
    for x in window.iter().filter(|x| x.out && x.len > 0 && x.off >= lo && x.off < outstanding_end) {
        if !dropped(x.off, x.off + x.len as u64) {
            all_lost = false;
            break;
        }
    }
    if all_lost {
        return "continuous_loss";
    }
    "other"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_ms: u64, out: bool, off: u64, len: u32, kind: PktKind, unacked: u64) -> PktEvent {
        let state = Snapshot {
            established: true,
            unacked_bytes: unacked,
            srtt: Some(Duration::from_millis(50)),
            rto: Duration::from_millis(250),
            mss: 1000,
            nothing_queued: true,
            ..Default::default()
        };
        PktEvent { t: Time::from_millis(t_ms), out, off, len, kind, state }
    }

    fn flow(events: Vec<PktEvent>, drops: Vec<(Time, u64, u64)>) -> FlowTruth {
        let drops = drops.into_iter().map(|(t, lo, hi)| (t, lo, hi, DropCause::RandomLoss)).collect();
        FlowTruth { publisher: false, events, drops, ..Default::default() }
    }

    const RTO: PktKind = PktKind::Retrans { cause: RetransmitCause::Timeout, rto_fired: true };

    #[test]
    fn a_gap_ended_by_an_rto_retransmission_is_a_timeout_stall_and_an_idle_gap_is_resource_constraint() {
        let t = flow(
            vec![
                ev(0, true, 0, 1000, PktKind::Data, 1000),
                ev(300, true, 0, 1000, RTO, 1000),
                ev(340, false, 0, 0, PktKind::Control, 0),
                ev(900, true, 1000, 1000, PktKind::Data, 1000),
            ],
            vec![],
        );
        let s = stalls(&t);
        assert_eq!(s.iter().map(|x| x.3).collect::<Vec<_>>(), vec!["timeout", "resource_constraint"]);
    }

    #[test]
    fn a_timeout_with_no_dropped_copy_is_ack_delay_loss_and_with_a_drop_and_one_packet_out_less_packet() {
        let evs = with_more_data(vec![ev(0, true, 0, 1000, PktKind::Data, 1000), ev(300, true, 0, 1000, RTO, 1000)]);
        assert_eq!(timeout_type(&flow(evs.clone(), vec![]), 1), "ack_delay_loss");
        assert_eq!(timeout_type(&flow(evs, vec![(Time::from_millis(1), 0, 1000)]), 1), "less_packet");
    }

    /// The flow goes on after the RTO: three more data segments, one at a time.
    fn with_more_data(mut evs: Vec<PktEvent>) -> Vec<PktEvent> {
        let end = evs.iter().map(|e| e.off + e.len as u64).max().unwrap_or(0);
        evs.extend((0..3).map(|k| ev(1000 + 100 * k, true, end + k * 1000, 1000, PktKind::Data, 1000)));
        evs
    }

    #[test]
    fn a_lost_segment_among_the_flows_last_three_is_tail_even_with_few_out() {
        // Seed 000 §3.2 names tail first: "the lost packet is in the last three packets of the flow".
        let evs = vec![ev(0, true, 0, 1000, PktKind::Data, 1000), ev(300, true, 0, 1000, RTO, 1000)];
        let lost = vec![(Time::from_millis(1), 0, 1000)];
        assert_eq!(timeout_type(&flow(evs.clone(), lost.clone()), 1), "tail");
        assert_eq!(timeout_type(&flow(with_more_data(evs), lost), 1), "less_packet");
    }

    #[test]
    fn less_packet_counts_the_segments_out_at_the_rto_not_at_the_lost_ones_send() {
        // Six segments leave together, the fourth is lost; the ACK for the first three comes
        // back, so at the RTO the lost one and the two after it are out: fewer than 4 (seed's
        // Eq. 1 packets_out from SND.UNA), less packet although six were out at its send.
        let mut evs: Vec<PktEvent> = (0..6).map(|k| ev(k, true, k * 1000, 1000, PktKind::Data, (k + 1) * 1000)).collect();
        evs.push(ev(60, false, 0, 0, PktKind::Control, 3000));
        evs.push(ev(400, true, 3000, 1000, RTO, 3000));
        let lost = vec![(Time::from_millis(10), 3000, 4000)];
        assert_eq!(timeout_type(&flow(with_more_data(evs.clone()), lost.clone()), 7), "less_packet");
        // Without that ACK four are out at the RTO (the first three unacknowledged too).
        let mut four = evs.clone();
        four[6].state.unacked_bytes = 6000;
        four[7].state.unacked_bytes = 6000;
        assert_ne!(timeout_type(&flow(with_more_data(four), lost), 7), "less_packet");
    }

    #[test]
    fn the_timeout_context_counts_what_was_out_at_the_send_and_at_the_rto_and_what_followed() {
        // Three segments out; the second is lost. 25 ms later one more segment leaves (also
        // lost), an ACK brings SND.UNA to the lost one, and the RTO fires at 400 ms.
        let mut evs: Vec<PktEvent> = (0..3).map(|k| ev(k, true, k * 1000, 1000, PktKind::Data, (k + 1) * 1000)).collect();
        evs.push(ev(26, true, 3000, 1000, PktKind::Data, 4000));
        evs.push(ev(60, false, 0, 0, PktKind::Control, 3000));
        evs.push(ev(400, true, 1000, 1000, RTO, 3000));
        // The sender's own counters are copied from the snapshots after the lost one's send
        // and after the last event before the RTO (the ACK: segment 2 SACKed).
        (evs[1].state.in_flight_pkts, evs[1].state.cwnd_pkts) = (2, 10);
        (evs[4].state.in_flight_pkts, evs[4].state.sacked_pkts, evs[4].state.cwnd_pkts) = (2, 1, 7);
        let lost = vec![(Time::from_millis(5), 1000, 2000), (Time::from_millis(30), 3000, 4000)];
        let want = TimeoutContext {
            out_at_send: 2, // segments 0 and 1 (the third leaves 1 ms later)
            in_flight_at_send: 2,
            cwnd_at_send: 10,
            sent_after: 2, // segments 2 and 3
            lost_after: 1,
            next_send_ms: 1,
            out_at_rto: 3, // SND.UNA = 1000: segments 1, 2, 3
            in_flight_at_rto: 2,
            sacked_at_rto: 1,
            cwnd_at_rto: 7,
        };
        assert_eq!(TimeoutContext::of(&flow(evs, lost), 5), want);
    }

    fn server_pkt(seq: u32, len: u32) -> Packet {
        Packet {
            uid: 0,
            flow: 0,
            src_node: 0,
            dst_node: 1,
            src_ip: 0,
            dst_ip: 0,
            src_port: 80,
            dst_port: 33108,
            ip_id: 0,
            seq,
            ack: 0,
            flags: flags::ACK,
            window: 0,
            options: Default::default(),
            payload_len: len,
            sent_at: Time::ZERO,
        }
    }

    #[test]
    fn the_persist_timers_one_byte_data_segment_is_data_and_its_empty_probe_is_not() {
        // Linux tcp_write_wakeup fills a 1-byte window with 1 byte of new data; tcp_xmit_probe_skb
        // sends no data at SND.UNA − 1. Both are logged as zero-window probes by the endpoint.
        let mut truth = Truth::default();
        truth.track(0, false, 1);
        truth.opened(0, 1000, 5000, 33108);
        let zwp = [TcpLogEvent::ZeroWindowProbe { at: Time::ZERO, flow: 0, from_node: 0 }];
        let st = Snapshot { established: true, ..Default::default() };
        truth.sent(Time::from_millis(1), 0, &[server_pkt(5001, 1000)], &[], st);
        truth.sent(Time::from_millis(300), 0, &[server_pkt(6001, 1)], &zwp, st);
        truth.sent(Time::from_millis(900), 0, &[server_pkt(6001, 0)], &zwp, st);
        let t = truth.flows[0].as_ref().unwrap();
        let kinds: Vec<PktKind> = t.events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, vec![PktKind::Data, PktKind::Data, PktKind::WindowProbe]);
        assert_eq!(t.events[1].off, 1000);
        // Both data segments are listed for frame attribution, the empty probe is not.
        let dir = std::env::temp_dir().join(format!("tcpvideo_truth_probe_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        truth.write(&dir, |_| None).unwrap();
        let pk = std::fs::read_to_string(dir.join("truth_packets.csv")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let offsets: Vec<&str> = pk.lines().skip(1).map(|l| l.split(',').nth(2).unwrap()).collect();
        assert_eq!(offsets, vec!["0", "1000"]);
    }

    #[test]
    fn a_timeout_of_a_segment_resent_before_is_double() {
        let fast = PktKind::Retrans { cause: RetransmitCause::FastRetransmit, rto_fired: false };
        let evs = vec![ev(0, true, 0, 1000, PktKind::Data, 1000), ev(100, true, 0, 1000, fast, 1000), ev(400, true, 0, 1000, RTO, 1000)];
        assert_eq!(timeout_type(&flow(evs, vec![]), 2), "double");
    }

    #[test]
    fn when_every_outstanding_segment_was_dropped_the_timeout_is_continuous_loss() {
        let mut evs: Vec<PktEvent> = (0..6).map(|k| ev(k, true, k * 1000, 1000, PktKind::Data, (k + 1) * 1000)).collect();
        evs.push(ev(400, true, 0, 1000, RTO, 6000));
        let all = (0..6).map(|k| (Time::from_millis(10), k * 1000, k * 1000 + 1000)).collect();
        assert_eq!(timeout_type(&flow(evs.clone(), all), 6), "continuous_loss");
        let some = vec![(Time::from_millis(10), 0, 1000)];
        assert_eq!(timeout_type(&flow(evs, some), 6), "other");
    }

    #[test]
    fn small_segments_count_one_each_so_five_voice_frames_out_are_not_less_packet() {
        // Five 200-byte voice segments, the first lost: 1000 bytes are one MSS, but Linux's
        // packets_out (and the seed's "packets out") counts five.
        let mut evs: Vec<PktEvent> = (0..5).map(|k| ev(k * 40, true, k * 200, 200, PktKind::Data, (k + 1) * 200)).collect();
        evs.push(ev(400, true, 0, 200, RTO, 1000));
        let lost = vec![(Time::from_millis(1), 0, 200)];
        assert_ne!(timeout_type(&flow(evs.clone(), lost.clone()), 5), "less_packet");
        // Three of them out at most: less packet.
        let three: Vec<PktEvent> = evs[..3].iter().copied().chain([ev(400, true, 0, 200, RTO, 600)]).collect();
        assert_eq!(timeout_type(&flow(with_more_data(three), lost), 3), "less_packet");
    }
}
