//! Receive-buffer autotuning ("dynamic right-sizing") as Linux does it: the buffer starts at
//! `tcp_rmem[1]` and grows once per receiver RTT to fit what the application read in that RTT.
//!
//! Sources: Linux net/ipv4/tcp_input.c `tcp_rcv_space_adjust` (called from `tcp_recvmsg` after
//! every read), `tcp_rcv_rtt_update`, `tcp_rcv_rtt_measure` and `tcp_rcv_rtt_measure_ts`;
//! `tcp_init_buffer_space` for the first measurement window; include/net/tcp.h
//! `tcp_win_from_space` / `tcp_space_from_win`; sysctls `tcp_rmem = 4096 131072 33554432` (Linux
//! ≥ 6.16 on a host with ≥ 4 GiB; 6291456 before, commit "tcp: increase tcp_rmem[2] to 32 MB"),
//! `tcp_moderate_rcvbuf = 1`. Fisk & Feng, "Dynamic right-sizing in TCP" (2001) for the idea.
//!
//! The model, in window bytes (what the receiver may advertise), not buffer bytes:
//! - the window clamp starts at `win_from_space(tcp_rmem[1])` (65536 with Linux's initial
//!   scaling ratio of one half), which caps the advertised window until the first adjustment —
//!   why a fresh connection (a player's startup) is receive-window limited for its first RTT;
//! - the receiver estimates the RTT from timestamps (TSecr echoed on data at least one MSS
//!   long, a minimum-biased EWMA with gain 1/8, `tcp_rcv_rtt_update`), or, without timestamps,
//!   once per window of data (the time to receive one advertised window, minimum only);
//! - after a read, if at least one receiver RTT has passed since the measurement window
//!   started and the application read more (`copied`) than in the previous window (`space`),
//!   the window becomes `rcvwin = 2·copied + 16·advmss`, plus `2·rcvwin·(copied − space)/space`
//!   for a sender still in slow start, the buffer `space_from_win(rcvwin)` capped at
//!   `tcp_rmem[2]`, and the window clamp follows it (`window_clamp = win_from_space(rcvbuf)`).
//!
//! Deviations: the space↔window ratio is Linux's initial `TCP_DEFAULT_SCALING_RATIO` (½) for the
//! whole connection; Linux ≥ 6.6 re-measures it from each skb's payload/truesize (driver
//! dependent, about 0.55–0.7 for 1500-byte frames), so its later windows are somewhat larger for
//! the same buffer. Memory pressure (`tcp_memory_pressure`, `tcp_clamp_window`) is not modelled.

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

/// Window bytes a buffer of `space` bytes allows (`tcp_win_from_space` at scaling ratio ½).
pub fn win_from_space(space: u64) -> u64 {
    space / 2
}

/// Buffer bytes needed for a window of `win` bytes (`tcp_space_from_win` at ratio ½).
pub fn space_from_win(win: u64) -> u64 {
    win.saturating_mul(2)
}

/// Per-connection autotuning state (Linux `rcvq_space` and `rcv_rtt_est`).
#[derive(Clone, Debug, PartialEq)]
pub struct RcvBufAutotune {
    limits: RcvBufLimits,
    /// Current buffer size (`sk_rcvbuf`), bytes.
    rcvbuf_bytes: u64,
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
    /// Last TSecr used for a sample (Linux `rcv_rtt_last_tsecr`): one sample per echoed value.
    last_tsecr: Option<u32>,
}

impl RcvBufAutotune {
    pub fn new(limits: RcvBufLimits) -> RcvBufAutotune {
        RcvBufAutotune {
            rcvbuf_bytes: limits.initial_bytes.min(limits.max_bytes),
            limits,
            rtt_us_x8: 0,
            space: 0,
            window_start_read: 0,
            window_start_at: None,
            window_rtt_until: 0,
            window_rtt_since: None,
            last_tsecr: None,
        }
    }

    /// The window clamp the buffer implies now (Linux `window_clamp`).
    pub fn window_clamp(&self) -> u64 {
        win_from_space(self.rcvbuf_bytes)
    }

    pub fn rcvbuf_bytes(&self) -> u64 {
        self.rcvbuf_bytes
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

    /// `tcp_rcv_rtt_update`: `sample` in µs; `window_based` samples (no timestamps) only ever
    /// lower the estimate.
    fn rtt_update(&mut self, sample_us: u64, window_based: bool) {
        let m = sample_us.max(1) << 3;
        if self.rtt_us_x8 == 0 || m < self.rtt_us_x8 {
            self.rtt_us_x8 = m;
        } else if !window_based {
            self.rtt_us_x8 = self.rtt_us_x8 - (self.rtt_us_x8 >> 3) + sample_us;
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: an in-order data segment of `len` bytes echoing `tsecr`, whose
    /// age on our millisecond timestamp clock is `age_ms`. Only segments of at least one MSS.
    pub fn on_data_with_timestamp(&mut self, tsecr: u32, age_ms: u32, len: u64, rcv_mss: u64) {
        if tsecr == 0 || self.last_tsecr == Some(tsecr) || len < rcv_mss || age_ms > 1 << 30 {
            return;
        }
        self.last_tsecr = Some(tsecr);
        self.rtt_update(age_ms.max(1) as u64 * 1000, false);
    }

    /// `tcp_rcv_rtt_measure` (no timestamps): the time to receive one advertised window.
    /// `rcv_nxt` after the segment, `rcv_wnd` the window currently advertised.
    pub fn on_data_without_timestamp(&mut self, now: Time, rcv_nxt: u64, rcv_wnd: u64) {
        if let Some(since) = self.window_rtt_since {
            if rcv_nxt < self.window_rtt_until {
                return;
            }
            let us = now.saturating_since(since).as_micros() as u64;
            self.rtt_update(us, true);
        }
        self.window_rtt_until = rcv_nxt + rcv_wnd;
        self.window_rtt_since = Some(now);
    }

    /// `tcp_rcv_space_adjust`, after the application read; `read_total` is every byte it has
    /// read so far. Returns the new window clamp when the buffer grew.
    pub fn after_read(&mut self, now: Time, read_total: u64, advmss: u64) -> Option<u64> {
        let start = self.window_start_at?;
        let elapsed_us = now.saturating_since(start).as_micros() as u64;
        if self.rtt_us_x8 == 0 || elapsed_us < self.rtt_us_x8 >> 3 {
            return None;
        }
        let copied = read_total - self.window_start_read;
        let mut grew = None;
        if copied > self.space {
            // Twice what was read (losses) plus a cushion, plus twice the growth ratio for a
            // sender still doubling per RTT: the ACK sent now paces the *next* RTT.
            let mut rcvwin = 2 * copied + 16 * advmss;
            if self.space > 0 {
                let grow = (rcvwin as u128 * (copied - self.space) as u128 / self.space as u128) as u64;
                rcvwin = rcvwin.saturating_add(grow.saturating_mul(2));
            }
            let rcvbuf = space_from_win(rcvwin).min(self.limits.max_bytes);
            if rcvbuf > self.rcvbuf_bytes {
                self.rcvbuf_bytes = rcvbuf;
                grew = Some(self.window_clamp());
            }
            self.space = copied;
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
    fn nothing_grows_before_one_receiver_rtt_has_passed() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS); // 50 ms receiver RTT
        assert_eq!(a.after_read(ms(49), 200_000, MSS), None);
        assert_eq!(a.window_clamp(), 65_536);
    }

    #[test]
    fn nothing_grows_without_a_receiver_rtt_sample() {
        let mut a = established();
        assert_eq!(a.after_read(ms(500), 200_000, MSS), None);
    }

    #[test]
    fn reading_more_than_last_rtt_grows_the_buffer_as_tcp_rcv_space_adjust() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS);
        // First window: space = 10·MSS = 14480; 20 segments read in one RTT.
        let copied = 20 * MSS;
        let rcvwin = 2 * copied + 16 * MSS; // 81072
        let grow = rcvwin * (copied - 10 * MSS) / (10 * MSS); // doubled reading → grow = rcvwin
        let want = (rcvwin + 2 * grow).min(RcvBufLimits::default().max_bytes / 2);
        assert_eq!(a.after_read(ms(50), copied, MSS), Some(want));
        assert_eq!(a.window_clamp(), want);
    }

    #[test]
    fn reading_no_more_than_last_rtt_starts_a_new_window_without_growth() {
        let mut a = established();
        a.on_data_with_timestamp(100, 50, MSS, MSS);
        assert_eq!(a.after_read(ms(60), 5 * MSS, MSS), None);
        // The next window starts at the read: 60 ms, 5 segments.
        assert_eq!(a.after_read(ms(100), 20 * MSS, MSS), None, "40 ms < one RTT");
        assert!(a.after_read(ms(110), 20 * MSS, MSS).is_some());
    }

    #[test]
    fn the_buffer_never_exceeds_tcp_rmem_max() {
        let mut a = established();
        a.on_data_with_timestamp(100, 10, MSS, MSS);
        let mut read = 0;
        for k in 1..40u64 {
            read += 4_000_000;
            a.after_read(ms(10 * k), read, MSS);
        }
        assert_eq!(a.rcvbuf_bytes(), 33_554_432);
        assert_eq!(a.window_clamp(), 16_777_216);
    }

    #[test]
    fn timestamp_rtt_is_a_minimum_biased_ewma_with_gain_one_eighth() {
        let mut a = established();
        a.on_data_with_timestamp(1, 80, MSS, MSS);
        a.on_data_with_timestamp(2, 40, MSS, MSS); // lower: taken at once
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(40)));
        a.on_data_with_timestamp(3, 120, MSS, MSS); // higher: 7/8·40 + 1/8·120 = 50
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(50)));
        a.on_data_with_timestamp(3, 500, MSS, MSS); // same TSecr: ignored
        a.on_data_with_timestamp(4, 500, 100, MSS); // shorter than one MSS: ignored
        assert_eq!(a.rcv_rtt(), Some(Duration::from_millis(50)));
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
