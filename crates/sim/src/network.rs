//! The network: nodes, links (two independent directions, "channels"), drop-tail queues, random
//! loss, static routes and capture taps.
//!
//! A channel is a point-to-point transmitter: rate, propagation delay, a FIFO drop-tail queue limited
//! in packets or bytes (Linux `pfifo`/`bfifo`, ns-3 `DropTailQueue`) and a loss model. Store and
//! forward: a packet's last bit leaves after its serialisation time `ip_len·8/rate` and arrives
//! `delay` later. The queue limit counts packets *waiting*, not the one on the wire, as pfifo's
//! `limit` and ns-3's queue do.
//!
//! Cheap events (htsim-style): a FIFO link's departure times are known the moment a packet is
//! queued (start = max(now, busy_until)), so a channel schedules only the packet's arrival at the far
//! end and keeps the departure times of the packets it holds in a small ring; what is still waiting
//! at time t is computed lazily. One event per packet per hop instead of two.
//! The time-weighted mean queue follows from Little's law: the integral of the waiting-packet count
//! over time is the sum over packets of their waiting times, known at enqueue.
//!
//! Cut-through hops (`Network::enable_cut_through`): when every packet a router sends on channel C
//! comes in over one channel F (a dumbbell's bottleneck feeds each client's access link; one
//! server's access link feeds the bottleneck), C sees exactly F's departures, in F's order, each
//! `delay` after it leaves F — all known the moment F admits the packet. So the packet is offered to
//! C right then, at its future arrival time at the router, instead of through an arrival event there;
//! C's state evolves through the same offers at the same times in the same order, so queues, drops,
//! loss draws and arrival times are identical, with one event per packet saved per such hop (a
//! dumbbell's data packets need one event instead of three). Its final arrival event keeps the place
//! among equal times it would have had if scheduled at the router (`EventQueue::push_after_hop`).
//! Off where a run looks at a channel between the two instants: queue sampling, capture taps on the
//! router's sides of the hop, drop logs with times, reordering or RAN latency on either channel, and
//! for packets that reach the router after the run's end (they were never offered to C).
//!
//! Random loss happens on the wire: a lost packet uses the link (and is seen by a tap on the
//! sending side, as on a real lossy medium) but never arrives.
//!
//! Routing: static shortest paths by hop count, computed once by a breadth-first search from each
//! host; among equal-length next hops the channel declared first wins (deterministic tie-break).
//! Only routers forward; a path never transits a host.

use std::collections::VecDeque;
use std::time::Duration;

use tcpvideo_model::{Bandwidth, Time};

use crate::engine::{Event, EventQueue, PacketPool, SEQ_TIME_LIMIT_NS};
use crate::loss::LossModel;
use crate::packet::{NodeId, Packet};
use crate::pcap::PcapSink;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Router,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub ip: u32,
    /// Outgoing channels, in declaration order.
    pub out: Vec<u32>,
}

/// A queue limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
}

/// Cumulative counters of one channel.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChannelStats {
    pub enqueued_packets: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    /// Sum over packets of their time waiting in the queue (ns): ∫ queue length dt.
    pub wait_ns: u128,
    /// Same, weighted by packet size (byte·ns): ∫ queued bytes dt.
    pub wait_byte_ns: u128,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    start: u64,
    end: u64,
    bytes: u32,
}

/// One direction of a link.
pub struct Channel {
    pub link: u32,
    pub from: NodeId,
    pub to: NodeId,
    pub rate: Bandwidth,
    pub delay: Duration,
    pub limit: QueueLimit,
    pub loss: LossModel,
    /// Optional reordering (crate::reorder), drawn after the loss draw.
    pub reorder: Option<crate::reorder::ReorderModel>,
    /// Packets admitted and not yet fully serialised, in FIFO order.
    fifo: VecDeque<InFlight>,
    fifo_bytes: u64,
    busy_until: u64,
    /// Capture taps (index into `Network::taps`): outgoing side and incoming side.
    pub tap_tx: Option<u16>,
    pub tap_rx: Option<u16>,
    pub stats: ChannelStats,
    /// A fluctuating extra latency (RAN, [`crate::ran_latency`]); `None` = fixed `delay`.
    pub ran_latency: Option<crate::ran_latency::RanLatency>,
    /// Delay spikes (a mobile path's RTT spikes, [`crate::delay_spikes`]); `None` = none.
    pub delay_spikes: Option<crate::delay_spikes::DelaySpikes>,
    /// Per-packet delay jitter, order preserved ([`crate::delay_jitter`]); `None` = none.
    pub jitter: Option<crate::delay_jitter::DelayJitter>,
    /// The one channel whose packets are offered to this one the moment they are admitted there
    /// (cut-through hop, module doc); `NO_ROUTE` = none.
    cut_through_from: u32,
    /// Serialisation time (ns) of the last packet size admitted, with that size and rate: a
    /// channel carries few distinct sizes (full segments, ACKs), and the exact 128-bit division
    /// behind `Bandwidth::transmit_time` was ~1 % of an onoff run. Keyed by the rate too, as
    /// `rate` is public.
    tx_time_bytes: u32,
    tx_time_rate: u64,
    tx_time_ns: u64,
}

impl Channel {
    pub fn new(link: u32, from: NodeId, to: NodeId, rate: Bandwidth, delay: Duration, limit: QueueLimit, loss: LossModel) -> Self {
        Channel {
            link,
            from,
            to,
            rate,
            delay,
            limit,
            loss,
            reorder: None,
            fifo: VecDeque::with_capacity(64),
            fifo_bytes: 0,
            busy_until: 0,
            tap_tx: None,
            tap_rx: None,
            stats: ChannelStats::default(),
            ran_latency: None,
            delay_spikes: None,
            jitter: None,
            cut_through_from: NO_ROUTE,
            tx_time_bytes: u32::MAX,
            tx_time_rate: 0,
            tx_time_ns: 0,
        }
    }

    /// Serialisation time of `bytes` at the channel's rate (ns), from the one-entry cache.
    #[inline]
    fn transmit_ns(&mut self, bytes: u32) -> u64 {
        if bytes != self.tx_time_bytes || self.rate.bits_per_sec != self.tx_time_rate {
            self.tx_time_ns = self.rate.transmit_time(bytes as u64).as_nanos() as u64;
            self.tx_time_bytes = bytes;
            self.tx_time_rate = self.rate.bits_per_sec;
        }
        self.tx_time_ns
    }

    fn purge(&mut self, now: u64) {
        // An idle channel (the common case on access links) has finished every packet it holds:
        // drop them without reading the ring, whose front is usually out of cache by now.
        if self.busy_until <= now {
            self.fifo.clear();
            self.fifo_bytes = 0;
            return;
        }
        while let Some(f) = self.fifo.front() {
            if f.end > now {
                break;
            }
            self.fifo_bytes -= f.bytes as u64;
            self.fifo.pop_front();
        }
    }

    /// Packets and bytes waiting (admitted, transmission not started) at `now`.
    pub fn queue_at(&mut self, now: Time) -> (u64, u64) {
        self.purge(now.0);
        match self.fifo.front() {
            None => (0, 0),
            Some(f) if f.start <= now.0 => ((self.fifo.len() - 1) as u64, self.fifo_bytes - f.bytes as u64),
            Some(_) => (self.fifo.len() as u64, self.fifo_bytes),
        }
    }

    /// Offer a packet of `bytes` at `now`. Returns `(tx_start, arrival)` or `None` if the queue is
    /// full. Does not apply random loss.
    fn admit(&mut self, now: Time, bytes: u32) -> Option<(Time, Time)> {
        let (qp, qb) = self.queue_at(now);
        let full = match self.limit {
            QueueLimit::Packets(n) => qp >= n && self.busy_until > now.0,
            QueueLimit::Bytes(b) => qb + bytes as u64 > b && self.busy_until > now.0,
        };
        self.stats.enqueued_packets += 1;
        if full {
            self.stats.queue_drops += 1;
            return None;
        }
        let start = self.busy_until.max(now.0);
        let end = start + self.transmit_ns(bytes);
        self.busy_until = end;
        self.fifo.push_back(InFlight { start, end, bytes });
        self.fifo_bytes += bytes as u64;
        let wait = (start - now.0) as u128;
        self.stats.wait_ns += wait;
        self.stats.wait_byte_ns += wait * bytes as u128;
        if start > now.0 {
            self.stats.max_queue_packets = self.stats.max_queue_packets.max(qp + 1);
            self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(qb + bytes as u64);
        }
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += bytes as u64;
        let mut arrival = match self.ran_latency.as_mut() {
            Some(ran) => Time(ran.arrival(end, self.delay)),
            None => Time(end) + self.delay,
        };
        if let Some(spikes) = self.delay_spikes.as_mut() {
            arrival = Time(spikes.arrival(end, arrival.0));
        }
        if let Some(jitter) = self.jitter.as_mut() {
            arrival = Time(jitter.arrival(arrival.0));
        }
        Some((Time(start), arrival))
    }

    /// The part of the waiting-time integral that lies after `end` (packets still queued at the end
    /// of the run), so means can be clipped to the measured interval.
    pub fn wait_after(&mut self, end: Time) -> (u128, u128) {
        self.purge(end.0);
        let mut w = 0u128;
        let mut wb = 0u128;
        for f in &self.fifo {
            if f.start > end.0 {
                let d = (f.start - end.0) as u128;
                w += d;
                wb += d * f.bytes as u128;
            }
        }
        (w, wb)
    }
}

/// A link as declared: a name and its two channels (a→b, b→a).
#[derive(Clone, Debug)]
pub struct Link {
    pub name: String,
    pub a: NodeId,
    pub b: NodeId,
    pub ab: u32,
    pub ba: u32,
}

pub const NO_ROUTE: u32 = u32::MAX;

/// Why the network dropped a packet (ground truth's drop log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The channel's drop-tail queue was full.
    QueueFull,
    /// The channel's loss model (Bernoulli, Gilbert–Elliott, keyed) drew a loss.
    RandomLoss,
}

impl DropCause {
    pub fn label(self) -> &'static str {
        match self {
            DropCause::QueueFull => "queue",
            DropCause::RandomLoss => "random",
        }
    }
}

/// Nodes, channels, routes and taps.
pub struct Network {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub channels: Vec<Channel>,
    /// `routes[node * n_hosts + host_index[dst]]` = outgoing channel.
    routes: Vec<u32>,
    host_index: Vec<u32>,
    n_hosts: usize,
    pub taps: Vec<PcapSink>,
    next_uid: u64,
    /// Packets that reached a node with no route onwards (should stay 0).
    pub unroutable: u64,
    /// When `Some`, every dropped packet with its time and cause, for ground truth (crowdlive
    /// runs); `None` keeps the hot path free of it.
    pub drop_log: Option<Vec<(Time, Packet, DropCause)>>,
    /// Cut-through hops are on for packets reaching their router no later than this (the run's end).
    cut_through_end: Option<Time>,
}

impl Network {
    pub fn new(nodes: Vec<Node>, links: Vec<Link>, channels: Vec<Channel>) -> Network {
        let mut host_index = vec![u32::MAX; nodes.len()];
        let mut n_hosts = 0;
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Host {
                host_index[i] = n_hosts as u32;
                n_hosts += 1;
            }
        }
        let mut net = Network {
            nodes,
            links,
            channels,
            routes: Vec::new(),
            host_index,
            n_hosts,
            taps: Vec::new(),
            next_uid: 0,
            unroutable: 0,
            drop_log: None,
            cut_through_end: None,
        };
        net.compute_routes();
        net
    }

    /// Build the network a validated scenario describes (taps are added by the simulation).
    pub fn from_defs(nodes: &[crate::scenario::NodeDef], links: &[crate::scenario::LinkDef], seed: u64) -> Network {
        let mut ns: Vec<Node> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node { name: n.name.clone(), kind: n.kind, ip: Network::ip_of(i as u32), out: vec![] })
            .collect();
        let mut ls = Vec::with_capacity(links.len());
        let mut chans = Vec::with_capacity(2 * links.len());
        for (li, l) in links.iter().enumerate() {
            for (f, t, d) in [(l.a, l.b, &l.ab), (l.b, l.a, &l.ba)] {
                let ci = chans.len() as u32;
                let loss = LossModel::new(d.loss, crate::engine::sub_rng(seed, crate::engine::streams::LOSS_BASE + ci as u64));
                let mut ch = Channel::new(li as u32, f, t, d.rate, d.delay, d.limit, loss);
                ch.reorder = d.reorder.map(|r| {
                    crate::reorder::ReorderModel::new(r, crate::engine::sub_rng(seed, crate::engine::streams::REORDER_BASE + ci as u64))
                });
                ch.delay_spikes = d.spikes.map(|s| {
                    crate::delay_spikes::DelaySpikes::new(s, crate::engine::sub_rng(seed, crate::engine::streams::SPIKES_BASE + ci as u64))
                });
                ch.jitter = d.jitter.map(|j| crate::delay_jitter::DelayJitter::new(j, crate::engine::sub_rng(seed, j.stream(ci as u64))));
                chans.push(ch);
                ns[f as usize].out.push(ci);
            }
            ls.push(Link { name: l.name.clone(), a: l.a, b: l.b, ab: 2 * li as u32, ba: 2 * li as u32 + 1 });
        }
        Network::new(ns, ls, chans)
    }

    /// IPv4 address of node `i`: 10.0.0.0 + i + 1.
    pub fn ip_of(i: NodeId) -> u32 {
        0x0a00_0000 + i + 1
    }

    fn compute_routes(&mut self) {
        let n = self.nodes.len();
        self.routes = vec![NO_ROUTE; n * self.n_hosts];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        // incoming[v] = channels ending at v, in declaration order (for the reverse BFS).
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (ci, c) in self.channels.iter().enumerate() {
            incoming[c.to as usize].push(ci as u32);
        }
        for dst in 0..n {
            let h = self.host_index[dst];
            if h == u32::MAX {
                continue;
            }
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(v) = queue.pop_front() {
                // Only the destination itself and routers relay towards it.
                if v != dst && self.nodes[v].kind == NodeKind::Host {
                    continue;
                }
                for &ci in &incoming[v] {
                    let u = self.channels[ci as usize].from as usize;
                    if dist[u] == u32::MAX {
                        dist[u] = dist[v] + 1;
                        queue.push_back(u);
                    }
                }
            }
            // Next hop of u: its first declared out-channel to a neighbour one hop closer.
            for u in 0..n {
                if u == dst || dist[u] == u32::MAX {
                    continue;
                }
                for &ci in &self.nodes[u].out {
                    let v = self.channels[ci as usize].to as usize;
                    let relays = v == dst || self.nodes[v].kind == NodeKind::Router;
                    if relays && dist[v] != u32::MAX && dist[v] + 1 == dist[u] {
                        self.routes[u * self.n_hosts + h as usize] = ci;
                        break;
                    }
                }
            }
        }
    }

    /// Outgoing channel from `from` towards host `to`.
    #[inline]
    pub fn route(&self, from: NodeId, to: NodeId) -> Option<u32> {
        let h = *self.host_index.get(to as usize)?;
        if h == u32::MAX {
            return None;
        }
        let r = self.routes[from as usize * self.n_hosts + h as usize];
        (r != NO_ROUTE).then_some(r)
    }

    /// Hop count of the route from `from` to `to`.
    pub fn hops(&self, from: NodeId, to: NodeId) -> Option<usize> {
        let mut n = from;
        let mut hops = 0;
        while n != to {
            let c = self.route(n, to)?;
            n = self.channels[c as usize].to;
            hops += 1;
            if hops > self.nodes.len() {
                return None;
            }
        }
        Some(hops)
    }

    /// A host emits `p`: assign its uid, route it and offer it to the first channel.
    pub fn send(&mut self, now: Time, mut p: Packet, pool: &mut PacketPool, q: &mut EventQueue) {
        self.next_uid += 1;
        p.uid = self.next_uid;
        match self.route(p.src_node, p.dst_node) {
            Some(c) => {
                let idx = pool.insert(p);
                self.offer(now, c, idx, pool, q);
            }
            None => self.unroutable += 1,
        }
    }

    /// Turn cut-through hops on (module doc) for a run that ends at `end`: each router channel
    /// fed by exactly one channel, neither of them watched or reordered mid-run, forwards
    /// straight on. Call after taps and the drop log are set up; nothing changes if either
    /// already watches every hop or `end` is past the event queue's packed-order range.
    pub fn enable_cut_through(&mut self, end: Time) {
        if end.0 >= SEQ_TIME_LIMIT_NS || self.drop_log.is_some() {
            return;
        }
        const MANY: u32 = NO_ROUTE - 1;
        let hosts: Vec<u32> = (0..self.nodes.len() as u32).filter(|&n| self.host_index[n as usize] != u32::MAX).collect();
        // feeder[c]: the one channel whose packets a router may send on c (MANY if several).
        // Over-approximated from the routes alone (a channel counts as carrying traffic to every
        // host its sender routes over it), which can only turn a hop off, never on wrongly.
        let mut feeder = vec![NO_ROUTE; self.channels.len()];
        for (fi, f) in self.channels.iter().enumerate() {
            if self.nodes[f.to as usize].kind != NodeKind::Router {
                continue;
            }
            for &dst in &hosts {
                if self.route(f.from, dst) != Some(fi as u32) {
                    continue;
                }
                if let Some(c) = self.route(f.to, dst) {
                    let slot = &mut feeder[c as usize];
                    *slot = if *slot == NO_ROUTE || *slot == fi as u32 { fi as u32 } else { MANY };
                }
            }
        }
        for (c, &f) in feeder.iter().enumerate() {
            if f >= MANY {
                continue;
            }
            let (ch, fc) = (&self.channels[c], &self.channels[f as usize]);
            let unwatched_out =
                ch.tap_tx.is_none() && ch.reorder.is_none() && ch.ran_latency.is_none() && ch.delay_spikes.is_none() && ch.jitter.is_none();
            let unwatched_in =
                fc.tap_rx.is_none() && fc.reorder.is_none() && fc.ran_latency.is_none() && fc.delay_spikes.is_none() && fc.jitter.is_none();
            if unwatched_out && unwatched_in {
                self.channels[c].cut_through_from = f;
            }
        }
        self.cut_through_end = Some(end);
    }

    /// Back to one arrival event per hop.
    pub fn disable_cut_through(&mut self) {
        self.cut_through_end = None;
        for ch in &mut self.channels {
            ch.cut_through_from = NO_ROUTE;
        }
    }

    /// Channels that forward straight on (cut-through), for tests and reports.
    pub fn cut_through_channels(&self) -> Vec<u32> {
        (0..self.channels.len() as u32).filter(|&c| self.channels[c as usize].cut_through_from != NO_ROUTE).collect()
    }

    /// Offer the pooled packet `idx` to channel `c`; through cut-through hops, on to the channel
    /// after it as well (module doc).
    pub fn offer(&mut self, now: Time, c: u32, idx: u32, pool: &mut PacketPool, q: &mut EventQueue) {
        let Some(mut arrival) = self.admit_on(now, c, idx, pool) else {
            return;
        };
        let mut chan = c;
        let mut hop = None;
        if let Some(end) = self.cut_through_end {
            while arrival <= end {
                let (node, dst) = (self.channels[chan as usize].to, pool.route_info(idx).dst_node);
                let Some(next) = self.route(node, dst) else {
                    break;
                };
                if self.channels[next as usize].cut_through_from != chan {
                    break;
                }
                hop = Some(arrival);
                chan = next;
                match self.admit_on(arrival, next, idx, pool) {
                    Some(a) => arrival = a,
                    None => return,
                }
            }
        }
        let ev = Event::Arrive { chan, pkt: idx };
        match hop {
            Some(h) => q.push_after_hop(arrival, h, ev),
            None => q.push(arrival, ev),
        }
    }

    /// Offer the pooled packet `idx` to channel `c` at `at`: the queue, the tap, the loss draw.
    /// Returns its arrival time at the far end, or `None` if it was dropped (and freed).
    #[inline]
    fn admit_on(&mut self, at: Time, c: u32, idx: u32, pool: &mut PacketPool) -> Option<Time> {
        let ch = &mut self.channels[c as usize];
        let bytes = pool.route_info(idx).ip_len;
        let Some((start, arrival)) = ch.admit(at, bytes) else {
            let p = pool.take(idx);
            if let Some(d) = self.drop_log.as_mut() {
                d.push((at, p, DropCause::QueueFull));
            }
            return None;
        };
        if let Some(t) = ch.tap_tx {
            self.taps[t as usize].record(at, start, pool.get(idx));
        }
        let ch = &mut self.channels[c as usize];
        // only keyed loss reads the segment: the others skip building it per packet. The time
        // model reads the clock when the packet enters the wire (`start`, after its queue wait),
        // not when it reached the queue: a fade takes the packets on the air during it, and a
        // burst queued at once goes out one serialization time apart.
        let lost = if ch.loss.is_keyed() {
            ch.loss.lose_segment(Some(&crate::keyed_loss::TcpSegment::from(pool.get(idx))))
        } else {
            ch.loss.lose_segment_at(start.as_nanos(), None)
        };
        if lost {
            ch.stats.loss_drops += 1;
            let p = pool.take(idx);
            if let Some(d) = self.drop_log.as_mut() {
                d.push((at, p, DropCause::RandomLoss));
            }
            return None;
        }
        let late = ch.reorder.as_mut().map(|r| r.extra_delay()).unwrap_or_default();
        Some(arrival + late)
    }

    /// Packet `idx` arrived over channel `c`. Routers forward it; for a host, returns the packet
    /// (removed from the pool) to deliver.
    pub fn arrive(&mut self, now: Time, c: u32, idx: u32, pool: &mut PacketPool, q: &mut EventQueue) -> Option<(NodeId, Packet)> {
        let ch = &self.channels[c as usize];
        let node = ch.to;
        if let Some(t) = ch.tap_rx {
            self.taps[t as usize].record(now, now, pool.get(idx));
        }
        let dst = pool.route_info(idx).dst_node;
        if dst == node {
            return Some((node, pool.take(idx)));
        }
        if self.nodes[node as usize].kind == NodeKind::Router {
            if let Some(next) = self.route(node, dst) {
                self.offer(now, next, idx, pool, q);
                return None;
            }
        }
        self.unroutable += 1;
        pool.take(idx);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;
    use crate::loss::LossSpec;
    use crate::packet::tests_support::packet;

    /// h0 — r1 — h2, plus a longer detour h0 — r3 — r4 — h2, plus a parallel r1' path of equal length.
    fn net(limit: QueueLimit, rate_mbps: u64) -> Network {
        let names =
            [("h0", NodeKind::Host), ("r1", NodeKind::Router), ("h2", NodeKind::Host), ("r3", NodeKind::Router), ("r4", NodeKind::Router)];
        let mut nodes: Vec<Node> = names
            .iter()
            .enumerate()
            .map(|(i, (n, k))| Node { name: n.to_string(), kind: *k, ip: Network::ip_of(i as u32), out: vec![] })
            .collect();
        let pairs = [(0u32, 1u32), (1, 2), (0, 3), (3, 4), (4, 2)];
        let mut links = vec![];
        let mut chans = vec![];
        for (li, (a, b)) in pairs.iter().enumerate() {
            for (f, t) in [(*a, *b), (*b, *a)] {
                let ci = chans.len() as u32;
                chans.push(Channel::new(
                    li as u32,
                    f,
                    t,
                    Bandwidth::from_mbps(rate_mbps),
                    Duration::from_millis(1),
                    limit,
                    LossModel::new(LossSpec::None, sub_rng(0, ci as u64)),
                ));
                nodes[f as usize].out.push(ci);
            }
            links.push(Link { name: format!("l{li}"), a: *a, b: *b, ab: 2 * li as u32, ba: 2 * li as u32 + 1 });
        }
        Network::new(nodes, links, chans)
    }

    #[test]
    fn routes_take_the_fewest_hops() {
        let n = net(QueueLimit::Packets(10), 100);
        assert_eq!(n.hops(0, 2), Some(2));
        assert_eq!(n.hops(2, 0), Some(2));
        assert_eq!(n.route(0, 2), Some(0)); // via r1, not the 3-hop detour
        assert_eq!(n.route(1, 0), Some(1));
        assert_eq!(n.route(0, 1), None); // routers are not destinations
    }

    #[test]
    fn a_packet_crosses_two_hops_with_serialisation_and_delay() {
        let mut n = net(QueueLimit::Packets(10), 100);
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q); // 1500 B = 120 us at 100 Mbit/s
        let mut delivered = None;
        while let Some((t, ev)) = q.pop_until(Time::MAX) {
            if let Event::Arrive { chan: c, pkt } = ev {
                if let Some((node, p)) = n.arrive(t, c, pkt, &mut pool, &mut q) {
                    delivered = Some((t, node, p.payload_len));
                }
            }
        }
        assert_eq!(delivered, Some((Time(2 * (120_000 + 1_000_000)), 2, 1460)));
        assert_eq!(pool.live(), 0);
    }

    #[test]
    fn drop_tail_drops_beyond_the_packet_limit() {
        let mut n = net(QueueLimit::Packets(3), 100);
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for _ in 0..6 {
            n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q);
        }
        // 1 on the wire + 3 waiting; 2 dropped.
        let s = n.channels[0].stats;
        assert_eq!((s.tx_packets, s.queue_drops, s.max_queue_packets), (4, 2, 3));
        // Waiting times 0,120,240,360 us -> integral 720 us.
        assert_eq!(s.wait_ns, 720_000);
    }

    #[test]
    fn loss_in_time_is_drawn_when_each_packet_enters_the_wire_not_when_it_was_queued() {
        // 40 packets queued at t = 0 on a 1 Mbit/s link leave 12 ms apart; the channel in time
        // switches every ~2 ms on average, so the packets' fates must be those of the same
        // channel read at 0, 12, 24, ... ms. Read at the queueing instant (t = 0 for all) they
        // would all share one state: all lost or none.
        let spec = LossSpec::GilbertElliottTime { p: 0.5, mean_bad_ns: 2_000_000, loss_good: 0.0, loss_bad: 1.0 };
        let mut n = net(QueueLimit::Packets(100), 1);
        n.channels[0].loss = LossModel::new(spec, sub_rng(7, 0));
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for _ in 0..40 {
            n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q);
        }
        let mut replay = LossModel::new(spec, sub_rng(7, 0));
        let expected = (0..40u64).filter(|k| replay.lose_segment_at(k * 12_000_000, None)).count() as u64;
        assert!(expected > 0 && expected < 40, "the replay should mix fates: {expected}");
        assert_eq!(n.channels[0].stats.loss_drops, expected);
    }

    #[test]
    fn byte_limited_queue_counts_bytes() {
        let mut n = net(QueueLimit::Bytes(3000), 100);
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for _ in 0..5 {
            n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q);
        }
        let s = n.channels[0].stats;
        assert_eq!((s.tx_packets, s.queue_drops), (3, 2)); // 1 on wire + 2×1500 B
    }

    #[test]
    fn a_channel_that_went_idle_admits_a_new_burst_as_an_empty_queue() {
        // 1 on the wire + 2 × 1500 B waiting fill the 3000-byte queue; by 1 ms all three are gone
        // (busy until 360 us), so the next burst must find the queue and its byte count empty.
        let mut n = net(QueueLimit::Bytes(3000), 100);
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for _ in 0..3 {
            n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q);
        }
        for _ in 0..4 {
            n.send(Time(1_000_000), packet(0, 2, 1460), &mut pool, &mut q);
        }
        let s = n.channels[0].stats;
        assert_eq!((s.tx_packets, s.queue_drops), (6, 1));
        assert_eq!(n.channels[0].queue_at(Time(1_000_000)), (2, 3000));
        assert_eq!(n.channels[0].queue_at(Time(1_360_000)), (0, 0));
    }

    /// Delivery times and sequence numbers at h2 of a burst of `n` 1500-byte packets (seq 0…n−1)
    /// sent at once from h0.
    fn burst_deliveries(n_pkts: u32, jitter: Option<crate::delay_jitter::DelayJitterSpec>) -> Vec<(Time, u32)> {
        let mut n = net(QueueLimit::Packets(100), 100);
        n.channels[0].jitter = jitter.map(|j| crate::delay_jitter::DelayJitter::new(j, sub_rng(1, j.stream(0))));
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for seq in 0..n_pkts {
            n.send(Time::ZERO, Packet { seq, ..packet(0, 2, 1460) }, &mut pool, &mut q);
        }
        let mut out = vec![];
        while let Some((t, ev)) = q.pop_until(Time::MAX) {
            if let Event::Arrive { chan: c, pkt } = ev {
                if let Some((_, p)) = n.arrive(t, c, pkt, &mut pool, &mut q) {
                    out.push((t, p.seq));
                }
            }
        }
        out
    }

    #[test]
    fn jitter_delays_packets_in_order_and_without_it_the_link_is_exact() {
        let exact = burst_deliveries(50, None);
        // Off: serialisation and delay only, packet k's last bit out of the second hop at (k + 2)·120 µs.
        let want: Vec<(Time, u32)> = (0..50u32).map(|k| (Time((k as u64 + 2) * 120_000 + 2_000_000), k)).collect();
        assert_eq!(exact, want);
        // A 200-µs mean on the first hop, packets 120 µs apart: draws would reorder them often.
        let spec = crate::delay_jitter::DelayJitterSpec { mean: Duration::from_micros(200), seed: 0 };
        let jittered = burst_deliveries(50, Some(spec));
        let seqs: Vec<u32> = jittered.iter().map(|&(_, s)| s).collect();
        assert_eq!(seqs, (0..50).collect::<Vec<u32>>(), "jitter reordered the burst");
        assert!(jittered.iter().zip(&exact).all(|(j, e)| j.0 >= e.0), "a jittered packet arrived before its exact time");
        let extra_us = jittered.iter().zip(&exact).map(|(j, e)| (j.0 .0 - e.0 .0) as f64 / 1e3).sum::<f64>() / 50.0;
        assert!(extra_us > 50.0, "mean extra delay {extra_us:.1} µs with a 200-µs mean jitter");
    }

    #[test]
    fn queue_drains_at_line_rate() {
        let mut n = net(QueueLimit::Packets(100), 100);
        let mut pool = PacketPool::default();
        let mut q = EventQueue::new();
        for _ in 0..5 {
            n.send(Time::ZERO, packet(0, 2, 1460), &mut pool, &mut q);
        }
        assert_eq!(n.channels[0].queue_at(Time(0)), (4, 6000));
        assert_eq!(n.channels[0].queue_at(Time(130_000)), (3, 4500));
        assert_eq!(n.channels[0].queue_at(Time(600_000)), (0, 0));
    }
}
