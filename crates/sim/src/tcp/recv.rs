//! The receiving half of an endpoint: receive buffer, out-of-order queue, SACK blocks, the
//! advertised window and the delayed-ACK state (RFC 9293 §3.8.6, RFC 2018, RFC 2883, RFC 1122
//! §4.2.3.2, RFC 5681 §4.2; Linux tcp_input.c `tcp_data_queue`, `__tcp_ack_snd_check`, and
//! tcp_output.c `__tcp_select_window`).
//!
//! Payload bytes are not stored — only how many are buffered — so the buffer is two counters
//! (unread in-order bytes, bytes held out of order) plus a short sorted list of out-of-order
//! ranges (few, since losses are rare; insertion is O(ranges)).
//!
//! SACK blocks (RFC 2018 §4): the first block is the range containing the most recently received
//! segment, then earlier reported blocks in order of recency (Linux `tcp_sack_new_ofo_skb`). A
//! duplicate segment below RCV.NXT is reported once as a D-SACK block in front (RFC 2883).
//!
//! Window (Linux `__tcp_select_window` and `tcp_select_window`): the buffer's free space, limited
//! by `rcv_ssthresh`, which starts at 64 KB and grows by two segments per data segment received
//! but never past the space free once that segment is queued (tcp_grow_window's `room`), so it
//! ends one segment below the buffer when the application keeps up; zero when the buffer is more
//! than half full and less than max(MSS, buffer/16) is free (receiver SWS avoidance, RFC 9293
//! §3.8.6.2.2); rounded down to the window-scale granularity (to the MSS without scaling); never
//! shrinking: the right edge advertised earlier is kept. Deviations: the whole buffer is window
//! (Linux reserves a share for skb overhead, tcp_adv_win_scale / scaling_ratio, so its window
//! stays below the memory actually free), hence the scaled window is rounded down where Linux
//! rounds it up (ALIGN to 2^wscale) — rounding up could advertise bytes the buffer cannot hold.
//! With autotuning on (the Linux default, `TcpConfig::rcv_buf_autotune`), `cap` is the window
//! clamp that `rcvbuf.rs` grows once per receiver RTT from `tcp_rmem[1]`'s share (65536 bytes,
//! 81920 once the first full-sized segment has set the scaling ratio, `tcp_measure_rcv_mss`);
//! the autotuning check runs as in `tcp_recvmsg`, after the first skb a read copies (so data a
//! hole fill frees counts in the next RTT). With a fixed buffer (`SO_RCVBUF`, which locks
//! autotuning off in Linux) the same state never grows: `cap` is the buffer times the scaling
//! ratio (½ · size less one segment at first, 160/256 · size on a 1500-byte TUN path after the
//! first full segment), as Linux's window for a locked `sk_rcvbuf` ([`Receiver::for_config`]).
//!
//! Delayed ACK (Linux): immediate ACKs while in quick-ack mode, for out-of-order data, hole
//! fills, duplicates and FIN; else an ACK when more than one full segment is unacknowledged and
//! the window is not shrinking (`__tcp_ack_snd_check`), or, if it shrank because the data is still
//! unread, when the application reads it (`tcp_cleanup_rbuf`); otherwise after the delayed-ACK
//! timer. Quick-ack credits (`icsk_ack.quick`): `TcpConfig::quickack_segments` (16; Linux caps it
//! at rcv_wnd / 2·rcv_mss) at the first data and after the peer was silent longer than the RTO
//! (`tcp_incr_quickack`), as many after a duplicate (`tcp_enter_quickack_mode`),
//! and one each time `tcp_grow_window` raises `rcv_ssthresh` (`quick |= 1`) — so while the window
//! is still opening (with autotuning, each receiver RTT raises the clamp and so the room), every
//! data segment of at least 128 bytes is ACKed at once, which is why a Linux receiver ACKs almost
//! every segment of a bulk transfer's first seconds. Each ACK sent with data to acknowledge
//! (`ICSK_ACK_SCHED`) spends one credit, and spending the last deflates the ATO to its minimum
//! (`tcp_dec_quickack_mode`, Linux ≥ 6.7: one per ACK, not per segment); the credits are dropped
//! when the buffer is more than half full (`__tcp_select_window`, also when `__tcp_ack_snd_check`
//! evaluates the window with more than one segment pending). The timer follows Linux: the ATO
//! starts at `TcpConfig::delayed_ack` (TCP_ATO_MIN, 40 ms), adapts to the data inter-arrival time,
//! doubles each time the timer fires (ACK not piggybacked), and is capped at min(SRTT, 500 ms)
//! (200 ms in ping-pong mode). Ping-pong (interactive) mode starts when we send data less than
//! one ATO after receiving some, suspends quick-ack mode, and ends when the delayed-ACK timer
//! fires. Checked against Linux 6.18's receiver (client-side pcaps, `bench/acks_per_segment.py`):
//! both ACK 0.87–0.91 per segment while the window opens and 0.50 once it is open. A read that
//! empties the buffer after a pushed segment sends the ACK (`ICSK_ACK_PUSHED`: a short segment, or
//! a full-sized one with PSH, `tcp_measure_rcv_mss`; `tcp_cleanup_rbuf`), unless the connection is
//! interactive and only one segment was pushed. Deviation elsewhere: Linux's sender sets PSH about
//! once per GSO super-packet, ours only where it reaches the application's written data, so in a
//! bulk transfer this rule rarely fires here.
//!
//! SACK compression (Linux ≥ 4.20, `__tcp_ack_snd_check`'s out-of-order branch; Eric Dumazet's
//! "tcp: add SACK compression", 5.8's "tcp: tcp_sack_new_ofo_skb() should be more conservative"):
//! while out-of-order data is queued and none of the immediate conditions above holds, a SACK
//! receiver sends the first three ACKs at each RCV.NXT at once (`dup_ack_counter` <
//! TCP_FASTRETRANS_THRESH: enough for the sender's fast retransmit) and holds the rest: the
//! compressed-ACK hrtimer, min(`tcp_comp_sack_delay_ns` = 1 ms, RTT/20), sends one ACK for all
//! of them, as does any ACK sent meanwhile, the 44th held ACK (`tcp_comp_sack_nr`), or a segment
//! that extends a SACK block beyond the first two or opens a block when two exist
//! (`tcp_sack_compress_send_ack`: a block must have gone out in first or second place before it
//! drops to third). In-order data that leaves a hole behind moves RCV.NXT, so its ACK and the
//! next two go at once. So during fast recovery on a 100 Mbit/s path (a segment every 120 µs) a
//! Linux receiver sends about one SACK per 9 out-of-order segments, not one per segment
//! (`bench/acks_per_segment.py`'s tally per 2 s of the CC suite's loss case, issue 15 session 17:
//! the emulated 6.18 client 0.25–0.49 ACKs per data segment from 2 to 20 s, 0.25–0.34 from 6 s;
//! the simulator 0.66–0.85 without compression, 0.27–0.47 with it). Deviations: the timer
//! fires at its hard expiry, delay + `tcp_comp_sack_slack_ns` (an hrtimer with slack fires
//! between the two; with nothing else due on the CPU at the later), and the flushing ACK already
//! carries the new segment's block (Linux sends it before adding the block).

use std::time::Duration;

use tcpvideo_model::Time;

use super::config::TcpConfig;
use super::rcvbuf::{rx_truesize, RcvBufAutotune, RcvBufLimits};

/// What a received segment did to the receive queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxOutcome {
    /// In-order bytes newly made readable.
    pub new_bytes: u64,
    /// The segment lies above RCV.NXT (queued out of order, or dropped if outside the window).
    pub out_of_order: bool,
    /// The segment (or part of it) was already received.
    pub duplicate: bool,
    /// The segment filled (part of) a hole and the out-of-order queue is now empty.
    pub filled_hole: bool,
    /// Part of the segment lay beyond the advertised window and was dropped.
    pub beyond_window: bool,
    /// The peer's FIN was consumed in order by this segment.
    pub fin: bool,
    /// The segment carried nothing new and sits below RCV.NXT (probe, old retransmission).
    pub old: bool,
    /// Queued out of order where Linux flushes held (compressed) ACKs before recording its
    /// SACK block (`tcp_sack_new_ofo_skb`: it extends a block beyond the first two, or opens a
    /// new one while two or more exist).
    pub sack_flush: bool,
}

const MAX_BLOCKS: usize = 4;

/// Linux TCP_SACK_BLOCKS_EXPECTED: SACK blocks an ACK is assumed to carry (3 fit beside
/// timestamps; 2 allow for a lost SACK).
const SACK_BLOCKS_EXPECTED: usize = 2;

/// Linux TCP_FASTRETRANS_THRESH: duplicate ACKs sent at once at each RCV.NXT before SACK
/// compression holds them.
const DUP_ACKS_BEFORE_COMPRESSION: u32 = 3;

/// Linux TCP_DELACK_MAX (HZ/5): the delayed-ACK cap in ping-pong mode or after a pushed segment,
/// and the default `icsk_delack_max`.
const TCP_DELACK_MAX: Duration = Duration::from_millis(200);

/// The ATO's tick, ns: a jiffy at `hz`, or 1 ns without a tick (`hz` = 0).
pub(super) fn tick_ns(hz: u32) -> u64 {
    if hz == 0 {
        1
    } else {
        1_000_000_000 / hz as u64
    }
}

#[derive(Clone, Debug)]
pub struct Receiver {
    /// Next expected offset of the peer's stream (offset 0 = the peer's SYN).
    pub rcv_nxt: u64,
    cap: u64,
    /// In-order bytes not yet read by the application.
    pub unread: u64,
    ooo: Vec<(u64, u64)>,
    ooo_bytes: u64,
    recent: [(u64, u64); MAX_BLOCKS],
    recent_len: usize,
    dsack: Option<(u64, u64)>,
    fin_at: Option<u64>,
    pub fin_received: bool,
    /// Right edge of the last advertised window.
    pub adv_right_edge: u64,
    /// RCV.NXT when the last ACK was sent (Linux `rcv_wup`).
    pub rcv_wup: u64,
    /// Window advertised in the last ACK (Linux `rcv_wnd`).
    pub last_adv_window: u64,
    /// Our window-scale shift.
    pub wscale: u8,
    /// Linux `rcv_ssthresh`: the window grows from about 64 KB by two segments per data segment
    /// received (tcp_grow_window), up to the space free with that segment queued.
    pub rcv_ssthresh: u64,
    /// Grow the window on out-of-order data too (only with SACK: Linux keeps the window still
    /// for non-SACK peers so their duplicate ACKs stay duplicates).
    pub grow_on_ooo: bool,
    /// Estimated peer MSS (Linux `icsk_ack.rcv_mss`).
    pub rcv_mss: u64,
    /// TCP header bytes of a data segment (20, or 32 with timestamps): with the payload and the
    /// IP header, the packet size whose `skb->truesize` sets the scaling ratio.
    pub tcp_hdr: u64,
    adv_mss: u64,
    // Delayed-ACK state.
    /// Linux `icsk_ack.quick`: ACKs left to send at once (quick-ack credits).
    pub quick: u32,
    /// Linux `ICSK_ACK_SCHED`: data or FIN arrived since the last ACK we sent.
    ack_scheduled: bool,
    /// Linux `ICSK_ACK_PUSHED` / `ICSK_ACK_PUSHED2` (0, 1, 2): pushed segments since the last ACK.
    pushed: u8,
    /// Linux `icsk_ack.last_seg_size`: the last short segment's length.
    last_seg_size: u64,
    pub delack_at: Option<Time>,
    /// When in-order data last arrived (Linux `icsk_ack.lrcvtime`, kept in jiffies there: see
    /// [`Receiver::jiffies`]).
    pub last_data_at: Option<Time>,
    /// An ACK must go out at the next opportunity (immediate-ACK conditions).
    pub ack_now: bool,
    /// Linux `icsk_ack.ato`: the delayed-ACK timeout, adapted to the data inter-arrival time, in
    /// ticks of [`Receiver::tick_ns`] (jiffies: Linux's integer arithmetic, e.g. ato = ato/2 + m
    /// with m the number of ticks between two arrivals).
    pub ato: u64,
    /// Length of the clock tick the ATO counts in, ns: a jiffy (4 ms at HZ = 250), or 1 ns for
    /// a configuration without a tick (`TcpConfig::hz` = 0, exact timers).
    pub tick_ns: u64,
    /// Linux ping-pong (interactive) mode: we send data shortly after receiving some, so ACKs
    /// ride on our data and quick-ack mode is off.
    pub pingpong: bool,
    /// Receive-buffer state: autotuning, or a fixed (SO_RCVBUF) buffer that never grows but
    /// measures its scaling ratio (None: a bare receiver of the unit tests, its buffer its window).
    pub autotune: Option<RcvBufAutotune>,
    /// Bytes the application has read in total (Linux `copied_seq`).
    read_total: u64,
    /// The application read since the last autotuning check (Linux runs the check in recvmsg).
    /// Linux runs `tcp_rcv_space_adjust` after each skb `tcp_recvmsg` copies; at one instant
    /// only the first can act (it restarts the measurement, so the others see less than one
    /// RTT elapsed). The state at that first skb since the last check: bytes read in total and
    /// in-order bytes still queued (None: nothing read).
    adjust_point: Option<(u64, u64)>,
    // SACK compression (module doc).
    /// Linux `tp->compressed_ack`: ACKs held back since the last ACK we sent.
    pub compressed_acks: u32,
    /// Linux `tp->dup_ack_counter`: ACKs sent at once at RCV.NXT = `compressed_ack_rcv_nxt`.
    dup_acks_sent: u32,
    /// Linux `tp->compressed_ack_rcv_nxt`.
    compressed_ack_rcv_nxt: u64,
    /// When the compressed-ACK timer (Linux `compressed_ack_timer`, an hrtimer) fires.
    pub comp_sack_at: Option<Time>,
}

impl Receiver {
    /// The receiver a configuration asks for: autotuned from `tcp_rmem[1]` up to
    /// `rcv_buf_bytes` (Linux default), or a fixed buffer of `rcv_buf_bytes`.
    ///
    /// A fixed buffer is Linux's `sk_rcvbuf` locked by SO_RCVBUF (the kernel doubles what the
    /// application asks; `tcpvideo emulate` asks half the size): it never grows
    /// (`tcp_rcv_space_adjust` returns early; here the buffer's limit is its size), but its
    /// window is still `tcp_win_from_space(sk_rcvbuf)` at the scaling ratio — ½ until the first
    /// full-sized segment, then payload/truesize (`tcp_measure_rcv_mss` → `tcp_set_window_clamp`)
    /// — and `tcp_init_buffer_space` starts the clamp one segment short of that ("Force
    /// reservation of one segment"), with `rcv_ssthresh` at the clamp. Traced on the emulated
    /// 6.18 client with a 200 000-byte buffer (issue 15, session 14, tcp:tcp_probe): sk_rcvbuf
    /// 200 000, window_clamp = rcv_ssthresh = 98 552 at the first data segment, 125 000
    /// (ratio 160) from the second.
    pub fn for_config(cfg: &TcpConfig, adv_mss: u64) -> Receiver {
        let mut r = if cfg.rcv_buf_autotune {
            let limits = RcvBufLimits { initial_bytes: cfg.rcv_buf_initial_bytes, max_bytes: cfg.rcv_buf_bytes };
            let tune = RcvBufAutotune::new(limits);
            let mut r = Receiver::new(tune.window_clamp(), adv_mss);
            r.autotune = Some(tune);
            r
        } else {
            let size = cfg.rcv_buf_bytes;
            let tune = RcvBufAutotune::new(RcvBufLimits { initial_bytes: size, max_bytes: size });
            let full = tune.window_clamp();
            let clamp = if full > 2 * adv_mss { (full - adv_mss).max(2 * adv_mss) } else { full };
            let mut r = Receiver::new(clamp, adv_mss);
            r.rcv_ssthresh = clamp;
            r.autotune = Some(tune);
            r
        };
        r.tick_ns = tick_ns(cfg.hz);
        r
    }

    /// The tick count at `t` (Linux `jiffies`; the tick clock is aligned with time 0, as in
    /// [`super::timers::timer_list_expiry`]).
    pub fn jiffies(&self, t: Time) -> u64 {
        t.as_nanos() / self.tick_ns
    }

    /// A duration in whole ticks, truncated (TCP_ATO_MIN = HZ/25 = 10 at HZ = 250; HZ/2;
    /// TCP_DELACK_MAX = HZ/5).
    pub(super) fn ticks(&self, d: Duration) -> u64 {
        d.as_nanos() as u64 / self.tick_ns
    }

    /// A duration in ticks rounded up, as Linux `usecs_to_jiffies` (the smoothed RTT in
    /// `tcp_send_delayed_ack`; `icsk_rto` from `__tcp_set_rto`).
    fn ticks_ceil(&self, ns: u64) -> u64 {
        ns.div_ceil(self.tick_ns)
    }

    /// The connection is established (Linux `tcp_init_buffer_space`).
    pub fn on_established(&mut self, now: Time) {
        let (ssthresh, wnd, mss) = (self.rcv_ssthresh, self.last_adv_window.max(self.cap.min(65_535)), self.adv_mss);
        if let Some(a) = &mut self.autotune {
            a.on_established(now, ssthresh, wnd, mss);
        }
    }

    /// Receiver RTT measurement on an in-order data segment of `len` bytes (Linux
    /// `tcp_rcv_rtt_measure_ts` with timestamps, else `tcp_rcv_rtt_measure`): `ts_echo` is
    /// (TSecr, its age in ms on our timestamp clock) when timestamps are in use.
    /// `new_bytes` is what the segment made readable (the receive queue held nothing before it
    /// if that is all that is unread).
    pub fn measure_rcv_rtt(&mut self, now: Time, ts_echo: Option<(u32, u32)>, len: u64, new_bytes: u64) {
        let (nxt, wnd, mss) = (self.rcv_nxt, self.last_adv_window, self.rcv_mss);
        let queue_empty = self.unread <= new_bytes;
        if let Some(a) = &mut self.autotune {
            match ts_echo {
                Some((ecr, age_ms)) => a.on_data_with_timestamp(ecr, age_ms, len, mss, queue_empty),
                None => a.on_data_without_timestamp(now, nxt, wnd),
            }
        }
    }

    /// Linux `tcp_rcv_space_adjust`, run once after the application read (the endpoint calls it
    /// when it flushes after the read), with the unread bytes and the out-of-order span above
    /// RCV.NXT; the window clamp follows a grown buffer.
    pub fn space_adjust(&mut self, now: Time) {
        let Some((total, inq)) = self.adjust_point.take() else {
            return;
        };
        let ooo_span = self.ooo.last().map_or(0, |r| r.1.saturating_sub(self.rcv_nxt));
        if let Some(clamp) = self.autotune.as_mut().and_then(|a| a.after_read(now, total, inq, ooo_span)) {
            self.cap = self.cap.max(clamp);
        }
    }

    /// Linux `tcp_measure_rcv_mss`'s scaling-ratio step for in-order data of `len` bytes that
    /// raises the MSS estimate (the caller checks `len ≥ rcv_mss` and `len ≠ rcv_mss` before
    /// updating it): the ratio of payload to the packet's truesize; when it changes, the clamp is
    /// reset through `tcp_set_window_clamp`: a smaller clamp lowers `rcv_ssthresh` to it, a
    /// larger one raises `rcv_ssthresh` to min(`rcv_wnd`, clamp) if that is more (tcp.c, "tcp:
    /// clamp window like before the cleanup", 6.15). Fixed (SO_RCVBUF) buffers too.
    fn measure_scaling_ratio(&mut self, len: u64) {
        let truesize = rx_truesize(len + self.tcp_hdr + 20);
        let Some(clamp) = self.autotune.as_mut().and_then(|a| a.measure_scaling_ratio(len, truesize)) else {
            return;
        };
        if clamp < self.cap {
            self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.last_adv_window.min(clamp));
        }
        self.cap = clamp;
    }

    /// The current window clamp (buffer in window bytes).
    pub fn window_clamp(&self) -> u64 {
        self.cap
    }
    pub fn new(cap: u64, adv_mss: u64) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            cap,
            unread: 0,
            ooo: Vec::with_capacity(8),
            ooo_bytes: 0,
            recent: [(0, 0); MAX_BLOCKS],
            recent_len: 0,
            dsack: None,
            fin_at: None,
            fin_received: false,
            adv_right_edge: 0,
            rcv_wup: 0,
            last_adv_window: 0,
            wscale: 0,
            rcv_ssthresh: cap.min(65_535),
            grow_on_ooo: true,
            rcv_mss: adv_mss.min(536),
            tcp_hdr: 32,
            adv_mss,
            quick: 0,
            ack_scheduled: false,
            pushed: 0,
            last_seg_size: 0,
            delack_at: None,
            last_data_at: None,
            ack_now: false,
            ato: 0,
            tick_ns: 1,
            pingpong: false,
            autotune: None,
            read_total: 0,
            adjust_point: None,
            compressed_acks: 0,
            dup_acks_sent: 0,
            compressed_ack_rcv_nxt: 0,
            comp_sack_at: None,
        }
    }

    /// Out-of-order data is held (a hole below it): ground truth of a "reordering" upload stall.
    pub fn holds_out_of_order(&self) -> bool {
        self.ooo_bytes > 0
    }

    /// Free buffer space.
    pub fn free(&self) -> u64 {
        self.cap.saturating_sub(self.unread + self.ooo_bytes)
    }

    /// The window we would advertise now, before the no-shrink rule (Linux `__tcp_select_window`).
    pub fn select_window(&self) -> u64 {
        let mut free = self.free();
        let mss = self.rcv_mss.max(1).min(self.cap);
        if free < self.cap / 2 {
            // More than half the buffer is used: receiver SWS avoidance (Linux: zero window
            // below max(MSS, buffer/16)).
            free = free >> self.wscale << self.wscale;
            if free < self.cap / 16 || free < mss {
                return 0;
            }
        }
        let max = 65_535u64 << self.wscale;
        let free = free.min(max).min(self.rcv_ssthresh.max(mss));
        if self.wscale > 0 {
            free >> self.wscale << self.wscale
        } else {
            let cur = self.adv_right_edge.saturating_sub(self.rcv_nxt);
            if cur + mss <= free || cur > free {
                free / mss * mss
            } else {
                cur
            }
        }
    }

    /// Window to put in an outgoing ACK (no shrinking), recording the new right edge. Returns the
    /// window in bytes (the caller shifts it).
    pub fn advertise(&mut self) -> u64 {
        if self.free() < self.cap / 2 {
            self.quick = 0; // Linux: no quick ACKs while the buffer is more than half full
        }
        let cur = self.adv_right_edge.saturating_sub(self.rcv_nxt);
        let mut w = self.select_window();
        if w < cur {
            // Never move the right edge left (RFC 9293 §3.8.6.2.2 SHOULD NOT shrink, Linux).
            let g = 1u64 << self.wscale;
            w = cur.div_ceil(g) * g;
        }
        self.adv_right_edge = self.rcv_nxt + w;
        self.rcv_wup = self.rcv_nxt;
        self.last_adv_window = w;
        w
    }

    /// Linux `tcp_cleanup_rbuf`: after the application read, is an ACK due now? Either a delayed
    /// ACK is scheduled and more than one full segment is unacknowledged — the input path held it
    /// back because the window would have shrunk with the data still unread ("tcp_recvmsg() will
    /// send ACK otherwise", `__tcp_ack_snd_check`) — or the window is worth announcing: it was
    /// at most half the buffer and the read at least doubles it — or the read emptied the buffer
    /// after a pushed segment ([`Receiver::note_in_order_segment`]) and the connection is not
    /// interactive (after two pushed segments, even if it is).
    pub fn window_update_due(&self) -> bool {
        if self.delack_at.is_some() && self.rcv_nxt - self.rcv_wup > self.rcv_mss {
            return true;
        }
        // The read emptied the buffer after a pushed segment (twice pushed: even when interactive).
        if self.ack_scheduled && self.unread == 0 && self.ooo_bytes == 0 && (self.pushed >= 2 || (self.pushed == 1 && !self.pingpong)) {
            return true;
        }
        let now = self.adv_right_edge.saturating_sub(self.rcv_nxt);
        if 2 * now > self.cap {
            return false;
        }
        let new = self.select_window();
        new != 0 && new >= 2 * now
    }

    /// Linux `__tcp_ack_snd_check` for in-order data outside quick-ack mode: more than one full
    /// segment unacknowledged and the window is not shrinking. When the window would shrink (the
    /// application has not read yet), the ACK waits for the read ([`Receiver::window_update_due`])
    /// or the delayed-ACK timer. Linux also ACKs here when fewer than SO_RCVLOWAT bytes are
    /// unread; not modelled: with the default of 1 byte that never holds right after new data.
    pub fn two_segments_pending(&self) -> bool {
        self.rcv_nxt - self.rcv_wup > self.rcv_mss && self.select_window() >= self.last_adv_window
    }

    /// Linux `__tcp_ack_snd_check` for in-order data: ACK now if more than one full segment is
    /// unacknowledged and the window is not shrinking ([`Receiver::two_segments_pending`]), or in
    /// quick-ack mode. In that order: with more than one segment pending, Linux evaluates the
    /// window first, and `__tcp_select_window` drops the quick-ack credits when the buffer is
    /// more than half full, so a credit does not force an ACK the window check held back.
    pub fn immediate_ack_due(&mut self) -> bool {
        if self.rcv_nxt - self.rcv_wup > self.rcv_mss {
            if self.free() < self.cap / 2 {
                self.quick = 0;
            }
            if self.select_window() >= self.last_adv_window {
                return true;
            }
        }
        self.in_quickack_mode()
    }

    /// Linux `tcp_measure_rcv_mss`'s push detection, for in-order data of `len` bytes (header
    /// `hdr` bytes, PSH flag `psh`): a full-sized segment with PSH ends an application write
    /// (commit 4720852ed9af, "tcp: fix delayed ACKs for MSS boundary condition"); a short one is
    /// pushed unless it is not PSH-marked and at least 88 bytes with its header, or at least 536,
    /// and as long as the previous short one (then it is the peer's real segment size). A second
    /// pushed segment before the ACK makes it `PUSHED2`.
    pub fn note_in_order_segment(&mut self, len: u64, hdr: u64, psh: bool) {
        if len >= self.rcv_mss {
            if psh {
                self.pushed = self.pushed.max(1);
            }
            return;
        }
        let with_hdr = len + hdr;
        if with_hdr >= 536 + 20 || (with_hdr >= 88 + 20 && !psh) {
            let lss = std::mem::replace(&mut self.last_seg_size, len);
            if len == lss {
                return;
            }
        }
        self.pushed = if self.pushed > 0 { 2 } else { 1 };
    }

    /// Linux `tcp_event_ack_sent` → `tcp_dec_quickack_mode` (≥ 6.7), after the window went into
    /// the ACK: an ACK that acknowledges data received since the last one spends one quick-ack
    /// credit; spending the last one deflates the ATO to `ato_min`. The delayed ACK is cancelled,
    /// and so is the compressed-ACK timer: this ACK carries the held ones.
    pub fn on_ack_sent(&mut self, ato_min: Duration) {
        self.compressed_acks = 0;
        self.comp_sack_at = None;
        if std::mem::take(&mut self.ack_scheduled) && self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ticks(ato_min);
            }
        }
        self.pushed = 0;
        self.delack_at = None;
    }

    /// Data (or FIN) at stream offset `start` (may be −1 for probes) with `len` bytes.
    pub fn on_segment(&mut self, start: i64, len: u64, fin: bool) -> RxOutcome {
        let mut o = RxOutcome::default();
        // tcp_measure_rcv_mss, for in-order data below: the ratio is re-measured when a segment
        // raises the MSS estimate.
        let mss_rises = len > self.rcv_mss; // Linux: len >= rcv_mss and len != rcv_mss
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.adv_mss);
        }
        // Linux schedules an ACK for every segment with data or FIN that reaches the queue
        // (tcp_event_data_recv, tcp_data_queue_ofo, the retransmission path of tcp_data_queue).
        self.ack_scheduled |= len > 0 || fin;
        let nxt = self.rcv_nxt as i64;
        let end = start + len as i64 + fin as i64;
        if end <= nxt || (len == 0 && !fin && start < nxt) {
            // Entirely old: a retransmission whose original arrived, or a probe.
            o.old = true;
            if len > 0 {
                o.duplicate = true;
                self.dsack = Some((start.max(0) as u64, (start + len as i64) as u64));
            }
            return o;
        }
        if len == 0 && !fin {
            return o;
        }
        let start = start.max(0) as u64;
        let data_end = start + len;
        let right = self.adv_right_edge.max(self.rcv_nxt);
        let acc_end = data_end.min(right).min(self.rcv_nxt.max(start) + self.free());
        if acc_end < data_end {
            o.beyond_window = true;
        }
        let fin_ok = fin && acc_end == data_end;
        let fin_was_queued = fin_ok && self.fin_at == Some(data_end);
        if fin_ok {
            self.fin_at = Some(data_end);
        }
        if start > self.rcv_nxt {
            o.out_of_order = true;
            if acc_end == start && fin_ok {
                // A bare FIN past a hole: Linux queues it out of order like data (its skb's
                // end_seq = seq + 1, tcp_data_queue_ofo) and SACKs it, [seq, seq + 1), or
                // D-SACKs a second copy. Kept as an empty block at the FIN's offset, which
                // `sack_blocks` widens by the FIN and later data before it merges with.
                if fin_was_queued {
                    o.duplicate = true;
                    self.dsack = Some((start, start + 1));
                } else {
                    o.sack_flush = self.sack_flush_before(start, start);
                    self.insert_ooo(start, start);
                }
            } else if acc_end > start {
                if self.covered(start, acc_end) {
                    o.duplicate = true;
                    // Linux's D-SACK is the skb's [seq, end_seq): a FIN it carries included.
                    self.dsack = Some((start, acc_end + fin_was_queued as u64));
                } else {
                    o.sack_flush = self.sack_flush_before(start, acc_end);
                    self.insert_ooo(start, acc_end);
                    if self.grow_on_ooo && len >= 128 {
                        self.grow_window();
                    }
                }
            }
            return o;
        }
        // In order (possibly overlapping old data at the front).
        if start < self.rcv_nxt {
            o.duplicate = true;
        }
        let before = self.rcv_nxt;
        if acc_end > self.rcv_nxt {
            self.rcv_nxt = acc_end;
        }
        let had_ooo = !self.ooo.is_empty();
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.remove(0);
            self.ooo_bytes -= e - s;
            if e > self.rcv_nxt {
                self.rcv_nxt = e;
            }
        }
        if had_ooo && self.ooo.is_empty() {
            o.filled_hole = true;
        }
        o.new_bytes = self.rcv_nxt - before;
        self.unread += o.new_bytes;
        if o.new_bytes > 0 && mss_rises {
            self.measure_scaling_ratio(len);
        }
        if o.new_bytes > 0 && len >= 128 {
            self.grow_window();
        }
        // Drop SACK blocks now below RCV.NXT.
        let mut k = 0;
        for i in 0..self.recent_len {
            if self.recent[i].1 > self.rcv_nxt {
                self.recent[k] = self.recent[i];
                k += 1;
            }
        }
        self.recent_len = k;
        if self.fin_at == Some(self.rcv_nxt) && !self.fin_received {
            self.fin_received = true;
            self.rcv_nxt += 1;
            o.fin = true;
        }
        o
    }

    /// Linux `tcp_grow_window` (from `tcp_event_data_recv` for in-order data, and for queued
    /// out-of-order data with SACK), called once the segment is in the buffer: `rcv_ssthresh`
    /// grows by two segments but never past the space then free, `room = min(window_clamp,
    /// tcp_space) − rcv_ssthresh`, and each growth grants one quick-ack credit (`quick |= 1`: the
    /// sender learns of the larger window at once). So the grown window leaves room for the
    /// segment that was just queued: with one segment unread (the state in which every data
    /// segment is ACKed) the window is the same as with an empty buffer, and the "window would
    /// not shrink" clause of [`Receiver::immediate_ack_due`] keeps holding. Simplified: no skb
    /// truesize accounting (`__tcp_grow_window`, which can refuse to grow for skbs with a large
    /// overhead), the increment is two segments (Linux: max(2 × advmss, 2 × len)).
    fn grow_window(&mut self) {
        let room = self.cap.min(self.free()).saturating_sub(self.rcv_ssthresh);
        if room > 0 {
            self.rcv_ssthresh += room.min(2 * self.rcv_mss);
            self.quick |= 1;
        }
    }

    /// Linux `tcp_sack_new_ofo_skb`'s flush test for out-of-order data [s, e) about to be
    /// recorded: the block it extends (adjacent or overlapping, `tcp_sack_extend`) is third or
    /// later in recency order, or it extends none and two or more blocks exist.
    fn sack_flush_before(&self, s: u64, e: u64) -> bool {
        let extended = (0..self.recent_len).find(|&i| self.recent[i].0 <= e && s <= self.recent[i].1);
        extended.unwrap_or(self.recent_len) >= SACK_BLOCKS_EXPECTED
    }

    /// Linux `__tcp_ack_snd_check` when none of the immediate conditions held
    /// ([`Receiver::immediate_ack_due`]) and out-of-order data is queued: SACK compression.
    /// Without SACK, or with `comp_sack_nr` ACKs already held, the ACK goes now; so do the first
    /// three at each RCV.NXT (the sender's duplicate-ACK threshold). Later ones are held: counted,
    /// and the compressed-ACK timer armed to fire `timer_delay` from now if it is not running.
    /// Returns whether the ACK goes now.
    pub fn ooo_ack_now(&mut self, now: Time, sack_ok: bool, comp_sack_nr: u32, timer_delay: Duration) -> bool {
        if !sack_ok || self.compressed_acks >= comp_sack_nr {
            return true;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_acks_sent = 0;
        }
        if self.dup_acks_sent < DUP_ACKS_BEFORE_COMPRESSION {
            self.dup_acks_sent += 1;
            return true;
        }
        self.compressed_acks += 1;
        self.comp_sack_at.get_or_insert(now + timer_delay);
        false
    }

    /// The compressed-ACK timer's delay (Linux `__tcp_ack_snd_check`): min(`max_delay`, RTT/20)
    /// with the RTT the receiver's estimate (`rcv_rtt_est`), or the smoothed RTT when that is
    /// known and smaller (zero without either); plus `slack`, since the hrtimer fires at its
    /// hard expiry when nothing else is due (module doc).
    pub fn comp_sack_timer_delay(&self, srtt: Option<Duration>, max_delay: Duration, slack: Duration) -> Duration {
        let mut rtt = self.autotune.as_ref().and_then(|a| a.rcv_rtt()).unwrap_or(Duration::ZERO);
        if let Some(s) = srtt.filter(|s| !s.is_zero() && *s < rtt) {
            rtt = s;
        }
        max_delay.min(rtt / 20) + slack
    }

    fn covered(&self, s: u64, e: u64) -> bool {
        self.ooo.iter().any(|&(a, b)| a <= s && e <= b)
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let mut i = self.ooo.partition_point(|r| r.1 < s);
        let (mut ns, mut ne) = (s, e);
        while i < self.ooo.len() && self.ooo[i].0 <= ne {
            ns = ns.min(self.ooo[i].0);
            ne = ne.max(self.ooo[i].1);
            self.ooo.remove(i);
        }
        self.ooo.insert(i, (ns, ne));
        self.ooo_bytes = self.ooo.iter().map(|r| r.1 - r.0).sum();
        i = 0;
        // Recency list: the merged block first, then older blocks that do not overlap it.
        let mut next = [(0u64, 0u64); MAX_BLOCKS];
        next[0] = (ns, ne);
        let mut k = 1;
        while i < self.recent_len && k < MAX_BLOCKS {
            let (a, b) = self.recent[i];
            if b < ns || a > ne {
                next[k] = (a, b);
                k += 1;
            }
            i += 1;
        }
        self.recent = next;
        self.recent_len = k;
    }

    /// SACK blocks to send (D-SACK first, then by recency), at most `max`. Clears the D-SACK.
    pub fn sack_blocks(&mut self, dsack_enabled: bool, max: usize, out: &mut [(u64, u64); MAX_BLOCKS]) -> usize {
        let mut n = 0;
        if let Some(d) = self.dsack.take() {
            if dsack_enabled && max > 0 {
                out[0] = d;
                n = 1;
            }
        }
        for i in 0..self.recent_len {
            if n >= max {
                break;
            }
            let (a, b) = self.recent[i];
            // A FIN queued out of order is in the block: Linux's SACK blocks are the queued
            // skbs' [seq, end_seq), and end_seq counts the FIN (tcp_v4_fill_cb). Without it the
            // sender, whose last segment's sequence space ends after its FIN, never finds that
            // segment SACKed (issue 16 session 19: crowdlive seed 15, a viewer's last segment
            // arrived past a hole and its SACK left the sender in Open, where it probed).
            out[n] = (a, if self.fin_at == Some(b) && !self.fin_received { b + 1 } else { b });
            n += 1;
        }
        n
    }

    pub fn has_ooo(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Linux `tcp_event_data_recv` for in-order data at `now`: adapt the ATO to the inter-arrival
    /// time and (re-)enter quick-ack mode at the start and after an idle period longer than `rto`.
    /// `rto_ns` is the RTO without backoff ([`super::rtt::RttEstimator::rto_ns`]). All in jiffies
    /// as Linux: m is the number of ticks since the last arrival (`tcp_jiffies32 - lrcvtime`),
    /// not the time truncated, and the halving drops the odd jiffy (`ato >> 1`). So two arrivals
    /// 30 ms apart give m = 7 or 8 at HZ = 250 and the ATO alternates 14 / 15 jiffies (traced,
    /// issue 15 session 14), where nanosecond arithmetic settles at 60 ms.
    pub fn on_data_event(&mut self, now: Time, ato_min: Duration, rto_ns: u64, quickacks: u32) {
        let ato_min = self.ticks(ato_min);
        let rto = self.ticks_ceil(rto_ns);
        match self.last_data_at {
            None => {
                self.quick = self.quick.max(quickacks);
                self.ato = ato_min;
            }
            Some(t) => {
                let m = self.ticks_between(t, now);
                if m <= ato_min / 2 {
                    self.ato = (self.ato >> 1) + ato_min / 2;
                } else if m < self.ato {
                    self.ato = ((self.ato >> 1) + m).min(rto);
                } else if m > rto {
                    self.quick = self.quick.max(quickacks);
                }
            }
        }
        self.last_data_at = Some(now);
    }

    /// Linux `tcp_event_data_sent`'s test for ping-pong mode: data leaves within the ATO of the
    /// last arrival (`(u32)(now - lrcvtime) < ato`, in jiffies).
    pub fn answers_within_ato(&self, now: Time) -> bool {
        self.last_data_at.is_some_and(|t| self.ticks_between(t, now) < self.ato)
    }

    /// Ticks from `earlier` to `now` (Linux `tcp_jiffies32 - lrcvtime`): the jiffy counter's
    /// difference, not the time between them truncated.
    fn ticks_between(&self, earlier: Time, now: Time) -> u64 {
        self.jiffies(now).saturating_sub(self.jiffies(earlier))
    }

    /// Linux `tcp_send_delayed_ack`: the delayed-ACK timeout, in whole ticks: an ATO above
    /// TCP_DELACK_MIN is capped at HZ/2 (TCP_DELACK_MAX = HZ/5 in ping-pong mode or after a
    /// pushed segment, `ICSK_ACK_PUSHED`) and at the smoothed RTT rounded up to jiffies (but
    /// not below TCP_DELACK_MIN); then at `icsk_delack_max` (TCP_DELACK_MAX by default).
    /// TCP_DELACK_MIN is the minimum ATO here (both HZ/25 in Linux).
    pub fn delack_timeout(&self, ato_min: Duration, srtt: Option<Duration>) -> Duration {
        let min = self.ticks(ato_min);
        let delack_max = self.ticks(TCP_DELACK_MAX);
        let mut ato = self.ato.max(min);
        if ato > min {
            let mut max_ato = if self.pingpong || self.pushed > 0 { delack_max } else { self.ticks(Duration::from_millis(500)) };
            if let Some(r) = srtt {
                max_ato = max_ato.min(self.ticks_ceil(r.as_nanos() as u64).max(min));
            }
            ato = ato.min(max_ato);
        }
        Duration::from_nanos(ato.min(delack_max) * self.tick_ns)
    }

    /// Linux `tcp_delack_timer_handler`: the timer fired, so the ACK was not piggybacked: inflate
    /// the ATO (or leave ping-pong mode and deflate it).
    /// In jiffies: `min(ato << 1, icsk_rto)`.
    pub fn on_delack_timer(&mut self, ato_min: Duration, rto: Duration) {
        if self.pingpong {
            self.pingpong = false;
            self.ato = self.ticks(ato_min);
        } else {
            self.ato = (self.ato * 2).min(self.ticks_ceil(rto.as_nanos() as u64)).max(self.ticks(ato_min));
        }
    }

    /// Quick-ack mode: quick-ack credits left and not interactive (Linux `tcp_in_quickack_mode`).
    pub fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// The application consumed `n` bytes.
    pub fn read(&mut self, max: u64) -> u64 {
        let n = max.min(self.unread);
        self.unread -= n;
        if n > 0 && self.adjust_point.is_none() {
            // The first skb of the read: one segment (the TUN path delivers, and TCP queues,
            // one skb per segment; segment boundaries are not kept here, so a full one).
            let first = n.min(self.rcv_mss.max(1));
            self.adjust_point = Some((self.read_total + first, self.unread + n - first));
        }
        self.read_total += n;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Receiver {
        let mut r = Receiver::new(100_000, 1000);
        r.rcv_nxt = 1;
        r.rcv_mss = 1000;
        r.advertise();
        r
    }

    #[test]
    fn sack_first_block_is_the_most_recent_segment() {
        let mut r = rx();
        r.on_segment(1001, 1000, false); // hole at 1..1001
        r.on_segment(4001, 1000, false); // second hole 2001..4001
        let mut b = [(0, 0); 4];
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(4001, 5001), (1001, 2001)]);
        r.on_segment(2001, 1000, false); // extends the older block
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(1001, 3001), (4001, 5001)]);
    }

    /// The lost first segment (1..1001) arrives: everything queued and the FIN at 2001 are
    /// delivered in order, and nothing is left to SACK.
    fn fill_the_hole_before_a_fin_at_2001(r: &mut Receiver) {
        let o = r.on_segment(1, 1000, false);
        assert!(o.fin && o.filled_hole);
        assert_eq!(r.rcv_nxt, 2002);
        assert_eq!(r.sack_blocks(true, 3, &mut [(0, 0); MAX_BLOCKS]), 0);
    }

    #[test]
    fn a_fin_queued_out_of_order_is_inside_its_sack_block_as_in_linux_end_seq() {
        let mut r = rx();
        assert!(r.on_segment(1001, 1000, true).out_of_order); // the last segment, with FIN
        let mut b = [(0, 0); 4];
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(1001, 2002)], "data 1001..2001 and the FIN at 2001");
        fill_the_hole_before_a_fin_at_2001(&mut r);
    }

    #[test]
    fn a_bare_fin_past_a_hole_is_sacked_and_merges_with_the_data_before_it() {
        let mut r = rx();
        // Data 1..2001 sent, 1..1001 lost; the FIN alone (offset 2001) arrives first.
        assert!(r.on_segment(2001, 0, true).out_of_order);
        let mut b = [(0, 0); 4];
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(2001, 2002)], "Linux SACKs the FIN's [seq, seq + 1)");
        // A second copy of the FIN is D-SACKed, the FIN's block kept.
        assert!(r.on_segment(2001, 0, true).duplicate);
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(2001, 2002), (2001, 2002)]);
        // The data before it, also out of order, joins the FIN's block.
        assert!(r.on_segment(1001, 1000, false).out_of_order);
        let n = r.sack_blocks(true, 3, &mut b);
        assert_eq!(&b[..n], &[(1001, 2002)]);
        fill_the_hole_before_a_fin_at_2001(&mut r);
    }

    #[test]
    fn filling_the_hole_delivers_queued_data() {
        let mut r = rx();
        assert!(r.on_segment(1001, 1000, false).out_of_order);
        let o = r.on_segment(1, 1000, false);
        assert_eq!(o.new_bytes, 2000);
        assert!(o.filled_hole);
        assert_eq!(r.rcv_nxt, 2001);
    }

    #[test]
    fn duplicate_below_rcv_nxt_produces_a_dsack() {
        let mut r = rx();
        r.on_segment(1, 1000, false);
        let o = r.on_segment(1, 1000, false);
        assert!(o.duplicate && o.old);
        let mut b = [(0, 0); 4];
        assert_eq!(r.sack_blocks(true, 3, &mut b), 1);
        assert_eq!(b[0], (1, 1001));
    }

    /// An ACK as the endpoint sends it (`emit`): advertise the window, cancel the delayed ACK.
    fn ack(r: &mut Receiver) {
        r.advertise();
        r.on_ack_sent(Duration::from_millis(40));
    }

    /// One in-order segment of `len` bytes through the endpoint's path for in-order data
    /// (endpoint.rs `on_segment`), then the application reads everything and the endpoint checks
    /// for an ACK after the read (`recv`). Returns whether an ACK went out.
    fn deliver(r: &mut Receiver, len: u64) -> bool {
        let o = r.on_segment(r.rcv_nxt as i64, len, false);
        assert_eq!(o.new_bytes, len, "in order and inside the window");
        let mut acked = false;
        if r.immediate_ack_due() {
            ack(r);
            acked = true;
        } else if r.delack_at.is_none() {
            r.delack_at = Some(Time::ZERO);
        }
        r.read(u64::MAX);
        if r.window_update_due() {
            ack(r);
            acked = true;
        }
        acked
    }

    /// 256 KiB buffer, window scale 3 (as the endpoint picks for it), 1448-byte segments, the
    /// window grown as far as it goes by a long in-order transfer the application keeps up with.
    fn grown_rx() -> Receiver {
        let mut r = Receiver::new(256 * 1024, 1448);
        r.rcv_nxt = 1;
        r.rcv_mss = 1448;
        r.wscale = 3;
        r.advertise();
        for _ in 0..1000 {
            deliver(&mut r, 1448);
        }
        r
    }

    #[test]
    fn grown_window_leaves_room_for_the_segment_just_received() {
        let mut r = grown_rx();
        let cap = 256 * 1024;
        let empty = r.select_window();
        assert!(empty + 2 * 1448 >= cap, "the window grew to about the buffer: {empty}");
        r.on_segment(r.rcv_nxt as i64, 1448, false);
        // Linux tcp_grow_window: rcv_ssthresh never passes the space free with the segment queued,
        // so one unread segment does not make the window smaller than with an empty buffer.
        assert!(r.select_window() >= empty, "{} < {empty} with one segment unread", r.select_window());
    }

    #[test]
    fn receiver_acks_every_second_full_segment_after_the_window_reaches_the_buffer() {
        let mut r = grown_rx();
        // An odd segment, then the delayed-ACK timer fires after the application has read it:
        // that ACK advertises the window of an empty buffer.
        deliver(&mut r, 1448);
        ack(&mut r);
        // A short segment (end of a write) lets the window grow closer to the buffer than a full
        // segment leaves free; its delayed ACK too goes out with the buffer empty.
        deliver(&mut r, 500);
        ack(&mut r);
        let mut since_ack = 0;
        for i in 0..300 {
            since_ack += 1;
            if deliver(&mut r, 1448) {
                since_ack = 0;
            }
            assert!(since_ack < 2, "segment {i}: {since_ack} full segments received and not ACKed");
        }
    }

    #[test]
    fn each_segment_is_acked_at_once_while_rcv_ssthresh_grows_then_every_second_one() {
        // Linux tcp_grow_window grants a quick-ack credit (quick |= 1) each time it raises
        // rcv_ssthresh: from 64 KB to a 256 KiB buffer that is (256 Ki − 64 Ki) / (2 × 1448) ≈ 68
        // segments, each ACKed at once; after that the usual every second full segment.
        let mut r = Receiver::new(256 * 1024, 1448);
        r.rcv_nxt = 1;
        r.rcv_mss = 1448;
        r.wscale = 3;
        r.advertise();
        let mut acked = Vec::new();
        for _ in 0..200 {
            let before = r.rcv_ssthresh;
            acked.push((deliver(&mut r, 1448), r.rcv_ssthresh > before));
        }
        let growing = acked.iter().take_while(|a| a.1).count();
        assert!((60..=75).contains(&growing), "rcv_ssthresh grew on {growing} segments");
        assert!(acked[..growing].iter().all(|a| a.0), "a segment that grew the window waited for its ACK");
        let later = &acked[growing + 2..];
        let n_acked = later.iter().filter(|a| a.0).count();
        assert!(
            n_acked * 2 + 1 >= later.len() && n_acked * 2 <= later.len() + 1,
            "every second segment once the window is open: {n_acked} of {}",
            later.len()
        );
    }

    #[test]
    fn a_grow_credit_does_not_force_an_ack_the_half_full_buffer_holds_back() {
        // Linux __tcp_ack_snd_check evaluates the window first when more than one segment is
        // pending; __tcp_select_window drops the credits with the buffer more than half full.
        let mut r = Receiver::new(256 * 1024, 1448);
        r.rcv_nxt = 1;
        r.rcv_mss = 1448;
        r.wscale = 3;
        r.advertise();
        // The application does not read: fill the buffer past half with ACKs in between.
        while r.free() >= r.cap / 2 + 2 * 1448 {
            r.on_segment(r.rcv_nxt as i64, 1448, false);
            ack(&mut r);
        }
        r.rcv_ssthresh = 0; // force the next segments to grow the window (a credit each)
        r.on_segment(r.rcv_nxt as i64, 1448, false);
        r.on_segment(r.rcv_nxt as i64, 1448, false);
        r.on_segment(r.rcv_nxt as i64, 1448, false);
        assert!(r.free() < r.cap / 2);
        assert!(!r.immediate_ack_due(), "window shrinking and buffer over half full: no quick ACK");
        assert_eq!(r.quick, 0);
    }

    #[test]
    fn the_ack_that_spends_the_last_quick_ack_credit_deflates_the_ato() {
        // Linux tcp_dec_quickack_mode: "Leaving quickack mode we deflate ATO."
        let mut r = rx();
        r.ato = 200_000_000;
        r.quick = 2;
        // Segments under 128 bytes do not grow the window (no credit granted on the way).
        r.on_segment(1, 100, false);
        ack(&mut r);
        assert_eq!((r.quick, r.ato), (1, 200_000_000));
        ack(&mut r); // nothing new to acknowledge: no credit spent
        assert_eq!(r.quick, 1);
        r.on_segment(101, 100, false);
        ack(&mut r);
        assert_eq!((r.quick, r.ato), (0, 40_000_000));
    }

    #[test]
    fn the_ato_adapts_in_whole_jiffies_as_the_traced_6_18_receiver() {
        // Issue 15, session 14: a loopback receiver on Linux 6.18.44 (HZ = 250) fed a 1000-byte
        // segment every 30 ms; bpftrace on tcp:tcp_probe printed icsk_ack.ato and lrcvtime at
        // each arrival. From the ACK that spent the last quick-ack credit (ATO deflated to
        // TCP_ATO_MIN = 10): each arrival (µs after the first, its jiffy after the first's) and
        // the ATO after it. m alternates 8 / 7 jiffies, so the ATO goes 13, 13, 14, 14, then
        // alternates 15 / 14 (`(ato >> 1) + m`); the same arrivals in nanoseconds give
        // 49.9 ms → 12 jiffies first and settle at 60 ms = 15.
        const TRACED: [(i64, u64, u64); 14] = [
            (0, 0, 13),
            (30_091, 7, 13),
            (59_974, 15, 14),
            (90_091, 22, 14),
            (120_024, 30, 15),
            (150_050, 37, 14),
            (180_054, 45, 15),
            (210_006, 52, 14),
            (240_049, 60, 15),
            (270_015, 67, 14),
            (299_986, 75, 15),
            (330_012, 82, 14),
            (360_062, 90, 15),
            (390_103, 97, 14),
        ];
        let mut r = rx();
        r.tick_ns = 4_000_000;
        // Jiffy 1000, tick phase 1 ms (every phase from 0.03 to 1.89 ms reproduces the traced
        // jiffies); the arrival before the first was 29 946 µs earlier, 8 jiffies before it.
        let at = |us: i64| Time::ZERO + Duration::from_nanos((4_001_000_000 + us * 1000) as u64);
        r.last_data_at = Some(at(-29_946));
        r.ato = 10;
        let rto_ns = 200_000_000; // icsk_rto = 50 jiffies (loopback: TCP_RTO_MIN)
        let mut jiffies = Vec::new();
        let mut ato = Vec::new();
        for (us, _, _) in TRACED {
            r.on_data_event(at(us), Duration::from_millis(40), rto_ns, 16);
            jiffies.push(r.jiffies(at(us)) - 1000);
            ato.push(r.ato);
        }
        assert_eq!(jiffies, TRACED.map(|t| t.1), "the arrivals fall on the traced jiffies");
        assert_eq!(ato, TRACED.map(|t| t.2));
        assert_eq!(r.quick, 0, "no gap above the RTO: no quick-ack mode");
    }

    /// One in-order segment through the endpoint's path with its PSH flag (timestamps: 32-byte
    /// header), no read. Returns whether an ACK went out at once.
    fn arrive(r: &mut Receiver, len: u64, psh: bool) -> bool {
        r.on_segment(r.rcv_nxt as i64, len, false);
        r.note_in_order_segment(len, 32, psh);
        if r.immediate_ack_due() {
            ack(r);
            return true;
        }
        r.delack_at.get_or_insert(Time::ZERO);
        false
    }

    #[test]
    fn the_read_that_empties_the_buffer_after_a_pushed_full_segment_sends_the_ack() {
        // Linux tcp_measure_rcv_mss marks a full-sized PSH segment ICSK_ACK_PUSHED (the end of an
        // application write); tcp_cleanup_rbuf ACKs when the read drains the buffer.
        let mut r = grown_rx();
        assert!(!arrive(&mut r, 1448, true), "one segment pending, window open: no credit");
        assert!(!r.window_update_due(), "nothing read yet");
        r.read(u64::MAX);
        assert!(r.window_update_due(), "the read emptied the buffer after a pushed segment");
        ack(&mut r);
        assert!(!arrive(&mut r, 1448, false));
        r.read(u64::MAX);
        assert!(!r.window_update_due(), "without PSH the delayed-ACK timer sends it");
    }

    #[test]
    fn an_interactive_receiver_acks_at_the_read_only_after_two_pushed_segments() {
        // ICSK_ACK_PUSHED alone is ignored in ping-pong mode; a second pushed segment before the
        // ACK (ICSK_ACK_PUSHED2) is not.
        let mut r = grown_rx();
        r.pingpong = true;
        arrive(&mut r, 300, true);
        r.read(u64::MAX);
        assert!(!r.window_update_due());
        arrive(&mut r, 200, true);
        r.read(u64::MAX);
        assert!(r.window_update_due());
    }

    fn at_ms(t: u64) -> Time {
        Time::ZERO + Duration::from_millis(t)
    }

    /// An autotuned receiver (Linux defaults) established at 0 ms, 1448-byte segments, a
    /// 100-ms receiver RTT sample, the window advertised.
    fn autotuned_rx() -> Receiver {
        let mut r = Receiver::for_config(&TcpConfig::default(), 1448);
        r.rcv_nxt = 1;
        r.on_established(at_ms(0));
        r.advertise();
        r
    }

    #[test]
    fn the_first_full_segment_measures_the_scaling_ratio_and_raises_the_clamp() {
        // tcp_measure_rcv_mss: rcv_mss 536 → 1448, ratio ⌊1448·256/2304⌋ = 160, clamp
        // 131072·160/256 = 81920; tcp_set_window_clamp raises rcv_ssthresh to min(rcv_wnd, clamp).
        let mut r = autotuned_rx();
        assert_eq!(r.window_clamp(), 65_536);
        r.on_segment(1, 1448, false);
        assert_eq!(r.window_clamp(), 81_920);
        assert_eq!(r.autotune.as_ref().unwrap().scaling_ratio(), 160);
    }

    #[test]
    fn a_fixed_so_rcvbuf_buffer_advertises_its_size_times_the_scaling_ratio() {
        // The emulated 6.18 client with SO_RCVBUF = 100 000 (issue 15, session 14, tcp:tcp_probe):
        // sk_rcvbuf 200 000; at the first data segment window_clamp = rcv_ssthresh = 98 552
        // (tcp_full_space at ratio ½ less one 1448-byte segment, tcp_init_buffer_space); from the
        // second, ratio 160 and window_clamp 125 000; the buffer never grows.
        let cfg = TcpConfig { rcv_buf_autotune: false, rcv_buf_bytes: 200_000, ..TcpConfig::default() };
        let mut r = Receiver::for_config(&cfg, 1448);
        r.rcv_nxt = 1;
        r.on_established(at_ms(0));
        r.advertise();
        assert_eq!((r.window_clamp(), r.rcv_ssthresh), (98_552, 98_552));
        r.on_segment(1, 1448, false);
        assert_eq!(r.window_clamp(), 125_000);
        assert_eq!(r.autotune.as_ref().unwrap().scaling_ratio(), 160);
        // A receiver RTT later, a read of far more than the measurement window: still 125 000.
        r.autotune.as_mut().unwrap().on_data_with_timestamp(1, 100, 1448, 1448, true);
        r.rcv_nxt += 200 * 1448; // as if 200 more segments had arrived in order
        r.unread += 200 * 1448;
        r.read(u64::MAX);
        r.space_adjust(at_ms(150));
        assert_eq!(r.window_clamp(), 125_000, "SO_RCVBUF locks the buffer");
    }

    #[test]
    fn a_burst_freed_by_a_hole_fill_counts_in_the_next_rtt_of_autotuning() {
        // Linux tcp_recvmsg runs tcp_rcv_space_adjust after each skb it copies, and
        // tcp_rcv_space_adjust counts what was read less what is still queued. When a hole fill
        // frees 21 segments, the check after the first skb sees them still queued and restarts
        // the measurement there (nothing grows); the burst is counted one RTT later (the
        // emulated 6.18 client: copied 33 304 over the RTT after the hole fill). Counting the
        // whole read at once would grow the buffer at the hole fill, on 21 segments.
        const M: u64 = 1448;
        let mut r = autotuned_rx();
        r.on_segment(1, M, false);
        r.measure_rcv_rtt(at_ms(100), Some((1, 100)), M, M);
        r.read(u64::MAX);
        r.space_adjust(at_ms(100)); // one RTT since established, 1 segment ≤ 10: restart
        for k in 2..22 {
            r.on_segment((1 + k * M) as i64, M, false); // out of order above a hole
        }
        let clamp = r.window_clamp();
        assert_eq!(r.on_segment((1 + M) as i64, M, false).new_bytes, 21 * M, "the hole fill frees 21 segments");
        r.read(u64::MAX);
        r.space_adjust(at_ms(200));
        assert_eq!(r.window_clamp(), clamp, "the burst was still queued at the first skb: no growth yet");
        for k in 22..27 {
            r.on_segment((1 + k * M) as i64, M, false);
        }
        r.read(u64::MAX);
        r.space_adjust(at_ms(300));
        // n = (23 − 2)·M − 4·M still queued = 17·M > 10·M: 2n + 2·(2n·7M/10M) at ratio 160.
        let n = 17 * M;
        let rcvwin = 2 * n + 2 * (2 * n * (n - 10 * M) / (10 * M));
        let rcvbuf = (rcvwin << 8) / 160;
        assert_eq!(r.window_clamp(), (rcvbuf * 160) >> 8);
    }

    #[test]
    fn window_is_zero_when_less_than_one_mss_is_free_and_never_shrinks() {
        let mut r = Receiver::new(4000, 1000);
        r.rcv_nxt = 1;
        r.rcv_mss = 1000;
        assert_eq!(r.advertise(), 4000);
        r.on_segment(1, 1000, false);
        // 3000 free; the right edge 4001 is kept.
        assert_eq!(r.advertise(), 3000);
        r.on_segment(1001, 1000, false);
        r.on_segment(2001, 1000, false);
        r.on_segment(3001, 500, false);
        assert_eq!(r.free(), 500);
        assert_eq!(r.advertise(), 500, "right edge kept: 4001 − 3501");
        r.on_segment(3501, 500, false);
        assert_eq!(r.advertise(), 0);
        r.read(4000);
        assert!(r.window_update_due());
        assert_eq!(r.advertise(), 4000);
    }
}
