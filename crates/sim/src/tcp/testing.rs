//! A two-endpoint test bench: a client (node 0) and a server (node 1) joined by a wire with a fixed
//! one-way delay, an optional serialization rate and scripted drops, driven by a synthetic clock.
//! No engine is needed, so every protocol rule gets a short, exactly reproducible test (smoltcp
//! style). Public (hidden from docs) so the engine's tests may reuse it.

use std::collections::VecDeque;
use std::time::Duration;

use tcpvideo_model::{Bandwidth, Time};

use super::{Addr, SocketEvent, TcpConfig, TcpEndpoint, TcpLogEvent};
use crate::packet::{NodeId, Packet};

pub const CLIENT: NodeId = 0;
pub const SERVER: NodeId = 1;

/// One packet put on the wire.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub at: Time,
    pub pkt: Packet,
    pub dropped: bool,
}

/// Which packets the wire loses.
pub enum DropRule {
    /// The `n`-th (1-based) payload-carrying transmission from `from`, retransmissions included.
    NthData { from: NodeId, n: u64 },
    /// Everything from `from` sent in [start, end).
    Blackout { from: NodeId, start: Time, end: Time },
    /// Anything the predicate selects.
    Pred(Box<dyn FnMut(&Packet) -> bool>),
}

pub struct Harness {
    pub now: Time,
    pub client: TcpEndpoint,
    pub server: TcpEndpoint,
    pub delay: Duration,
    pub rate: Option<Bandwidth>,
    link_free: [Time; 2],
    /// Packets in flight per direction (FIFO: one delay, one serializer per direction).
    wire: [VecDeque<(Time, Packet)>; 2],
    /// Departure times of packets still queued at each direction's serializer.
    queued: [VecDeque<Time>; 2],
    /// Drop-tail limit (packets waiting for the serializer) when `rate` is set.
    pub queue_limit: Option<usize>,
    pub queue_drops: u64,
    /// Record every packet in `trace` (turn off for long runs).
    pub keep_trace: bool,
    /// Extra per-packet delay, uniform in [0, jitter] (deterministic xorshift): reorders packets.
    pub jitter: Option<Duration>,
    /// Extra delay for packets from a node sent in [start, end): (from, start, end, extra).
    pub delays: Vec<(NodeId, Time, Time, Duration)>,
    /// Extra delay for the n-th (1-based) data transmission from a node: (from, n, extra).
    pub delay_nth_data: Vec<(NodeId, u64, Duration)>,
    rng: u64,
    pub trace: Vec<Sent>,
    pub log: Vec<TcpLogEvent>,
    pub events: Vec<(Time, NodeId, SocketEvent)>,
    pub drops: Vec<DropRule>,
    data_count: [u64; 2],
    /// The application reads everything as soon as it arrives (per node).
    pub auto_read: [bool; 2],
    out: Vec<Packet>,
    ev: Vec<SocketEvent>,
    /// The client's SYN, put on the wire at the first `run_*` so tests can install drops first.
    pending: Vec<Packet>,
}

pub fn addr(node: NodeId) -> Addr {
    Addr { node, ip: 0x0a00_0001 + node, port: if node == CLIENT { 40_000 } else { 80 } }
}

impl Harness {
    /// Client and server with the given configurations; the client's SYN leaves at t = 0.
    pub fn new(client_cfg: &TcpConfig, server_cfg: &TcpConfig, one_way_delay: Duration) -> Harness {
        Harness::with_isn(client_cfg, server_cfg, one_way_delay, 1_000, 5_000_000)
    }

    pub fn with_isn(client_cfg: &TcpConfig, server_cfg: &TcpConfig, one_way_delay: Duration, client_isn: u32, server_isn: u32) -> Harness {
        let mut out = Vec::new();
        let client = TcpEndpoint::connect(client_cfg, 7, addr(CLIENT), addr(SERVER), client_isn, Time::ZERO, &mut out).unwrap();
        let server = TcpEndpoint::listen(server_cfg, 7, addr(SERVER), addr(CLIENT), server_isn).unwrap();
        let mut h = Harness {
            now: Time::ZERO,
            client,
            server,
            delay: one_way_delay,
            rate: None,
            link_free: [Time::ZERO; 2],
            wire: [VecDeque::new(), VecDeque::new()],
            queued: [VecDeque::new(), VecDeque::new()],
            queue_limit: None,
            queue_drops: 0,
            keep_trace: true,
            jitter: None,
            delays: Vec::new(),
            delay_nth_data: Vec::new(),
            rng: 0x9E37_79B9_7F4A_7C15,
            trace: Vec::new(),
            log: Vec::new(),
            events: Vec::new(),
            drops: Vec::new(),
            data_count: [0; 2],
            auto_read: [true; 2],
            out: Vec::new(),
            ev: Vec::new(),
            pending: Vec::new(),
        };
        h.pending = out;
        h
    }

    /// Same configuration on both sides.
    pub fn pair(cfg: &TcpConfig, one_way_delay: Duration) -> Harness {
        Harness::new(cfg, cfg, one_way_delay)
    }

    pub fn rtt(&self) -> Duration {
        self.delay * 2
    }

    pub fn ep(&mut self, node: NodeId) -> &mut TcpEndpoint {
        if node == CLIENT {
            &mut self.client
        } else {
            &mut self.server
        }
    }

    /// Drop the `n`-th data transmission from `from`.
    pub fn drop_nth_data(&mut self, from: NodeId, n: u64) {
        self.drops.push(DropRule::NthData { from, n });
    }

    fn should_drop(&mut self, p: &Packet) -> (bool, Option<u64>) {
        let dir = p.src_node as usize;
        let nth = if p.payload_len > 0 {
            self.data_count[dir] += 1;
            Some(self.data_count[dir])
        } else {
            None
        };
        let now = self.now;
        let mut drop = false;
        for r in &mut self.drops {
            drop |= match r {
                DropRule::NthData { from, n } => *from == p.src_node && nth == Some(*n),
                DropRule::Blackout { from, start, end } => *from == p.src_node && now >= *start && now < *end,
                DropRule::Pred(f) => f(p),
            };
        }
        (drop, nth)
    }

    fn put_on_wire(&mut self, out: &mut Vec<Packet>) {
        for p in out.drain(..) {
            let (dropped, nth) = self.should_drop(&p);
            if self.keep_trace {
                self.trace.push(Sent { at: self.now, pkt: p, dropped });
            }
            if dropped {
                continue;
            }
            let dir = p.src_node as usize;
            let depart = match self.rate {
                Some(r) => {
                    let q = &mut self.queued[dir];
                    while q.front().is_some_and(|&t| t <= self.now) {
                        q.pop_front();
                    }
                    if self.queue_limit.is_some_and(|l| q.len() >= l) {
                        self.queue_drops += 1;
                        continue;
                    }
                    let t = self.link_free[dir].max(self.now) + r.transmit_time(p.ip_len() as u64);
                    self.link_free[dir] = t;
                    q.push_back(t);
                    t
                }
                None => self.now,
            };
            let mut arrive = depart + self.delay;
            for &(from, start, end, extra) in &self.delays {
                if p.src_node == from && self.now >= start && self.now < end {
                    arrive += extra;
                }
            }
            for &(from, n, extra) in &self.delay_nth_data {
                if p.src_node == from && nth == Some(n) {
                    arrive += extra;
                }
            }
            if let Some(j) = self.jitter {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                arrive += Duration::from_nanos(self.rng % (j.as_nanos() as u64 + 1));
            }
            let w = &mut self.wire[dir];
            let at = w.partition_point(|x| x.0 <= arrive);
            w.insert(at, (arrive, p));
        }
    }

    fn after_call(&mut self, node: NodeId) {
        let mut out = std::mem::take(&mut self.out);
        let now = self.now;
        let mut ev = std::mem::take(&mut self.ev);
        self.ep(node).take_events(&mut ev);
        let mut read = false;
        for e in ev.drain(..) {
            if e == SocketEvent::Readable && self.auto_read[node as usize] {
                read = true;
            }
            self.events.push((now, node, e));
        }
        self.ev = ev;
        if read {
            let mut log = std::mem::take(&mut self.log);
            let ep = self.ep(node);
            ep.recv(u64::MAX);
            ep.flush(now, &mut out, &mut log);
            self.log = log;
        }
        self.put_on_wire(&mut out);
        self.out = out;
    }

    /// The application on `node` queues `bytes` and the endpoint flushes.
    pub fn send(&mut self, node: NodeId, bytes: u64) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        let mut log = std::mem::take(&mut self.log);
        let ep = self.ep(node);
        let n = ep.send(bytes);
        ep.flush(now, &mut out, &mut log);
        self.log = log;
        self.put_on_wire(&mut out);
        self.out = out;
        self.after_call(node);
        n
    }

    /// The application on `node` reads up to `max` bytes (then the endpoint flushes).
    pub fn read(&mut self, node: NodeId, max: u64) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        let mut log = std::mem::take(&mut self.log);
        let ep = self.ep(node);
        let n = ep.recv(max);
        ep.flush(now, &mut out, &mut log);
        self.log = log;
        self.put_on_wire(&mut out);
        self.out = out;
        n
    }

    pub fn close(&mut self, node: NodeId) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        let mut log = std::mem::take(&mut self.log);
        let ep = self.ep(node);
        ep.close();
        ep.flush(now, &mut out, &mut log);
        self.log = log;
        self.put_on_wire(&mut out);
        self.out = out;
        self.after_call(node);
    }

    fn next_event(&self) -> Option<Time> {
        let w0 = self.wire[0].front().map(|x| x.0);
        let w1 = self.wire[1].front().map(|x| x.0);
        [w0, w1, self.client.next_timer(), self.server.next_timer()].into_iter().flatten().min()
    }

    /// Process everything due up to and including `until`, then set the clock to `until`.
    pub fn run_until(&mut self, until: Time) {
        if !self.pending.is_empty() {
            let mut p = std::mem::take(&mut self.pending);
            self.put_on_wire(&mut p);
        }
        let mut guard = 0u64;
        while let Some(t) = self.next_event() {
            if t > until {
                break;
            }
            guard += 1;
            assert!(guard < 10_000_000, "harness: too many events");
            self.now = self.now.max(t);
            self.step_at_now();
        }
        self.now = self.now.max(until);
    }

    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    fn step_at_now(&mut self) {
        let now = self.now;
        // Arrivals first (earlier one first; ties: client→server first).
        let due = |d: &VecDeque<(Time, Packet)>| d.front().map(|x| x.0).filter(|&t| t <= now);
        let dir = match (due(&self.wire[0]), due(&self.wire[1])) {
            (Some(a), Some(b)) => Some(if b < a { 1 } else { 0 }),
            (Some(_), None) => Some(0),
            (None, Some(_)) => Some(1),
            (None, None) => None,
        };
        if let Some(d) = dir {
            let (_, p) = self.wire[d].pop_front().unwrap();
            if self.keep_trace && std::env::var("TCP_HARNESS_DEBUG").is_ok() {
                eprintln!("deliver {} {}->{} fl={:02x} state {:?}", now, p.src_node, p.dst_node, p.flags, self.ep(p.dst_node).state());
            }
            let mut out = std::mem::take(&mut self.out);
            let mut log = std::mem::take(&mut self.log);
            self.ep(p.dst_node).on_packet(now, &p, &mut out, &mut log);
            self.log = log;
            self.put_on_wire(&mut out);
            self.out = out;
            self.after_call(p.dst_node);
            return;
        }
        for node in [CLIENT, SERVER] {
            if self.ep(node).next_timer().is_some_and(|t| t <= now) {
                let mut out = std::mem::take(&mut self.out);
                let mut log = std::mem::take(&mut self.log);
                self.ep(node).on_timer(now, &mut out, &mut log);
                self.log = log;
                self.put_on_wire(&mut out);
                self.out = out;
                self.after_call(node);
                return;
            }
        }
    }

    /// Run until the handshake completed on both sides.
    pub fn establish(&mut self) {
        self.run_until(Time::ZERO + self.rtt() * 2);
        assert_eq!(self.client.state(), super::TcpState::Established);
        assert_eq!(self.server.state(), super::TcpState::Established);
    }

    /// Data transmissions (payload > 0) from `node`, in order, with their send time.
    pub fn data_from(&self, node: NodeId) -> impl Iterator<Item = &Sent> {
        self.trace.iter().filter(move |s| s.pkt.src_node == node && s.pkt.payload_len > 0)
    }

    /// Pure ACKs (no payload, no SYN/FIN) from `node`.
    pub fn acks_from(&self, node: NodeId) -> impl Iterator<Item = &Sent> {
        use crate::packet::flags;
        self.trace
            .iter()
            .filter(move |s| s.pkt.src_node == node && s.pkt.payload_len == 0 && s.pkt.flags & (flags::SYN | flags::FIN | flags::RST) == 0)
    }

    pub fn events_of(&self, node: NodeId, e: SocketEvent) -> usize {
        self.events.iter().filter(|x| x.1 == node && x.2 == e).count()
    }
}
