//! GSO/TSO packets, as Linux 6.18 builds them in `tcp_write_xmit` (net/ipv4/tcp_output.c): new
//! data leaves as GSO super-packets of several segments sent back to back, each sized by
//! `tcp_tso_autosize` (about 1 ms of data at the socket's pacing rate, at least
//! `tcp_min_tso_segs`), cut by `tcp_mss_split_point` to the congestion and receive windows, and
//! held back by `tcp_tso_should_defer` when only a sliver of the window is free and an ACK is
//! due within a millisecond (the sender waits for that ACK to send a bigger chunk). TCP always
//! builds such packets — `sk_setup_caps` gives every route software GSO — so this applies to
//! TUN/veth links (linkem) as much as to a NIC with TSO. The software segmentation
//! (`tcp_gso_segment`) keeps PSH only on a super-packet's last segment. Measured (kernel 6.18,
//! client-side pcap of tv_ccp, seed 1, and a tracepoint on `net_dev_queue` at the server): every
//! packet of two or more segments ends with PSH, a one-segment packet carries none.
//!
//! What this module decides, once per GSO packet (the send loop in `output.rs` then sends its
//! segments one by one, at the same instant, with one pacing check for the packet as Linux's
//! `tcp_pacing_check`): how many segments it carries, or that it is deferred. `output.rs` marks
//! PSH on its last segment when it has two or more.
//!
//! Parameters (Linux 6.18 defaults, as on the measuring host, `sysctl net.ipv4`):
//! `tcp_tso_win_divisor` 3, `tcp_min_tso_segs` 2, `tcp_tso_rtt_log` 9, `sk_pacing_shift` 10
//! (1/1024 s of data), `sk_gso_max_size` 65 343 bytes (read from the sockets of linkem's links
//! with a tracepoint, kernel 6.18; GSO_LEGACY_MAX_SIZE minus the header reserve).
//!
//! The socket's pacing rate (`sk_pacing_rate`) that sizes the packets: a CC that paces (BBR) sets
//! it; a CC with `cong_control` that does not ([`CongestionControl::owns_recovery`], the CCP
//! family's kernel ports) leaves it unset (~0: packets of `sk_gso_max_size`, measured: the
//! tv_ccp socket's `sk_pacing_rate` stays 2^64 − 1); any other CC gets `tcp_update_pacing_rate`'s
//! (mss·max(cwnd, packets_out)/srtt × 200 % in slow start, × 120 % after) on every ACK.
//!
//! Deviations: the write queue's skbs are not modelled — the packet at the head is taken as
//! min(unsent data, max_segs) segments long (Linux builds skbs of the size goal at write time and
//! `tcp_grow_skb` merges them up to the free window; the same unless the rate changed between
//! write and send); retransmissions go one segment at a time and carry PSH only at the end of the
//! application's data (Linux retransmits whole skbs, keeping PSH on their last segment); the tail
//! loss probe sends one segment (Linux a GSO packet); `tcp_min_tso_segs` is 2 for every CC
//! (Linux BBR's `min_tso_segs` callback gives 1 below 1.2 Mbit/s); PSH marks the end of every
//! packet of two or more segments — what the kernel showed here — while Linux sets it at push
//! points (the end of a write, `forced_push`, a writer blocked on send-buffer memory) that a
//! send-buffer-limited writer makes fall at about every packet; the send buffer's autotuning
//! (`tcp_sndbuf_expand`) is not modelled. TSQ (`tcp_small_queue_check`) is not
//! modelled: over TUN/veth the skb is orphaned at once.
//!
//! [`CongestionControl::owns_recovery`]: tcpvideo_model::cc::CongestionControl::owns_recovery

use tcpvideo_model::{Bandwidth, Time};

use super::endpoint::TcpEndpoint;
use super::recovery::CaState;

/// `sk_gso_max_size` of a TCP socket over linkem's links (bytes), measured on kernel 6.18.
pub(super) const GSO_MAX_BYTES: u64 = 65_343;
/// `sk_pacing_shift`: a GSO packet holds 2^-10 s (~1 ms) of data at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `tcp_tso_rtt_log`: at min RTTs under 2^9 µs doublings the size goal gets a bonus of
/// GSO_MAX_BYTES >> (min_rtt_us >> 9).
const TSO_RTT_LOG: u32 = 9;
/// `tcp_min_tso_segs`: segments per GSO packet at the least.
const MIN_TSO_SEGS: u64 = 2;
/// `tcp_tso_win_divisor`: send at once when a third of the window is free.
const TSO_WIN_DIVISOR: u64 = 3;
/// `tcp_tso_should_defer` defers only when the last transmission is at most this recent (ns).
const DEFER_RECENT_WRITE_NS: u64 = 1_000_000;
/// ... and the next ACK is due within min(this, srtt/2) (ns; Linux 6.18, commit "tcp: fix
/// tcp_tso_should_defer() vs large RTT").
const DEFER_ACK_SOON_NS: u64 = 1_000_000;

/// What the send loop does with the GSO packet at the head of the unsent data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GsoDecision {
    /// Send a packet of this many segments (≥ 1).
    Send(u64),
    /// `tcp_tso_should_defer` said wait; `cwnd_limited`: it waited for the congestion window
    /// (Linux sets `is_cwnd_limited`, which `tcp_cwnd_validate` reads).
    Defer { cwnd_limited: bool },
}

/// The skb at the head of the unsent data, as far as the deferral looks at it.
#[derive(Clone, Copy, Debug)]
struct HeadSkb {
    /// Bytes (Linux `skb->len`).
    len: u64,
    /// The last skb of the write queue (it may still grow).
    is_tail: bool,
    /// A FIN is queued behind the data: the tail carries it and gets no more data.
    fin: bool,
}

/// The windows the deferral compares, in segments (`cwnd`, `free` slots, > 0) and bytes
/// (`send_win`: what the peer's window allows past SND.NXT).
#[derive(Clone, Copy, Debug)]
struct Window {
    cwnd: u64,
    free: u64,
    send_win: u64,
}

impl TcpEndpoint {
    /// The socket's pacing rate as `tcp_tso_autosize` reads it, in bytes per second; `None` =
    /// unset (~0 in Linux). `own`: the CC's pacing rate; `cwnd`: in segments.
    fn autosize_rate_bytes_per_s(&self, own: Option<Bandwidth>, cwnd: u64) -> Option<u64> {
        let rate = match own {
            Some(r) => Some(r.bits_per_sec / 8),
            None if self.cc.owns_recovery() => None,
            // tcp_update_pacing_rate, in Linux's units: mss·max(cwnd, packets_out) × ratio % ×
            // 10^4 / srtt in µs; 200 % in slow start (cwnd < ssthresh / 2), else 120 %.
            None => self.rtt.srtt_ns().map(|ns| ns / 1000).filter(|&us| us > 0).map(|srtt_us| {
                let slow_start = (cwnd + 1).saturating_mul(2 * self.snd_mss) <= self.cc.ssthresh();
                let pct = if slow_start { 200 } else { 120 };
                let window = cwnd.max(self.sb.packets_out.pkts) * self.snd_mss;
                window.saturating_mul(pct * 10_000) / srtt_us
            }),
        };
        match (rate, self.max_pacing_rate) {
            (Some(r), Some(m)) => Some(r.min(m.bits_per_sec / 8)),
            (None, Some(m)) => Some(m.bits_per_sec / 8),
            (r, None) => r,
        }
    }

    /// Linux `tcp_tso_segs` / `tcp_tso_autosize`: segments per GSO packet. `own`: the CC's
    /// pacing rate; `cwnd`: in segments.
    fn tso_segs(&self, own: Option<Bandwidth>, cwnd: u64) -> u64 {
        let mss = self.snd_mss.max(1);
        let Some(rate) = self.autosize_rate_bytes_per_s(own, cwnd) else { return (GSO_MAX_BYTES / mss).max(MIN_TSO_SEGS) };
        let mut bytes = rate >> PACING_SHIFT;
        if let Some(min_rtt_ns) = self.rtt.min_rtt_ns() {
            let r = (min_rtt_ns / 1000) >> TSO_RTT_LOG;
            if r < 32 {
                bytes += GSO_MAX_BYTES >> r;
            }
        }
        (bytes.min(GSO_MAX_BYTES) / mss).max(MIN_TSO_SEGS)
    }

    /// Linux `tcp_write_xmit`'s steps for the next new-data packet, once the congestion window
    /// has room (`tcp_cwnd_test`) and pacing allows: the quota min(free cwnd, `tcp_tso_segs`),
    /// the deferral (`tcp_tso_should_defer`, for a packet of more than one segment) and the
    /// split (`tcp_mss_split_point`). `avail`: unsent bytes the application queued; `fin`: a FIN
    /// is queued behind them.
    pub(super) fn gso_decision(&self, now: Time, avail: u64, fin: bool) -> GsoDecision {
        let mss = self.snd_mss.max(1);
        let cwnd = self.cwnd_pkts();
        let own = self.cc.pacing_rate().filter(|r| r.bits_per_sec > 0);
        let max_segs = self.tso_segs(own, cwnd);
        let free = cwnd.saturating_sub(self.sb.in_flight_pkts()).max(1);
        let quota = free.min(max_segs);
        // The head skb: the size goal, or the rest of the data (then it is the queue's tail).
        let skb_len = avail.min(max_segs * mss);
        let is_tail = avail <= max_segs * mss;
        if skb_len <= mss {
            return GsoDecision::Send(1);
        }
        let send_win = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let head = HeadSkb { len: skb_len, is_tail, fin };
        let paced = own.is_some() || self.max_pacing_rate.is_some();
        if let Some(cwnd_limited) = self.tso_should_defer(now, head, Window { cwnd, free, send_win }, max_segs, paced) {
            return GsoDecision::Defer { cwnd_limited };
        }
        // tcp_mss_split_point with the quota as max_segs.
        let max_len = quota * mss;
        let limit = if max_len <= send_win && !is_tail {
            max_len
        } else {
            let needed = skb_len.min(send_win);
            if max_len <= needed {
                max_len
            } else {
                let partial = needed % mss;
                // tcp_nagle_check: a sub-MSS tail waits while a small segment is unacknowledged.
                let nagle = partial != 0 && self.cfg.nagle && self.sb.packets_out.pkts > 0 && self.snd_sml > self.snd_una;
                if nagle && needed > partial {
                    needed - partial
                } else {
                    needed
                }
            }
        };
        GsoDecision::Send(limit.div_ceil(mss).max(1))
    }

    /// Linux 6.18 `tcp_tso_should_defer`: `Some(cwnd_limited)` to wait for the next ACK, `None`
    /// to send now. `paced`: the socket paces (internal pacing moves `tcp_wstamp_ns` ahead).
    fn tso_should_defer(&self, now: Time, head: HeadSkb, win: Window, max_segs: u64, paced: bool) -> Option<bool> {
        let HeadSkb { len: skb_len, is_tail, fin } = head;
        let Window { cwnd, free, send_win } = win;
        if matches!(self.ca, CaState::Recovery | CaState::Loss) {
            return None;
        }
        let mss = self.snd_mss.max(1);
        let cong_win = free * mss;
        let limit = send_win.min(cong_win);
        // A full-sized packet can go, or a packet in the middle of the queue fits whole.
        if limit >= max_segs * mss || (!is_tail && limit >= skb_len) {
            return None;
        }
        // At least a third of the window is free.
        let chunk = self.snd_wnd.min(cwnd * mss) / TSO_WIN_DIVISOR;
        if limit >= chunk {
            return None;
        }
        // Only when data left within the last millisecond (tcp_wstamp_ns, in the future when
        // internal pacing spaces the packets).
        let mut wstamp = self.last_xmit_at;
        if paced {
            wstamp = wstamp.max(self.next_pace_at);
        }
        if now.as_nanos() > wstamp.as_nanos() + DEFER_RECENT_WRITE_NS {
            return None;
        }
        // Only when the next ACK (for the retransmission queue's head) is due within min(1 ms,
        // srtt / 2).
        if self.sb.is_empty() {
            return None;
        }
        let srtt = self.rtt.srtt_ns().unwrap_or(0);
        let expected_ack = self.sb.get(0).sent_at.as_nanos() + srtt;
        let threshold = (srtt / 2).min(DEFER_ACK_SOON_NS);
        if expected_ack > now.as_nanos() + threshold {
            return None;
        }
        if cong_win < send_win {
            if cong_win <= skb_len {
                return Some(true);
            }
        } else if send_win <= skb_len {
            return Some(false);
        }
        // This packet will get no more data.
        if is_tail && fin {
            return None;
        }
        Some(false)
    }
}
