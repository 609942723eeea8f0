//! Endpoint configuration, defaulting to what a Linux 6.x host does out of the box.
//!
//! Sources: net/ipv4/tcp.c / tcp_ipv4.c sysctl defaults (tcp_sack=1, tcp_timestamps=1,
//! tcp_window_scaling=1, tcp_slow_start_after_idle=1, tcp_keepalive_time=7200 s,
//! tcp_keepalive_intvl=75 s, tcp_keepalive_probes=9, tcp_syn_retries=6, tcp_rmem/tcp_wmem maxima
//! 32 MiB / 4 MiB — `tcp_rmem[2]` is 32 MiB since Linux 6.16, commit "tcp: increase tcp_rmem[2]
//! to 32 MB", 6 MiB before; both shrink on hosts with little memory), include/net/tcp.h (TCP_RTO_MIN 200 ms, TCP_TIMEOUT_INIT 1 s, TCP_RTO_MAX
//! 120 s, TCP_ATO_MIN 40 ms, TCP_MAX_QUICKACKS 16, TCP_INIT_CWND 10, TCP_TIMEWAIT_LEN 60 s) and
//! RFC 6928 (IW10).
//!
//! Deviations (documented where used): the receive and send buffers are fixed sizes (no
//! autotuning), and TIME_WAIT lasts `time_wait` (1 s by default instead of Linux's 60 s, so
//! simulations do not carry closed sockets around).

use std::time::Duration;

use tcpvideo_model::cc::Params;

/// Keep-alive timing (Linux SO_KEEPALIVE with TCP_KEEPIDLE / TCP_KEEPINTVL / TCP_KEEPCNT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeepAliveConfig {
    /// Idle time before the first probe (Linux default 7200 s).
    pub idle: Duration,
    /// Time between unanswered probes (75 s).
    pub interval: Duration,
    /// Unanswered probes before the connection is reset (9).
    pub probes: u32,
}

impl Default for KeepAliveConfig {
    fn default() -> Self {
        KeepAliveConfig { idle: Duration::from_secs(7200), interval: Duration::from_secs(75), probes: 9 }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// MSS option advertised (1460 on Ethernet). Payload per segment is the smaller of both sides'
    /// MSS minus 12 bytes when timestamps are on (1448), as Linux.
    pub mss: u16,
    /// Initial congestion window in segments (RFC 6928, Linux TCP_INIT_CWND).
    pub initial_cwnd_segments: u64,
    /// Congestion control, by registry name (crates/model/src/cc).
    pub cc: String,
    pub cc_params: Params,
    /// Receive buffer. With autotuning (the default) this is `tcp_rmem[2]`, the most the buffer
    /// may grow to, and the window is the buffer times Linux's scaling ratio (½ until the first
    /// full-sized segment, then payload/truesize: 160/256 on a 1500-byte path, see rcvbuf.rs);
    /// without it (a fixed `SO_RCVBUF`: Linux's `sk_rcvbuf`, twice what the application asks)
    /// the buffer never grows and its window is the buffer times the same ratio (recv.rs
    /// `Receiver::for_config`).
    pub rcv_buf_bytes: u64,
    /// Linux `tcp_moderate_rcvbuf` (1): the buffer starts at `rcv_buf_initial_bytes` and grows
    /// once per receiver RTT (tcp_rcv_space_adjust). Scenario key `rcv_buf = "auto"`.
    pub rcv_buf_autotune: bool,
    /// `tcp_rmem[1]`, the buffer a new socket starts with when autotuning (131072).
    pub rcv_buf_initial_bytes: u64,
    /// How much unsent + unacknowledged data the application may queue.
    pub snd_buf_bytes: u64,
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    /// RTO floor (Linux TCP_RTO_MIN, 200 ms).
    pub min_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298 §2.1, Linux TCP_TIMEOUT_INIT = 1 s).
    pub initial_rto: Duration,
    /// RTO ceiling (Linux TCP_RTO_MAX, 120 s).
    pub max_rto: Duration,
    /// Minimum (and initial) delayed-ACK timeout (Linux TCP_ATO_MIN = 40 ms); the timeout then
    /// adapts as Linux's ATO does (see recv.rs).
    pub delayed_ack: Duration,
    /// The kernel's tick rate (CONFIG_HZ; 250 on Debian 12's kernel, where it was measured; 0:
    /// timers fire exactly when due, the RTO is not rounded to jiffies). Linux's delayed-ACK
    /// and retransmission timers (RTO, tail-loss probe, RACK reordering, zero-window probe) are
    /// jiffies `timer_list`s, so they fire on a tick, one tick after they are due at the
    /// earliest and on the next 8-jiffy boundary when 63 jiffies or more ahead (timers.rs
    /// `timer_wheel_fires_at`); `icsk_rto` is whole jiffies (rtt.rs). Not a scenario key.
    pub hz: u32,
    /// ACKs sent immediately at the start of a connection and after an idle period longer than
    /// the RTO (Linux quick-ack mode, TCP_MAX_QUICKACKS = 16).
    pub quickack_segments: u32,
    /// RFC 5681 §4.1 / Linux tcp_slow_start_after_idle.
    pub slow_start_after_idle: bool,
    /// Keep-alive probes; `None` = SO_KEEPALIVE off (the Linux default).
    pub keepalive: Option<KeepAliveConfig>,
    /// Duplicate-ACK threshold (Linux initial tcp_reordering = 3).
    pub dupack_threshold: u32,
    // ---- additive extensions (see /work/notes/tcp_api.md) ----
    /// Nagle's algorithm with Minshall's modification, as Linux without TCP_NODELAY (default on).
    pub nagle: bool,
    /// SYN (and SYN/ACK) retransmissions before giving up (Linux tcp_syn_retries = 6).
    pub syn_retries: u32,
    /// Consecutive retransmission timeouts of data before the connection is reset (Linux
    /// tcp_retries2 = 15, about 924 s with the default RTO bounds; we count expirations).
    pub retries2: u32,
    /// TIME_WAIT duration (Linux 60 s; shortened by default, see module doc).
    pub time_wait: Duration,
    /// Send D-SACK blocks for duplicate segments (RFC 2883, Linux tcp_dsack = 1).
    pub dsack: bool,
    /// RACK-TLP loss detection (RFC 8985; Linux tcp_recovery = 1, tcp_early_retrans = 3, the
    /// default). Needs SACK; when off (or SACK is off) losses are found by DupThresh (RFC 6675)
    /// and NewReno, and tail losses wait for the RTO.
    pub rack_tlp: bool,
    /// Tail-loss probes alone (RFC 8985 §7; Linux net.ipv4.tcp_early_retrans = 3, the default; 0
    /// turns them off). Linux arms a probe whenever SACK is on, whatever `tcp_recovery` says, so
    /// `tlp = false` with `rack_tlp` on is a Linux server with TLP off — the only TLP-off server
    /// since 6.17, which cannot turn RACK off. The simulator probes only in RACK mode
    /// (`rack_tlp` and SACK): `rack_tlp = false` models the pre-RACK, pre-TLP stack of seed 000.
    pub tlp: bool,
    /// Detect spurious retransmission timeouts and undo their window reduction (Linux
    /// tcp_frto = 2 and the timestamp-based undo of tcp_try_undo_loss; RFC 5682 §3 step 3b with
    /// SACK, RFC 3522 Eifel detection with timestamps).
    pub frto: bool,
    /// Run the after-idle cwnd restart for algorithms that set cwnd themselves (BBR) too. Off:
    /// today's Linux skips `tcp_cwnd_restart` when the algorithm has `cong_control`. On: the
    /// older kernels without that check (an experiment knob, `ethle_testbed`'s
    /// `source_cwnd_restart`); the algorithm then regrows cwnd from the restart window.
    pub cwnd_restart_with_cong_control: bool,
    /// New data leaves in GSO packets as Linux sends it (tso.rs): sized to ~1 ms at the pacing
    /// rate (`tcp_tso_autosize`), deferred while an ACK is imminent and little of the window is
    /// free (`tcp_tso_should_defer`), PSH on each packet's last segment, one pacing check per
    /// packet. Linux always does this (software GSO); off: one segment at a time, PSH only at
    /// the end of the application's data (ns-3 style). Scenario key `tso`.
    pub tso: bool,
    /// SACK compression (Linux ≥ 4.20, `net.ipv4.tcp_comp_sack_nr`, default 44; 0 turns it
    /// off): while out-of-order data is queued, a receiver sends the first three duplicate ACKs
    /// at each RCV.NXT at once and then holds further ones — at most this many — for the
    /// compressed-ACK timer ([`TcpConfig::comp_sack_delay`]). recv.rs `Receiver::ooo_ack_now`.
    pub comp_sack_nr: u32,
    /// Longest hold of a compressed ACK (`net.ipv4.tcp_comp_sack_delay_ns`, 1 ms); Linux holds
    /// it for min(this, RTT/20).
    pub comp_sack_delay: Duration,
    /// Slack of the compressed-ACK hrtimer (`net.ipv4.tcp_comp_sack_slack_ns`, 100 µs).
    pub comp_sack_slack: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            initial_cwnd_segments: 10,
            cc: default_cc().to_string(),
            cc_params: Params::default(),
            rcv_buf_bytes: 32 * 1024 * 1024,
            rcv_buf_autotune: true,
            rcv_buf_initial_bytes: 131_072,
            snd_buf_bytes: 4 * 1024 * 1024,
            sack: true,
            timestamps: true,
            window_scaling: true,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(120),
            delayed_ack: Duration::from_millis(40),
            hz: 250,
            quickack_segments: 16,
            slow_start_after_idle: true,
            keepalive: None,
            dupack_threshold: 3,
            nagle: true,
            syn_retries: 6,
            retries2: 15,
            time_wait: Duration::from_secs(1),
            dsack: true,
            rack_tlp: true,
            tlp: true,
            frto: true,
            cwnd_restart_with_cong_control: false,
            tso: true,
            comp_sack_nr: 44,
            comp_sack_delay: Duration::from_millis(1),
            comp_sack_slack: Duration::from_micros(100),
        }
    }
}

/// Linux's default congestion control (`net.ipv4.tcp_congestion_control`, CUBIC since 2.6.19).
/// The one definition: the scenario reader and [`TcpConfig::default`] both use it.
pub fn default_cc() -> &'static str {
    "cubic"
}
