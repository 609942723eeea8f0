//! Receive-buffer autotuning ("dynamic right-sizing") as Linux 6.18 does it: the buffer starts at
//! `tcp_rmem[1]` and grows once per receiver RTT to fit what the application read in that RTT.
//!
//! Sources: Linux net/ipv4/tcp_input.c `tcp_rcv_space_adjust` (called from `tcp_recvmsg` after
//! every read) and `tcp_rcvbuf_grow`, `tcp_rcv_rtt_update`, `tcp_rcv_rtt_measure` and
//! `tcp_rcv_rtt_measure_ts`, `tcp_measure_rcv_mss` (the scaling ratio), `tcp_set_window_clamp`
//! (tcp.c); `tcp_init_buffer_space` for the first measurement window; include/net/tcp.h
//! `tcp_win_from_space` / `tcp_space_from_win`; sysctls `tcp_rmem = 4096 131072 33554432` (Linux
//! ≥ 6.16 on a host with ≥ 4 GiB; 6291456 before, commit "tcp: increase tcp_rmem[2] to 32 MB"),
//! `tcp_moderate_rcvbuf = 1`. Fisk & Feng, "Dynamic right-sizing in TCP" (2001) for the idea.
//! The growth rule is the one of Eric Dumazet's receive-side series (net-next May 2025, in 6.16:
//! "tcp: fix sk_rcvbuf overshoot", "tcp: adjust rcvbuf in presence of reorders", "tcp: add
//! receive queue awareness in tcp_rcv_space_adjust()", "tcp: remove zero TCP TS samples for
//! autotuning", "tcp: always seek for minimal rtt in tcp_rcv_rtt_update()", "tcp: skip big rtt
//! sample if receive queue is not empty") plus its follow-up "tcp: fix too slow tcp_rcvbuf_grow()
//! action" (net-next Oct 2025), which the 6.18.44 kernel this project measures carries: its
//! `tcp:tcp_rcvbuf_grow` tracepoint gave copied 34 752, inq 1 448, space 14 480, ratio 160 →
//! sk_rcvbuf 383 660 (issue 15 session 12), exactly 2·n + 2·(2·n)·(n − space)/space with
//! n = copied − inq, and neither the pre-6.16 rule (+16·advmss cushion) nor plain 2·n.
//!
//! The model, in window bytes (what the receiver may advertise), not buffer bytes:
//! - the window clamp starts at `win_from_space(tcp_rmem[1])` at the default scaling ratio ½
//!   (65536), then, at the first full-sized data segment, Linux measures the ratio of payload to
//!   `skb->truesize` (`tcp_measure_rcv_mss`; [`rx_truesize`]: 160/256 for a 1500-byte packet on
//!   tcpvideo emulate's TUN receive path) and sets the clamp to `win_from_space(sk_rcvbuf)` at
//!   that ratio (81920), which caps the advertised window until the first adjustment — why a
//!   fresh connection (a player's startup) is receive-window limited for its first RTT;
//! - the receiver estimates the RTT from timestamps (TSecr echoed on data at least one MSS
//!   long; a lower sample is taken at once, a higher one smoothed with gain 1/8 and only while
//!   the receive queue is empty, `tcp_rcv_rtt_update`), or, without timestamps, once per window
//!   of data (the time to receive one advertised window, minimum only);
//! - after a read, if at least one receiver RTT has passed since the measurement window
//!   started and the application read more in it than in the previous window (`space`), the
//!   bytes read minus those still queued being `n`: the window becomes
//!   `rcvwin = 2·n + 2·(2·n)·(n − space)/space` ("DRS is always one RTT late"; a sender in slow
//!   start doubles per RTT) plus the span of out-of-order data above RCV.NXT, the buffer
//!   `space_from_win(rcvwin)` capped at `tcp_rmem[2]`, and the window clamp follows it
//!   (`window_clamp = win_from_space(rcvbuf)`).
//!
//! Deviations: the ratio is measured from a modelled truesize ([`rx_truesize`], the TUN driver's
//! linear skb), not a driver's; real NICs give other ratios (page-fragment drivers about
//! 0.55–0.7 for 1500-byte frames, GRO packets more). The free space counts unread payload bytes
//! against the clamp, where Linux charges each queued skb's truesize against `sk_rcvbuf` (at a
//! measured ratio the two agree to within the ratio's rounding: 1440 window bytes per 1448-byte
//! segment at 160/256). Memory pressure (`tcp_memory_pressure`, `tcp_clamp_window`) is not
//! modelled.

use std::time::Duration;

use tcpvideo_model::Time;

/// Linux `tcp_rmem` and the space→window ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcvBufLimits {
    /// `tcp_rmem[1]`: the buffer a new socket gets (131072 bytes).
    pub initial_bytes: u64,
    /// `tcp_rmem[2]`: the most autotuning may grow it to (33554432 bytes; 6291456 before Linux 6.16).
    pub max_bytes: u64,
}

impl Default for RcvBufLimits {
    fn default() -> Self {
        RcvBufLimits { initial_bytes: 131_072, max_bytes: 33_554_432 }
    }
}

/// Linux `TCP_RMEM_TO_WIN_SCALE`: the scaling ratio is window bytes per 2^8 buffer bytes.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// Linux `TCP_DEFAULT_SCALING_RATIO`: ½ until the first full-sized segment is measured.
pub const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// Linux `SOCK_MIN_RCVBUF / 2`: the smallest window clamp `tcp_set_window_clamp` sets (bytes;
/// SOCK_MIN_RCVBUF = TCP_SKB_MIN_TRUESIZE = 2048 + the aligned `struct sk_buff` (256) on x86-64).
const MIN_WINDOW_CLAMP: u64 = 1152;

/// Window bytes a buffer of `space` bytes allows at `ratio`/256 (`__tcp_win_from_space`).
pub fn win_from_space(ratio: u64, space: u64) -> u64 {
    ((space as u128 * ratio as u128) >> RMEM_TO_WIN_SCALE) as u64
}

/// Buffer bytes needed for a window of `win` bytes at `ratio`/256 (`__tcp_space_from_win`).
pub fn space_from_win(ratio: u64, win: u64) -> u64 {
    ((win as u128) << RMEM_TO_WIN_SCALE).checked_div(ratio.max(1) as u128).unwrap_or(0).min(u64::MAX as u128) as u64
}

/// `skb->truesize` of a received IP packet of `ip_len` bytes as Linux's TUN driver builds it —
/// the receive path of `tcpvideo emulate`'s client (linkem writes each packet to a TUN device;
/// no GRO, `tun_get_user` → `netif_receive_skb`). Below a page the skb is linear
/// (`tun_alloc_skb`: "Under a page? Don't bother with paged skb."), its head `NET_SKB_PAD` (64)
/// plus the packet, `SKB_DATA_ALIGN`ed (64 bytes) plus the aligned `skb_shared_info` (320 bytes),
/// from the next kmalloc size class (`__alloc_skb` → `kmalloc_reserve`, powers of two above
/// 256 bytes); truesize = `SKB_TRUESIZE(ksize − 320)` = ksize − 320 + 256 (the aligned `struct
/// sk_buff`) + 320. For 1500 bytes: 1600 + 320 = 1920 → kmalloc-2048 → 2304, so a 1448-byte
/// segment gives the ratio ⌊1448·256/2304⌋ = 160 (Linux 6.18's `tcp:tcp_rcvbuf_grow`
/// tracepoint on the emulated client reports `scaling_ratio=160`). Above a page (jumbo frames,
/// not measured) the packet is taken as page fragments: the head plus whole 4-KiB pages.
pub fn rx_truesize(ip_len: u64) -> u64 {
    const SHINFO: u64 = 320;
    const SKB: u64 = 256;
    const PAD: u64 = 64;
    let align = |x: u64| x.div_ceil(64) * 64;
    if PAD + ip_len < 4096 {
        let ksize = (align(PAD + ip_len) + SHINFO).next_power_of_two().max(256);
        ksize - SHINFO + SKB + SHINFO
    } else {
        let head = (align(PAD) + SHINFO).next_power_of_two();
        head + SKB + ip_len.div_ceil(4096) * 4096
    }
}

/// Per-connection autotuning state (Linux `rcvq_space`, `rcv_rtt_est` and `scaling_ratio`).
#[derive(Clone, Debug, PartialEq)]
pub struct RcvBufAutotune {
    limits: RcvBufLimits,
    /// Current buffer size (`sk_rcvbuf`), bytes.
    rcvbuf_bytes: u64,
    /// Linux `scaling_ratio`: window bytes per 256 buffer bytes, ½ until measured on the first
    /// full-sized segment (payload / truesize, `tcp_measure_rcv_mss`).
    scaling_ratio: u64,
    /// Receiver RTT estimate ×8 in µs, as Linux keeps it (0 = no sample yet).
    rtt_us_x8: u64,
    /// Bytes the application read in the previous measurement window (`rcvq_space.space`).
    space: u64,
    /// Bytes read (total) when the current measurement window started (`rcvq_space.seq`).
    window_start_read: u64,
    /// When the current measurement window started (`rcvq_space.time`); None until established.
    window_start_at: Option<Time>,
    /// Non-timestamp RTT measurement: stream offset whose arrival ends the current sample, and
    /// when the sample started (`rcv_rtt_est.seq` / `.time`).
    window_rtt_until: u64,
    window_rtt_since: Option<Time>,
    /// Last TSecr seen on in-order data (Linux `rcv_rtt_last_tsecr`): one sample per echoed value.
    last_tsecr: Option<u32>,
}

impl RcvBufAutotune {
    pub fn new(limits: RcvBufLimits) -> RcvBufAutotune {
        RcvBufAutotune {
            rcvbuf_bytes: limits.initial_bytes.min(limits.max_bytes),
            limits,
            scaling_ratio: DEFAULT_SCALING_RATIO,
            rtt_us_x8: 0,
            space: 0,
            window_start_read: 0,
            window_start_at: None,
            window_rtt_until: 0,
            window_rtt_since: None,
            last_tsecr: None,
        }
    }

    /// The window clamp the buffer implies now (Linux `window_clamp` = `tcp_full_space`).
    pub fn window_clamp(&self) -> u64 {
        win_from_space(self.scaling_ratio, self.rcvbuf_bytes)
    }

    pub fn rcvbuf_bytes(&self) -> u64 {
        self.rcvbuf_bytes
    }

    /// Linux `scaling_ratio` (window bytes per 256 buffer bytes).
    pub fn scaling_ratio(&self) -> u64 {
        self.scaling_ratio
    }

    /// `tcp_measure_rcv_mss` for an in-order segment that raises `rcv_mss` (`len` ≥ and ≠ the
    /// current estimate): the ratio becomes ⌊len·256/truesize⌋ (at least 1); when it changes,
    /// the window clamp is set to `win_from_space(sk_rcvbuf)` at the new ratio
    /// (`tcp_set_window_clamp`, at least `SOCK_MIN_RCVBUF / 2`) and the measurement window's
    /// `space` is capped at it. Returns the new clamp when the ratio changed.
    pub fn measure_scaling_ratio(&mut self, len: u64, truesize: u64) -> Option<u64> {
        let ratio = ((len << RMEM_TO_WIN_SCALE) / truesize.max(1)).clamp(1, 255);
        if ratio == self.scaling_ratio {
            return None;
        }
        self.scaling_ratio = ratio;
        let clamp = self.window_clamp().max(MIN_WINDOW_CLAMP);
        self.space = self.space.min(clamp);
        Some(clamp)
    }

    /// Receiver RTT estimate, if any.
    pub fn rcv_rtt(&self) -> Option<Duration> {
        (self.rtt_us_x8 > 0).then(|| Duration::from_micros(self.rtt_us_x8 >> 3))
    }

    /// `tcp_init_buffer_space`: the connection is established; the first measurement window
    /// starts with `space = min(rcv_ssthresh, rcv_wnd, 10·advmss)`.
    pub fn on_established(&mut self, now: Time, rcv_ssthresh: u64, rcv_wnd: u64, advmss: u64) {
        self.space = rcv_ssthresh.min(rcv_wnd).min(10 * advmss);
        self.window_start_at = Some(now);
        self.window_start_read = 0;
    }

    /// `tcp_rcv_rtt_update` (Linux ≥ 6.16): `sample` in µs; a lower sample is taken at once; a
    /// higher one is smoothed (gain 1/8) — unless it is `window_based` (no timestamps: minimum
    /// only) or the receive queue holds unread data (`queue_empty` false: the sample would
    /// measure the application, "tcp: skip big rtt sample if receive queue is not empty").
    fn rtt_update(&mut self, sample_us: u64, window_based: bool, queue_empty: bool) {
        let m = sample_us.max(1) << 3;
        if self.rtt_us_x8 == 0 || m < self.rtt_us_x8 {
            self.rtt_us_x8 = m;
        } else if !window_based && queue_empty {
            self.rtt_us_x8 = self.rtt_us_x8 - (self.rtt_us_x8 >> 3) + sample_us;
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: an in-order data segment of `len` bytes echoing `tsecr`, whose
    /// age on our millisecond timestamp clock is `age_ms`, with `queue_empty` whether nothing
    /// was unread before it. One sample per TSecr value (remembered whatever the length); only
    /// segments of at least one MSS; a zero age is no sample ("tcp: remove zero TCP TS samples
    /// for autotuning").
    pub fn on_data_with_timestamp(&mut self, tsecr: u32, age_ms: u32, len: u64, rcv_mss: u64, queue_empty: bool) {
        if self.last_tsecr == Some(tsecr) {
            return;
        }
        self.last_tsecr = Some(tsecr);
        if len < rcv_mss || age_ms == 0 || age_ms > 1 << 30 {
            return;
        }
        self.rtt_update(age_ms as u64 * 1000, false, queue_empty);
    }

    /// `tcp_rcv_rtt_measure` (no timestamps): the time to receive one advertised window.
    /// `rcv_nxt` after the segment, `rcv_wnd` the window currently advertised.
    pub fn on_data_without_timestamp(&mut self, now: Time, rcv_nxt: u64, rcv_wnd: u64) {
        if let Some(since) = self.window_rtt_since {
            if rcv_nxt < self.window_rtt_until {
                return;
            }
            let us = now.saturating_since(since).as_micros() as u64;
            self.rtt_update(us, true, true);
        }
        self.window_rtt_until = rcv_nxt + rcv_wnd;
        self.window_rtt_since = Some(now);
    }

    /// `tcp_rcv_space_adjust` + `tcp_rcvbuf_grow`, after the application read; `read_total` is
    /// every byte it has read so far, `inq` the in-order bytes still unread, `ooo_span` the
    /// distance from RCV.NXT to the end of the highest out-of-order data (0 if none). Returns
    /// the new window clamp when the buffer grew.
    pub fn after_read(&mut self, now: Time, read_total: u64, inq: u64, ooo_span: u64) -> Option<u64> {
        let start = self.window_start_at?;
        let elapsed_us = now.saturating_since(start).as_micros() as u64;
        if self.rtt_us_x8 == 0 || elapsed_us < self.rtt_us_x8 >> 3 {
            return None;
        }
        // Bytes read in the last RTT, less what is still queued ("tcp: add receive queue
        // awareness in tcp_rcv_space_adjust()").
        let copied = (read_total - self.window_start_read).saturating_sub(inq);
        let mut grew = None;
        if copied > self.space {
            let old = std::mem::replace(&mut self.space, copied);
            // DRS is always one RTT late: twice what was read; plus twice its growth over the
            // previous RTT for a sender in slow start; plus the reordered data above RCV.NXT.
            let mut rcvwin = 2 * copied;
            if old > 0 {
                let grow = (rcvwin as u128 * (copied - old) as u128 / old as u128).min(u64::MAX as u128) as u64;
                rcvwin = rcvwin.saturating_add(grow.saturating_mul(2));
            }
            rcvwin = rcvwin.saturating_add(ooo_span);
            let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.limits.max_bytes);
            if rcvbuf > self.rcvbuf_bytes {
                self.rcvbuf_bytes = rcvbuf;
                grew = Some(self.window_clamp());
            }
        }
        self.window_start_read = read_total;
        self.window_start_at = Some(now);
        grew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn ms(t: u64) -> Time {
        Time::ZERO + Duration::from_millis(t)
    }

    fn established() -> RcvBufAutotune {
        let mut a = RcvBufAutotune::new(RcvBufLimits::default());
        a.on_established(ms(0), 65_535, 65_535, MSS);
        a
    }

    #[test]
    fn a_new_socket_advertises_at_most_half_of_tcp_rmem_default() {
        let a = RcvBufAutotune::new(RcvBufLimits::default());
        assert_eq!(a.window_clamp(), 65_536);
        assert_eq!(a.rcvbuf_bytes(), 131_072);
    }

    #[test]
    fn a_1500_byte_packet_on_the_tun_path_costs_2304_bytes_of_truesize() {
        // 64 + 1500 → 1600 aligned, + 320 shared info = 1920 → kmalloc-2048; 2048 − 320 + 256 + 320.
        assert_eq!(rx_truesize(1500), 2304);
        assert_eq!(rx_truesize(1000), 2304, "the same kmalloc class");
        assert_eq!(rx_truesize(600), 1280, "64 + 600 → 704, + 320 = 1024 → kmalloc-1024");
    }

    #[test]
    fn the_first_full_segment_sets_the_ratio_and_the_clamp_follows() {
        // Linux tcp_measure_rcv_mss: ⌊1448·256/2304⌋ = 160; tcp_set_window_clamp(win_from_space
        // (131072)) = 131072·160/256 = 81920 (the emulated kernel's tcp_rcvbuf_grow tracepoint:
        // scaling_ratio=160 window_clamp=81920 before the first growth).
        let mut a = established();
        assert_eq!(a.measure_scaling_ratio(MSS, rx_truesize(MSS + 52)), Some(81_920));
        assert_eq!((a.scaling_ratio(), a.window_clamp()), (160, 81_920));
        assert_eq!(a.measure_scaling_ratio(MSS, rx_truesize(MSS + 52)), None, "same ratio: nothing to do");
    }

    #[test]
    fn nothing_grows_before_one_receiver_rtt_has_passed() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS, true); // 50 ms receiver RTT
        assert_eq!(a.after_read(ms(49), 200_000, 0, 0), None);
        assert_eq!(a.window_clamp(), 65_536);
    }

    #[test]
    fn nothing_grows_without_a_receiver_rtt_sample() {
        let mut a = established();
        assert_eq!(a.after_read(ms(500), 200_000, 0, 0), None);
    }

    #[test]
    fn the_buffer_grows_as_the_emulated_6_18_kernel_grew_it() {
        // The tcp:tcp_rcvbuf_grow event of the kernel run (ccp, seed 1): space 14480, copied 34752
        // of which 1448 still queued, ratio 160, rcvbuf 131072 → 383660, window_clamp 239787.
        // n = 33304; rcvwin = 2n + 2·(2n·(n − 14480)/14480) = 66608 + 2·86590 = 239788;
        // rcvbuf = 239788·256/160 = 383660; clamp = 383660·160/256 = 239787.
        let mut a = established();
        a.on_established(ms(0), 80_480, 80_896, MSS);
        a.measure_scaling_ratio(MSS, rx_truesize(MSS + 52));
        a.on_data_with_timestamp(7, 100, MSS, MSS, true);
        assert_eq!(a.after_read(ms(102), 34_752, 1_448, 0), Some(239_787));
        assert_eq!(a.rcvbuf_bytes(), 383_660);
    }

    #[test]
    fn reordered_data_above_rcv_nxt_adds_its_span_to_the_window() {
        // "tcp: adjust rcvbuf in presence of reorders": rcvwin += ooo end − RCV.NXT.
        let mut a = established();
        a.on_data_with_timestamp(7, 50, MSS, MSS, true);
        let plain = a.clone().after_read(ms(60), 20 * MSS, 0, 0).unwrap();
        let with_ooo = a.after_read(ms(60), 20 * MSS, 0, 10 * MSS).unwrap();
        assert_eq!(with_ooo - plain, 10 * MSS / 2 * 2, "at ratio ½ the clamp grows by the span");
    }

    #[test]
    fn reading_more_than_last_rtt_grows_the_buffer_by_twice_plus_the_slow_start_growth() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS, true);
        // First window: space = 10·MSS = 14480; 20 segments read in one RTT: doubled.
        let copied = 20 * MSS;
        let rcvwin = 2 * copied; // 57920
        let grow = rcvwin * (copied - 10 * MSS) / (10 * MSS); // = rcvwin
        let want = rcvwin + 2 * grow; // ratio ½: the clamp is the window
        assert_eq!(a.after_read(ms(50), copied, 0, 0), Some(want));
        assert_eq!(a.window_clamp(), want);
    }

    #[test]
    fn reading_no_more_than_last_rtt_starts_a_new_window_without_growth() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS, true);
        assert_eq!(a.after_read(ms(60), 5 * MSS, 0, 0), None);
        // The next window starts at the read: 60 ms, 5 segments.
        assert_eq!(a.after_read(ms(100), 20 * MSS, 0, 0), None, "40 ms < one RTT");
        assert!(a.after_read(ms(110), 20 * MSS, 0, 0).is_some());
    }

    #[test]
    fn the_buffer_never_exceeds_tcp_rmem_max() {
        let mut a = established();
        a.on_data_with_timestamp(100, 10, MSS, MSS, true);
        let mut read = 0;
        for k in 1..40u64 {
            read += 4_000_000;
            a.after_read(ms(10 * k), read, 0, 0);
        }
        assert_eq!(a.rcvbuf_bytes(), 33_554_432);
        assert_eq!(a.window_clamp(), 16_777_216);
    }

    #[test]
    fn timestamp_rtt_takes_a_lower_sample_at_once_and_smooths_a_higher_one_with_gain_one_eighth() {
        let mut a = established();
        a.on_data_with_timestamp(1, 80, MSS, MSS, true);
        a.on_data_with_timestamp(2, 40, MSS, MSS, true); // lower: taken at once
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(40)));
        a.on_data_with_timestamp(3, 120, MSS, MSS, true); // higher: 7/8·40 + 1/8·120 = 50
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(50)));
        a.on_data_with_timestamp(3, 500, MSS, MSS, true); // same TSecr: ignored
        a.on_data_with_timestamp(4, 500, 100, MSS, true); // shorter than one MSS: ignored
        a.on_data_with_timestamp(5, 0, MSS, MSS, true); // zero age: no sample
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(50)));
    }

    #[test]
    fn a_higher_rtt_sample_is_skipped_while_the_receive_queue_holds_data() {
        let mut a = established();
        a.on_data_with_timestamp(1, 40, MSS, MSS, true);
        a.on_data_with_timestamp(2, 120, MSS, MSS, false);
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(40)), "unread data: the sample measures the reader");
        a.on_data_with_timestamp(3, 30, MSS, MSS, false);
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(30)), "a lower one is always taken");
    }

    #[test]
    fn without_timestamps_the_rtt_is_the_time_to_receive_one_window_and_only_falls() {
        let mut a = established();
        a.on_data_without_timestamp(ms(0), MSS, 10 * MSS);
        a.on_data_without_timestamp(ms(30), 5 * MSS, 10 * MSS); // window not yet received
        assert_eq!(a.rcv_rtt(), None);
        a.on_data_without_timestamp(ms(60), 11 * MSS, 10 * MSS);
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(60)));
        a.on_data_without_timestamp(ms(200), 21 * MSS, 10 * MSS); // 140 ms: not lower, kept
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(60)));
    }
}
