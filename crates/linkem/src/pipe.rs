//! One direction of an emulated link: bottleneck queue → random loss → propagation delay.
//!
//! The order is the simulator's (crates/sim/src/network.rs): a packet is admitted to the drop-tail
//! queue or tail-dropped; an admitted packet draws its loss (Bernoulli or Gilbert–Elliott, the
//! simulator's `LossModel` and random stream `LOSS_BASE + channel`) at admission, uses its share of
//! the rate like any other ("loss on the wire"), and a lost one simply never reaches the delay
//! stage; the rest arrive `delay ± jitter` after their last bit left. With the same seed and the
//! same packet sequence a direction drops exactly the packets the simulator's channel would.
//! The keyed model (`loss=keyed`, crates/sim/src/keyed_loss.rs) reads each packet's IPv4/TCP
//! header instead and drops the same *segments* as the simulator whatever the packet order.
//!
//! Parameters ([`DirectionConfig`]): rate (or a Mahimahi trace, or none), queue limit in packets
//! or bytes, delay, jitter (uniform ±, no reordering; delay.rs), loss model, per-address delays.

use std::sync::Arc;
use std::time::Duration;

use tcpvideo_model::Time;
use tcpvideo_sim::engine::{streams, sub_rng};
use tcpvideo_sim::keyed_loss::TcpSegment;
use tcpvideo_sim::loss::{LossModel, LossSpec};
use tcpvideo_sim::network::QueueLimit;

use crate::bottleneck::{Bottleneck, Service};
use crate::counters::DirCounters;
use crate::delay::{AddressDelays, DelayStage};

/// Random stream of the jitter draws, apart from the loss streams (`LOSS_BASE + channel`).
const JITTER_STREAM_BASE: u64 = 2000;

/// Settings of one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionConfig {
    pub service: Service,
    pub limit: QueueLimit,
    pub delay: Duration,
    pub jitter: Duration,
    pub loss: LossSpec,
    pub address_delays: AddressDelays,
}

impl Default for DirectionConfig {
    /// A plain wire: no rate limit, no delay, no loss; Linux's txqueuelen of 1000 packets.
    fn default() -> Self {
        DirectionConfig {
            service: Service::Unlimited,
            limit: QueueLimit::Packets(1000),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: LossSpec::None,
            address_delays: AddressDelays::default(),
        }
    }
}

/// What happened to an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Queued,
    /// Tail drop: the queue was full; the caller gets its buffer back at once.
    QueueFull,
}

/// One direction's state.
pub struct Pipe<H> {
    bottleneck: Bottleneck<(H, u16, bool)>,
    loss: LossModel,
    delay: DelayStage<H>,
    pub counters: Arc<DirCounters>,
}

impl<H: Copy> Pipe<H> {
    /// `channel` numbers the direction for the random streams (the simulator's channel index:
    /// 2·link for a→b, 2·link+1 for b→a); `origin` is time zero of a trace.
    pub fn new(cfg: &DirectionConfig, seed: u64, channel: u64, origin: Time) -> Self {
        Pipe {
            bottleneck: Bottleneck::new(cfg.service.clone(), cfg.limit, origin),
            loss: LossModel::new(cfg.loss, sub_rng(seed, streams::LOSS_BASE + channel)),
            delay: DelayStage::new(cfg.delay, cfg.jitter, &cfg.address_delays, sub_rng(seed, JITTER_STREAM_BASE + channel)),
            counters: Arc::new(DirCounters::default()),
        }
    }

    /// The lane (per-address delay) of a packet, from its bytes.
    pub fn lane_for(&self, pkt: &[u8]) -> u16 {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 {
            self.counters.non_ipv4.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.delay.lane_for(pkt)
    }

    /// A packet arrives at `now`. Lost packets are returned through `drop` once they have used
    /// the link; a tail-dropped one is reported by the return value (buffer still the caller's).
    /// `segment` is the packet's IPv4/TCP header (`TcpSegment::parse_ipv4`; None for anything
    /// else), which the keyed loss model reads.
    pub fn offer(&mut self, now: Time, handle: H, len: u32, lane: u16, segment: Option<&TcpSegment>, drop: impl FnMut(H)) -> Admission {
        self.advance(now, drop);
        let c = &self.counters;
        c.packets_in.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        c.bytes_in.fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
        if !self.bottleneck.offer(now, (handle, lane, false), len) {
            self.counters.publish_queue(&self.bottleneck.stats);
            return Admission::QueueFull;
        }
        // the loss draw happens at admission, in admission order, as in the simulator; the packet
        // still occupies the queue and the link
        if self.loss.lose_segment(segment) {
            if let Some(h) = self.bottleneck.last_admitted_mut() {
                h.2 = true;
            }
        }
        self.counters.publish_queue(&self.bottleneck.stats);
        Admission::Queued
    }

    /// Move packets whose transmission has started by `now` into the delay stage (lost ones to
    /// `drop`).
    pub fn advance(&mut self, now: Time, mut drop: impl FnMut(H)) {
        let delay = &mut self.delay;
        let counters = &self.counters;
        self.bottleneck.serve(now, |(h, lane, lost), len, left| {
            counters.tx_bytes.fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
            if lost {
                counters.loss_drops.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                drop(h);
            } else {
                delay.push(left, lane, h, len);
            }
        });
        self.counters.held_max.fetch_max(self.delay.held(), std::sync::atomic::Ordering::Relaxed);
        self.counters.publish_queue(&self.bottleneck.stats);
    }

    /// The next packet due at the far end by `now`: (handle, len, due). Call `advance` first.
    pub fn pop_due(&mut self, now: Time) -> Option<(H, u32, Time)> {
        self.delay.pop_due(now)
    }

    /// When something next happens in this direction (a transmission starts or a packet is due).
    pub fn next_wakeup(&self) -> Option<Time> {
        match (self.bottleneck.next_departure(), self.delay.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Packets and bytes waiting in the bottleneck queue.
    pub fn backlog(&self) -> (u64, u64) {
        self.bottleneck.backlog()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcpvideo_model::Bandwidth;

    /// Offer `n` packets of `len` bytes every `gap`, run to the end; (delivered (handle, due), lost).
    fn run(cfg: &DirectionConfig, seed: u64, n: u32, len: u32, gap: Duration) -> (Vec<(u32, Time)>, Vec<u32>) {
        let mut p: Pipe<u32> = Pipe::new(cfg, seed, 0, Time::ZERO);
        let mut lost = vec![];
        let mut out = vec![];
        for i in 0..n {
            let now = Time::ZERO + gap * i;
            if p.offer(now, i, len, 0, None, |h| lost.push(h)) == Admission::QueueFull {
                lost.push(i);
            }
            while let Some((h, _, due)) = p.pop_due(now) {
                out.push((h, due));
            }
        }
        p.advance(Time::MAX, |h| lost.push(h));
        while let Some((h, _, due)) = p.pop_due(Time::MAX) {
            out.push((h, due));
        }
        (out, lost)
    }

    #[test]
    fn delivery_time_is_serialisation_plus_delay() {
        let cfg =
            DirectionConfig { service: Service::Rate(Bandwidth::from_mbps(12)), delay: Duration::from_millis(10), ..Default::default() };
        let (out, lost) = run(&cfg, 1, 3, 1500, Duration::ZERO);
        assert!(lost.is_empty());
        assert_eq!(out, vec![(0, Time::from_millis(11)), (1, Time::from_millis(12)), (2, Time::from_millis(13))]);
    }

    #[test]
    fn bernoulli_loss_drops_the_configured_fraction() {
        let cfg = DirectionConfig { loss: LossSpec::Bernoulli { p: 0.05 }, ..Default::default() };
        let (out, lost) = run(&cfg, 9, 100_000, 100, Duration::from_micros(10));
        let rate = lost.len() as f64 / 100_000.0;
        assert!((rate - 0.05).abs() < 0.003, "loss rate {rate}");
        assert_eq!(out.len() + lost.len(), 100_000);
    }

    #[test]
    fn gilbert_elliott_loss_is_bursty_with_the_stationary_rate() {
        // stationary Bad share p/(p+r) = 0.01/0.11; all Bad packets lost: rate ≈ 0.0909, mean
        // burst 1/r = 10 packets
        let cfg =
            DirectionConfig { loss: LossSpec::GilbertElliott { p: 0.01, r: 0.1, loss_good: 0.0, loss_bad: 1.0 }, ..Default::default() };
        let (_, mut lost) = run(&cfg, 5, 200_000, 100, Duration::from_micros(10));
        lost.sort();
        let rate = lost.len() as f64 / 200_000.0;
        let bursts = 1 + lost.windows(2).filter(|w| w[1] != w[0] + 1).count();
        let mean_burst = lost.len() as f64 / bursts as f64;
        assert!((rate - 0.0909).abs() < 0.01, "loss rate {rate}");
        assert!((mean_burst - 10.0).abs() < 1.5, "mean burst {mean_burst}");
    }

    #[test]
    fn loss_draws_are_the_simulators_for_the_same_seed_and_channel() {
        let spec = LossSpec::Bernoulli { p: 0.2 };
        let cfg = DirectionConfig { loss: spec, ..Default::default() };
        let mut p: Pipe<u32> = Pipe::new(&cfg, 42, 3, Time::ZERO);
        let mut sim = LossModel::new(spec, sub_rng(42, streams::LOSS_BASE + 3));
        let mut lost = vec![];
        for i in 0..500u32 {
            p.offer(Time::from_micros(i as u64), i, 100, 0, None, |h| lost.push(h));
        }
        p.advance(Time::MAX, |h| lost.push(h));
        let expected: Vec<u32> = (0..500).filter(|_| sim.lose()).collect();
        assert_eq!(lost, expected);
    }

    /// A raw IPv4/TCP packet from 10.0.0.1:80 to 10.0.1.2:40000 with `payload` bytes.
    fn tcp_packet(seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; 40 + payload];
        p[0] = 0x45;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 1, 2]);
        p[20..22].copy_from_slice(&80u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p
    }

    #[test]
    fn keyed_loss_drops_the_segments_the_simulators_keyed_model_drops_whatever_comes_between() {
        use tcpvideo_sim::packet::flags::{ACK, SYN};
        const MSS: u32 = 1448;
        let spec = LossSpec::Keyed { p: 0.1 };
        let cfg = DirectionConfig { loss: spec, ..Default::default() };
        // linkem: raw packets, ISN 5000, a pure ACK and a UDP packet before every data segment
        let mut pipe: Pipe<u32> = Pipe::new(&cfg, 42, 3, Time::ZERO);
        let mut offer = |h: u32, pkt: &[u8], lost: &mut Vec<u32>| {
            let seg = TcpSegment::parse_ipv4(pkt);
            pipe.offer(Time::from_micros(h as u64), h, pkt.len() as u32, 0, seg.as_ref(), |x| lost.push(x));
        };
        let mut lost = vec![];
        offer(1_000_000, &tcp_packet(5000, SYN | ACK, 0), &mut lost);
        for i in 0..1000u32 {
            offer(2_000_000 + i, &tcp_packet(5001 + i, ACK, 0), &mut lost);
            let mut udp = tcp_packet(0, 0, 8);
            udp[9] = 17;
            offer(3_000_000 + i, &udp, &mut lost);
            offer(i, &tcp_packet(5001 + i * MSS, ACK, MSS as usize), &mut lost);
        }
        pipe.advance(Time::MAX, |h| lost.push(h));
        // the simulator's model on the bare segments, another ISN
        let mut sim = LossModel::new(spec, sub_rng(42, streams::LOSS_BASE + 3));
        let seg = |seq, flags, len| TcpSegment {
            src_ip: 0x0a00_0001,
            dst_ip: 0x0a00_0102,
            src_port: 80,
            dst_port: 40000,
            seq,
            flags,
            payload_len: len,
        };
        assert!(!sim.lose_segment(Some(&seg(77, SYN | ACK, 0))));
        let expected: Vec<u32> = (0..1000).filter(|i| sim.lose_segment(Some(&seg(78 + i * MSS, ACK, MSS)))).collect();
        assert!(expected.len() > 60 && expected.len() < 140, "{} of 1000", expected.len());
        assert_eq!(lost, expected);
    }

    #[test]
    fn a_lost_packet_still_uses_the_link() {
        let cfg = DirectionConfig {
            service: Service::Rate(Bandwidth::from_mbps(12)),
            loss: LossSpec::Bernoulli { p: 1.0 },
            ..Default::default()
        };
        let mut p: Pipe<u32> = Pipe::new(&cfg, 1, 0, Time::ZERO);
        p.offer(Time::ZERO, 0, 1500, 0, None, |_| {});
        p.offer(Time::ZERO, 1, 1500, 0, None, |_| {});
        assert_eq!(p.next_wakeup(), Some(Time::from_millis(1)), "the second waits behind the lost first");
        p.advance(Time::MAX, |_| {});
        assert_eq!(p.counters.snapshot().loss_drops, 2);
        assert_eq!(p.counters.snapshot().tx_bytes, 3000);
    }

    #[test]
    fn tail_drops_and_losses_are_counted_apart() {
        let cfg = DirectionConfig {
            service: Service::Rate(Bandwidth::from_mbps(12)),
            limit: QueueLimit::Packets(5),
            loss: LossSpec::Bernoulli { p: 0.5 },
            ..Default::default()
        };
        let (out, lost) = run(&cfg, 3, 100, 1500, Duration::ZERO);
        // 1 on the wire + 5 waiting admitted, 94 tail-dropped; of the 6 admitted about half lost
        assert_eq!(out.len() + lost.len(), 100);
        assert!(lost.len() >= 94);
    }
}
