//! One TCP connection endpoint, behaving like Linux 6.x: the state machine of RFC 9293 with the
//! sender and receiver machinery Linux runs by default.
//!
//! Where things live: sequence arithmetic in `seq.rs`, RTT/RTO in `rtt.rs`, the SACK scoreboard
//! and RFC 6675 pipe in `scoreboard.rs`, PRR in `prr.rs`, delivery-rate sampling in `rate.rs`,
//! the receive queue / SACK generation / window / delayed ACK in `recv.rs`. This file glues them
//! into Linux's control flow:
//!
//! * **Handshake** (tcp_connect, tcp_rcv_synsent_state_process, tcp_rcv_state_process): SYN with
//!   MSS, SACK-permitted, timestamps and window scale; options are used only if both sides sent
//!   them. SYN/SYN-ACK retransmitted on timeout (1 s, doubling, `syn_retries`); if the handshake
//!   had to be retransmitted and gave no RTT sample, the RTO falls back to 3 s and the initial
//!   window to one segment (RFC 6298 §5.7, Linux tcp_init_transfer with total_retrans > 1... we use
//!   ≥ 1, deviation).
//! * **Sending** (tcp_write_xmit): lost segments first (NextSeg rule 1), then new data, while the
//!   packets in flight are below the congestion window (counted in packets, as Linux), the segment
//!   fits the peer's window, Nagle/Minshall allows a sub-MSS segment, and pacing permits.
//! * **ACK processing** (tcp_ack, tcp_fastretrans_alert, tcp_cong_control): SACK tagging,
//!   cumulative ACK, RTT sample (oldest newly ACKed, not previously SACKed segment when the ACK
//!   covers no retransmitted data, else the oldest newly SACKed never-retransmitted one, else the
//!   timestamp echo when snd_una advanced; the CC gets the newest segment's RTT), then the loss state machine Open/Disorder → Recovery
//!   (PRR) and Loss (after RTO), then the congestion control's `on_ack` with the delivery-rate
//!   sample. In the Loss state the CC grows the window normally (`in_recovery = false`) because
//!   Linux's tcp_cong_control only holds cwnd during CWR/Recovery.
//! * **Timers**: RTO (tcp_retransmit_timer: all un-SACKed data marked lost, cwnd to 1, ssthresh
//!   reduced once per episode, head retransmitted, exponential backoff), persist / zero-window
//!   probes (tcp_probe_timer, SND.UNA − 1 probe, backoff), delayed ACK, keep-alive
//!   (tcp_keepalive_timer), pacing release, TIME_WAIT.
//! * **Slow start after idle** (tcp_slow_start_after_idle_check / tcp_cwnd_restart): checked when
//!   new data is about to be sent with nothing in flight (Linux checks when the application queues
//!   the data; the engine calls `flush` right after `send`, so the instant is the same).
//!   Separately, every data segment sent with nothing in flight signals `CA_EVENT_TX_START`
//!   (tcp_event_data_sent) to the CC ([`CongestionControl::on_tx_start`]), whatever the idle time.
//!
//! * **RACK-TLP** (tcp_recovery.c, tcp_send_loss_probe; on by default as in Linux, `rack_tlp`):
//!   with SACK, losses are marked by RACK (`rack.rs`, `Scoreboard::rack_detect`) instead of
//!   DupThresh, and a tail-loss probe is scheduled in the Open state. Without SACK (or with
//!   `rack_tlp = false`) the classic RFC 6675 DupThresh / NewReno rules apply.
//!
//! * **Spurious RTO undo** (tcp_process_loss / tcp_try_undo_loss, `frto`): timestamps (Eifel) or
//!   F-RTO step 3b with SACK; the window goes back to its pre-RTO value. A fast recovery is undone
//!   at its end when all its retransmissions were D-SACKed or the full ACK predates them
//!   (tcp_try_undo_recovery).
//!
//! * **Application-limited senders** (tcp_cwnd_validate / tcp_cwnd_application_limited): the
//!   window decays towards what is used after an RTO without being filled.
//! * **Reordering**: seen when never-retransmitted data is delivered below earlier SACKs; RACK then
//!   keeps its min_rtt/4 reordering window.
//!
//! Not modelled (deviations from Linux, mentioned where they matter): F-RTO step 2b (new data
//! after the first post-RTO ACK), partial undo during recovery (tcp_try_undo_partial /
//! tcp_try_undo_dsack), the D-SACK growth of RACK's reordering window and the adaptation of
//! DupThresh (tp->reordering) for the non-RACK path, TSO/GSO segment aggregation, TCP small
//! queues, receive-buffer autotuning, ECN, urgent data, the CWR state as a distinct state (a
//! probe-repaired loss reduces cwnd at once, as Linux's CWR ends there).

use std::time::Duration;

use tcpvideo_model::cc::{self, AckEvent, AppInfo, CcConfig, CongestionControl, CongestionSignal};
use tcpvideo_model::Time;

use super::config::TcpConfig;
use super::log::{RetransmitCause, TcpLogEvent};
use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateSampler;
use super::recv::Receiver;
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SegRec};
use super::seq::{to_wire, unwrap};
use super::stats::TcpStats;
use crate::packet::{flags, NodeId, Packet, TcpOptions, MAX_SACK_BLOCKS};

/// Where an endpoint lives: node, IPv4 address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addr {
    pub node: NodeId,
    pub ip: u32,
    pub port: u16,
}

/// Socket notifications for the application (drained with [`TcpEndpoint::take_events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketEvent {
    Connected,
    /// New in-order data is readable.
    Readable,
    /// Send-buffer space became available after a short `send`.
    Writable,
    /// Everything the application queued so far is acknowledged.
    AllAcked,
    /// The peer's FIN arrived (end of stream).
    PeerClosed,
    /// The connection is fully closed.
    Closed,
    /// The connection was reset (RST received, keep-alive or SYN retries exhausted).
    Reset,
}

/// RFC 9293 connection states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpState {
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

/// Linux `icsk_ca_state` (CWR is not used: no ECN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CaState {
    Open,
    Disorder,
    Recovery,
    Loss,
}

/// What kind of segment [`TcpEndpoint::emit`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Syn,
    SynAck,
    /// Data/FIN segment of a scoreboard record.
    Data { start: u64, len: u32, fin: bool },
    /// Pure ACK at SND.NXT.
    Ack,
    /// Zero-window or keep-alive probe: SND.UNA − 1, no data.
    Probe,
    Rst,
}

pub struct TcpEndpoint {
    cfg: TcpConfig,
    flow: u32,
    local: Addr,
    remote: Addr,
    state: TcpState,

    iss: u32,
    irs: u32,
    ts_offset: u32,
    syn_sent_at: Time,
    syn_retransmits: u32,

    // Negotiated.
    snd_mss: u64,
    ts_ok: bool,
    sack_ok: bool,
    /// Shift applied to the windows the peer sends.
    snd_wscale: u8,

    // Send side, in stream offsets (0 = our SYN, data from 1).
    snd_una: u64,
    snd_nxt: u64,
    /// One past the last byte the application queued.
    app_end: u64,
    fin_queued: bool,
    fin_sent: bool,
    snd_wnd: u64,
    snd_wl1: u64,
    sb: Scoreboard,
    rtt: RttEstimator,
    rate: RateSampler,
    prr: Prr,
    prr_cwnd_pkts: u64,
    cc: Box<dyn CongestionControl>,
    cc_custom: bool,
    cc_mss: u64,
    /// Both sides sent the window-scale option.
    ws_ok: bool,
    ca: CaState,
    high_seq: u64,
    first_rexmit_pending: bool,
    cwnd_clamp: Option<u64>,
    lsndtime: Time,
    next_pace_at: Time,
    snd_sml: u64,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    is_cwnd_limited: bool,
    /// Most packets out while not cwnd-limited (Linux `snd_cwnd_used`) and when the window was
    /// last full (Linux `snd_cwnd_stamp`).
    cwnd_used: u64,
    cwnd_stamp: Time,
    rack: Rack,
    /// Time of the first retransmission of the current RTO episode (Linux `retrans_stamp`),
    /// for the timestamp-based spurious-RTO check.
    retrans_stamp: Option<Time>,
    /// An RTO episode whose reduction may still be undone (Linux `undo_marker` set, `frto`).
    undo_possible: bool,
    /// cwnd before the RTO / recovery episode (Linux `prior_cwnd`), restored by an undo.
    undo_prior_cwnd: u64,
    /// ssthresh before it (Linux `prior_ssthresh` = tcp_current_ssthresh), restored by an undo.
    undo_prior_ssthresh: u64,
    /// Retransmissions of the recovery episode not yet reported unnecessary by a D-SACK (Linux
    /// `undo_retrans`): at the start the retransmissions still outstanding (a recovery that
    /// starts on the ACK ending the previous one inherits them), -1 if none (Linux
    /// tcp_init_undo), then +1 per retransmission (a -1 becomes 1).
    undo_retrans: i64,
    /// Data transmissions so far (orders segments sent at the same instant, for RACK).
    xmit_count: u64,
    /// Highest SND.NXT when a tail-loss probe was sent; 0 = no probe outstanding.
    tlp_high_seq: u64,
    tlp_retrans: bool,

    // Timers.
    rto_at: Option<Time>,
    persist_at: Option<Time>,
    keepalive_at: Option<Time>,
    pace_at: Option<Time>,
    timewait_at: Option<Time>,
    /// RACK reordering-window timer.
    reo_at: Option<Time>,
    /// Tail-loss-probe timer (PTO).
    tlp_at: Option<Time>,
    persist_backoff: u32,
    ka_probes_out: u32,
    last_rcv_at: Time,

    // Receive side.
    rcv: Receiver,
    ts_recent: u32,
    window_update_pending: bool,
    zero_window_advertised: bool,

    ip_id: u16,
    stats: TcpStats,
    events: Vec<SocketEvent>,
    writable_wanted: bool,
    all_acked_reported: bool,
}

impl std::fmt::Debug for TcpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpEndpoint")
            .field("flow", &self.flow)
            .field("local", &self.local)
            .field("state", &self.state)
            .field("snd_una", &self.snd_una)
            .field("snd_nxt", &self.snd_nxt)
            .field("cwnd", &self.cc.cwnd())
            .finish()
    }
}

fn wscale_for(buf: u64) -> u8 {
    let mut s = 0u8;
    while s < 14 && (buf >> s) > 65_535 {
        s += 1;
    }
    s
}

/// Per-connection seed for the congestion control's randomness: the ISN (drawn by the engine
/// from its seeded RNG) and the flow id, mixed by SplitMix64's finalizer. Deterministic.
fn cc_seed(isn: u32, flow: u32) -> u64 {
    let mut z = ((isn as u64) << 32 | flow as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl TcpEndpoint {
    fn new(cfg: &TcpConfig, flow: u32, local: Addr, remote: Addr, isn: u32, state: TcpState) -> Result<TcpEndpoint, String> {
        let guess_mss = cfg.mss as u64 - if cfg.timestamps { 12 } else { 0 };
        let cc_cfg = CcConfig { mss_bytes: guess_mss, initial_cwnd_segments: cfg.initial_cwnd_segments };
        let mut cc = cc::build(&cfg.cc, &cc_cfg, &cfg.cc_params).map_err(|e| e.to_string())?;
        cc.on_init(cc_seed(isn, flow));
        if cfg.mss < 64 {
            return Err(format!("mss {} too small", cfg.mss));
        }
        let mut rcv = Receiver::for_config(cfg, guess_mss);
        rcv.wscale = if cfg.window_scaling { wscale_for(cfg.rcv_buf_bytes) } else { 0 };
        Ok(TcpEndpoint {
            flow,
            local,
            remote,
            state,
            iss: isn,
            irs: 0,
            ts_offset: isn.rotate_left(13),
            syn_sent_at: Time::ZERO,
            syn_retransmits: 0,
            snd_mss: guess_mss,
            ts_ok: false,
            sack_ok: false,
            snd_wscale: 0,
            snd_una: 0,
            snd_nxt: 0,
            app_end: 1,
            fin_queued: false,
            fin_sent: false,
            snd_wnd: 0,
            snd_wl1: 0,
            sb: Scoreboard::new(guess_mss),
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            rate: RateSampler::default(),
            prr: Prr::default(),
            prr_cwnd_pkts: 0,
            cc,
            cc_custom: false,
            cc_mss: guess_mss,
            ws_ok: false,
            ca: CaState::Open,
            high_seq: 0,
            first_rexmit_pending: false,
            cwnd_clamp: None,
            lsndtime: Time::ZERO,
            next_pace_at: Time::ZERO,
            snd_sml: 0,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            is_cwnd_limited: false,
            cwnd_used: 0,
            cwnd_stamp: Time::ZERO,
            rack: Rack::default(),
            retrans_stamp: None,
            undo_possible: false,
            undo_prior_cwnd: 0,
            undo_prior_ssthresh: 0,
            undo_retrans: 0,
            xmit_count: 0,
            tlp_high_seq: 0,
            tlp_retrans: false,
            reo_at: None,
            tlp_at: None,
            rto_at: None,
            persist_at: None,
            keepalive_at: None,
            pace_at: None,
            timewait_at: None,
            persist_backoff: 0,
            ka_probes_out: 0,
            last_rcv_at: Time::ZERO,
            rcv,
            ts_recent: 0,
            window_update_pending: false,
            zero_window_advertised: false,
            ip_id: (isn >> 16) as u16,
            stats: TcpStats::default(),
            events: Vec::with_capacity(8),
            writable_wanted: false,
            all_acked_reported: true,
            cfg: cfg.clone(),
        })
    }

    /// An active opener (client): sends the SYN.
    pub fn connect(cfg: &TcpConfig, flow: u32, local: Addr, remote: Addr, isn: u32, now: Time, out: &mut Vec<Packet>) -> Result<TcpEndpoint, String> {
        let mut ep = TcpEndpoint::new(cfg, flow, local, remote, isn, TcpState::SynSent)?;
        ep.snd_nxt = 1;
        ep.syn_sent_at = now;
        let mut log = Vec::new();
        ep.emit(now, out, &mut log, Kind::Syn);
        ep.rto_at = Some(now + ep.rtt.backed_off_rto());
        Ok(ep)
    }

    /// A passive opener in LISTEN for exactly this flow.
    pub fn listen(cfg: &TcpConfig, flow: u32, local: Addr, remote: Addr, isn: u32) -> Result<TcpEndpoint, String> {
        TcpEndpoint::new(cfg, flow, local, remote, isn, TcpState::Listen)
    }

    // ------------------------------------------------------------------ accessors

    pub fn readable_bytes(&self) -> u64 {
        self.rcv.unread
    }
    pub fn send_buffer_free(&self) -> u64 {
        if self.fin_queued {
            return 0;
        }
        let queued = self.app_end - self.snd_una.max(1);
        self.cfg.snd_buf_bytes.saturating_sub(queued)
    }
    pub fn unacked_bytes(&self) -> u64 {
        self.sb.packets_out.bytes
    }
    pub fn state(&self) -> TcpState {
        self.state
    }
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }
    /// Effective congestion window: CC (or PRR during fast recovery) capped by the clamp.
    pub fn cwnd_bytes(&self) -> u64 {
        let w = if self.ca == CaState::Recovery && !self.cc.owns_recovery() {
            self.prr_cwnd_pkts * self.snd_mss
        } else {
            self.cc.cwnd()
        };
        w.min(self.cwnd_clamp.unwrap_or(u64::MAX))
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    pub fn ssthresh_bytes(&self) -> u64 {
        self.cc.ssthresh()
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.sb.in_flight_bytes()
    }
    /// Additive: current RTO (with backoff).
    pub fn rto(&self) -> Duration {
        self.rtt.backed_off_rto()
    }
    /// Additive: payload bytes per full segment (negotiated MSS minus options).
    pub fn mss_bytes(&self) -> u64 {
        self.snd_mss
    }
    /// Additive: the peer's current receive window as last advertised.
    pub fn peer_window_bytes(&self) -> u64 {
        self.snd_wnd
    }
    /// Additive: the congestion control's state label (for time series).
    pub fn cc_state(&self) -> &'static str {
        match self.ca {
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
            _ => self.cc.state_label(),
        }
    }
    /// Additive: replace the congestion control (tests, experiments). Kept across the handshake.
    /// The connection's seed is passed to it ([`CongestionControl::on_init`]).
    pub fn set_cc(&mut self, mut cc: Box<dyn CongestionControl>) {
        cc.on_init(cc_seed(self.iss, self.flow));
        self.cc = cc;
        self.cc_custom = true;
    }

    // ------------------------------------------------------------------ application side

    /// Queue up to `bytes` for sending; returns how many the send buffer accepted.
    pub fn send(&mut self, bytes: u64) -> u64 {
        if self.fin_queued || matches!(self.state, TcpState::Closed | TcpState::TimeWait | TcpState::Listen) {
            return 0;
        }
        let n = bytes.min(self.send_buffer_free());
        if n < bytes {
            self.writable_wanted = true;
        }
        if n > 0 {
            self.app_end += n;
            self.all_acked_reported = false;
        }
        n
    }

    /// Consume up to `max_bytes` of in-order received data; may open the window.
    pub fn recv(&mut self, max_bytes: u64) -> u64 {
        let n = self.rcv.read(max_bytes);
        self.stats.bytes_read += n;
        if n > 0 && self.rcv.window_update_due() && !self.rcv.fin_received {
            self.window_update_pending = true;
        }
        n
    }

    /// Send what the window allows (call after `send`, `recv`, `close`, `set_cwnd_clamp`).
    pub fn flush(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let before = self.stats.segments_sent;
        // Linux tcp_recvmsg: tcp_rcv_space_adjust, then tcp_cleanup_rbuf's window update.
        let clamp = self.rcv.window_clamp();
        self.rcv.space_adjust(now);
        if self.rcv.window_clamp() > clamp && self.rcv.window_update_due() && !self.rcv.fin_received {
            self.window_update_pending = true;
        }
        self.try_send(now, out, log);
        if self.window_update_pending {
            self.window_update_pending = false;
            if self.can_ack() && self.stats.segments_sent == before {
                self.emit(now, out, log, Kind::Ack);
            }
        }
    }

    /// Close after queued data (FIN).
    pub fn close(&mut self) {
        self.fin_queued = true;
        match self.state {
            TcpState::Established => self.state = TcpState::FinWait1,
            // The handshake completes first; `establish` then moves to FIN_WAIT_1.
            TcpState::SynReceived => {}
            TcpState::CloseWait => self.state = TcpState::LastAck,
            TcpState::Listen | TcpState::SynSent => {
                self.state = TcpState::Closed;
                self.clear_timers();
                self.events.push(SocketEvent::Closed);
            }
            _ => {}
        }
    }

    pub fn set_cwnd_clamp(&mut self, clamp_bytes: Option<u64>) {
        self.cwnd_clamp = clamp_bytes.map(|c| c.max(self.snd_mss));
    }

    pub fn set_app_info(&mut self, info: &AppInfo) {
        self.cc.on_app_info(info);
    }

    pub fn take_events(&mut self, into: &mut Vec<SocketEvent>) {
        into.append(&mut self.events);
    }

    // ------------------------------------------------------------------ timers

    pub fn next_timer(&self) -> Option<Time> {
        [self.rto_at, self.persist_at, self.rcv.delack_at, self.keepalive_at, self.pace_at, self.timewait_at, self.reo_at, self.tlp_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn clear_timers(&mut self) {
        self.rto_at = None;
        self.persist_at = None;
        self.rcv.delack_at = None;
        self.keepalive_at = None;
        self.pace_at = None;
        self.timewait_at = None;
        self.reo_at = None;
        self.tlp_at = None;
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.timewait_at.is_some_and(|t| t <= now) {
            self.state = TcpState::Closed;
            self.clear_timers();
            self.events.push(SocketEvent::Closed);
            return;
        }
        if self.state == TcpState::Closed {
            return;
        }
        // Linux keeps RTO, TLP and RACK timers in one slot; the TLP is armed no later than the
        // RTO, so when both are due the probe goes first (and re-arms the RTO).
        if self.tlp_at.is_some_and(|t| t <= now) {
            self.tlp_at = None;
            self.on_tlp(now, out, log);
        }
        if self.reo_at.is_some_and(|t| t <= now) {
            self.reo_at = None;
            self.on_reo_timeout(now, out, log);
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now, out, log);
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            self.on_persist(now, out, log);
        }
        if self.keepalive_at.is_some_and(|t| t <= now) {
            self.keepalive_at = None;
            self.on_keepalive(now, out, log);
            if self.state == TcpState::Closed {
                return;
            }
        }
        if self.pace_at.is_some_and(|t| t <= now) {
            self.pace_at = None;
            self.try_send(now, out, log);
        }
        if self.rcv.delack_at.is_some_and(|t| t <= now) {
            self.rcv.delack_at = None;
            self.rcv.on_delack_timer(self.cfg.delayed_ack, self.rtt.rto());
            if self.can_ack() {
                self.emit(now, out, log, Kind::Ack);
            }
        }
    }

    fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        match self.state {
            TcpState::SynSent | TcpState::SynReceived => {
                if self.syn_retransmits >= self.cfg.syn_retries {
                    self.reset(now, out, log, false);
                    return;
                }
                self.syn_retransmits += 1;
                self.rtt.on_timeout();
                self.stats.rto_count += 1;
                self.stats.retrans_timeout += 1;
                let rto = self.rtt.backed_off_rto();
                log.push(TcpLogEvent::Rto { at: now, flow: self.flow, from_node: self.local.node, backoff: self.rtt.backoff, rto });
                log.push(TcpLogEvent::Retransmit {
                    at: now, flow: self.flow, from_node: self.local.node, seq: self.iss, len: 0, cause: RetransmitCause::SynTimeout,
                });
                let kind = if self.state == TcpState::SynSent { Kind::Syn } else { Kind::SynAck };
                self.syn_sent_at = now;
                self.emit(now, out, log, kind);
                self.rto_at = Some(now + rto);
            }
            TcpState::Listen | TcpState::Closed | TcpState::TimeWait => {}
            _ => {
                if self.sb.is_empty() {
                    return;
                }
                if self.rtt.backoff >= self.cfg.retries2 {
                    // Linux tcp_write_timeout: too many retransmissions, give up.
                    self.reset(now, out, log, true);
                    return;
                }
                let in_flight = self.sb.in_flight_bytes();
                let new_episode = !matches!(self.ca, CaState::Recovery | CaState::Loss) || self.high_seq <= self.snd_una;
                if new_episode {
                    self.undo_prior_cwnd = self.cc.cwnd();
                    self.undo_prior_ssthresh = self.current_ssthresh();
                    self.cc.on_congestion_event(now, CongestionSignal::Timeout, in_flight);
                } else {
                    // Linux tcp_enter_loss: ssthresh already reduced in this episode; cwnd → 1;
                    // the algorithm's set_state(TCP_CA_Loss) still runs.
                    self.cc.on_timeout_in_loss_episode(now, in_flight);
                    self.cc.set_cwnd(self.snd_mss);
                }
                self.sb.mark_all_lost();
                self.retrans_stamp = None;
                self.undo_possible = self.cfg.frto;
                self.tlp_at = None;
                self.tlp_high_seq = 0;
                self.reo_at = None;
                self.ca = CaState::Loss;
                self.high_seq = self.snd_nxt;
                self.rtt.on_timeout();
                self.stats.rto_count += 1;
                let rto = self.rtt.backed_off_rto();
                log.push(TcpLogEvent::Rto { at: now, flow: self.flow, from_node: self.local.node, backoff: self.rtt.backoff, rto });
                self.rto_at = Some(now + rto);
                self.next_pace_at = now;
                self.try_send(now, out, log);
            }
        }
    }

    fn probe_interval(&self) -> Duration {
        let base = self.rtt.rto().max(self.cfg.min_rto).as_nanos();
        Duration::from_nanos((base << self.persist_backoff.min(31)).min(self.cfg.max_rto.as_nanos()) as u64)
    }

    fn on_persist(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.sb.packets_out.pkts > 0 || !self.has_data_to_send() {
            self.persist_backoff = 0;
            return;
        }
        if self.window_allows_next() {
            self.persist_backoff = 0;
            self.try_send(now, out, log);
            return;
        }
        let wnd_end = self.snd_una + self.snd_wnd;
        if wnd_end > self.snd_nxt && self.snd_nxt < self.app_end {
            // Linux tcp_write_wakeup: a window smaller than the next segment is filled with data.
            let len = (wnd_end - self.snd_nxt).min(self.app_end - self.snd_nxt).min(self.snd_mss);
            self.send_new_segment(now, len, false, out, log);
            self.stats.zero_window_probes += 1;
            log.push(TcpLogEvent::ZeroWindowProbe { at: now, flow: self.flow, from_node: self.local.node });
            // Data is in flight now: the RTO takes over (Linux tcp_send_probe0).
            self.persist_backoff = 0;
            return;
        }
        self.emit(now, out, log, Kind::Probe);
        self.stats.zero_window_probes += 1;
        log.push(TcpLogEvent::ZeroWindowProbe { at: now, flow: self.flow, from_node: self.local.node });
        self.persist_backoff += 1;
        self.persist_at = Some(now + self.probe_interval());
    }

    fn on_keepalive(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let Some(ka) = self.cfg.keepalive else { return };
        if !matches!(self.state, TcpState::Established | TcpState::CloseWait) {
            return;
        }
        if self.sb.packets_out.pkts > 0 || self.has_data_to_send() {
            self.keepalive_at = Some(now + ka.idle);
            return;
        }
        let idle = now.saturating_since(self.last_rcv_at);
        if idle >= ka.idle {
            if self.ka_probes_out >= ka.probes {
                self.reset(now, out, log, true);
                return;
            }
            self.emit(now, out, log, Kind::Probe);
            self.ka_probes_out += 1;
            self.stats.keepalive_probes += 1;
            log.push(TcpLogEvent::KeepAliveProbe { at: now, flow: self.flow, from_node: self.local.node });
            self.keepalive_at = Some(now + ka.interval);
        } else {
            self.keepalive_at = Some(self.last_rcv_at + ka.idle);
        }
    }

    fn reset(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>, send_rst: bool) {
        if send_rst {
            self.emit(now, out, log, Kind::Rst);
        }
        self.state = TcpState::Closed;
        self.clear_timers();
        self.events.push(SocketEvent::Reset);
    }

    // ------------------------------------------------------------------ network side

    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.state == TcpState::Closed {
            // The socket is gone: the host answers with a reset (RFC 9293 §3.10.7.1), e.g. a
            // FIN retransmitted after our (shortened) TIME_WAIT ended.
            if !pkt.has(flags::RST) && self.stats.established_at.is_some() {
                self.emit(now, out, log, Kind::Rst);
            }
            return;
        }
        self.last_rcv_at = now;
        self.ka_probes_out = 0;
        if pkt.has(flags::RST) {
            if self.state != TcpState::Listen {
                self.state = TcpState::Closed;
                self.clear_timers();
                self.events.push(SocketEvent::Reset);
            }
            return;
        }
        match self.state {
            TcpState::Listen => {
                if pkt.has(flags::SYN) && !pkt.has(flags::ACK) {
                    self.irs = pkt.seq;
                    self.negotiate(&pkt.options, true);
                    self.rcv.rcv_nxt = 1;
                    self.snd_wnd = pkt.window as u64; // SYN windows are never scaled
                    self.snd_nxt = 1;
                    self.state = TcpState::SynReceived;
                    self.syn_sent_at = now;
                    if let Some((tsval, _)) = pkt.options.timestamps {
                        self.ts_recent = tsval;
                    }
                    self.emit(now, out, log, Kind::SynAck);
                    self.rto_at = Some(now + self.rtt.backed_off_rto());
                }
                return;
            }
            TcpState::SynSent => {
                if pkt.has(flags::SYN) && pkt.has(flags::ACK) && pkt.ack == to_wire(self.iss, 1) {
                    self.irs = pkt.seq;
                    self.negotiate(&pkt.options, false);
                    self.rcv.rcv_nxt = 1;
                    self.snd_wnd = pkt.window as u64;
                    self.snd_wl1 = 0;
                    self.snd_una = 1;
                    if let Some((tsval, _)) = pkt.options.timestamps {
                        self.ts_recent = tsval;
                    }
                    self.handshake_sample(now, pkt);
                    self.establish(now);
                    self.emit(now, out, log, Kind::Ack);
                    self.try_send(now, out, log);
                }
                return;
            }
            TcpState::SynReceived => {
                if pkt.has(flags::SYN) && !pkt.has(flags::ACK) {
                    // Our SYN/ACK was lost or is late: answer again.
                    self.emit(now, out, log, Kind::SynAck);
                    return;
                }
                if pkt.has(flags::ACK) && pkt.ack == to_wire(self.iss, 1) {
                    self.snd_una = 1;
                    self.handshake_sample(now, pkt);
                    self.establish(now);
                    self.snd_wnd = (pkt.window as u64) << self.snd_wscale;
                    self.snd_wl1 = unwrap(self.irs, self.rcv.rcv_nxt, pkt.seq).max(0) as u64;
                    // Fall through: the ACK may carry data.
                } else {
                    return;
                }
            }
            _ => {}
        }
        self.on_segment(now, pkt, out, log);
    }

    /// Options both sides agree on (RFC 7323 §2.2/§3.2, RFC 2018 §2).
    fn negotiate(&mut self, o: &TcpOptions, passive: bool) {
        let _ = passive;
        let peer_mss = o.mss.unwrap_or(536) as u64;
        self.ts_ok = self.cfg.timestamps && o.timestamps.is_some();
        self.sack_ok = self.cfg.sack && o.sack_permitted;
        match (self.cfg.window_scaling, o.window_scale) {
            (true, Some(s)) => {
                self.snd_wscale = s.min(14);
                self.ws_ok = true;
            }
            _ => {
                self.snd_wscale = 0;
                self.rcv.wscale = 0;
            }
        }
        let mss = peer_mss.min(self.cfg.mss as u64) - if self.ts_ok { 12 } else { 0 };
        self.snd_mss = mss;
        self.sb.set_mss(mss);
        self.rcv = {
            let mut r = Receiver::for_config(&self.cfg, self.cfg.mss as u64 - if self.ts_ok { 12 } else { 0 });
            r.wscale = self.rcv.wscale;
            r.grow_on_ooo = self.sack_ok;
            r
        };
        if !self.cc_custom && mss != self.cc_mss {
            self.cc_mss = mss;
            let cc_cfg = CcConfig { mss_bytes: mss, initial_cwnd_segments: self.cfg.initial_cwnd_segments };
            if let Ok(mut c) = cc::build(&self.cfg.cc, &cc_cfg, &self.cfg.cc_params) {
                c.on_init(cc_seed(self.iss, self.flow));
                self.cc = c;
            }
        }
    }

    fn handshake_sample(&mut self, now: Time, pkt: &Packet) {
        let sample = if self.syn_retransmits == 0 {
            Some(now - self.syn_sent_at)
        } else {
            self.ts_sample(now, pkt)
        };
        if let Some(s) = sample {
            self.stats.handshake_rtt = Some(s);
            self.rtt.on_sample(s, 1, 1);
            self.stats.srtt = self.rtt.srtt();
            self.stats.min_rtt = self.rtt.min_rtt();
        }
    }

    fn establish(&mut self, now: Time) {
        self.state = if self.fin_queued { TcpState::FinWait1 } else { TcpState::Established };
        self.stats.established_at = Some(now);
        self.lsndtime = now;
        self.cwnd_stamp = now;
        self.rto_at = None;
        if self.syn_retransmits > 0 {
            // RFC 6298 §5.7 / RFC 5681 §3.1: a lost SYN means a 1-segment initial window.
            self.rtt.fallback_after_syn_loss();
            self.cc.set_cwnd(self.snd_mss);
        }
        if let Some(ka) = self.cfg.keepalive {
            self.keepalive_at = Some(now + ka.idle);
        }
        self.rcv.on_established(now);
        self.events.push(SocketEvent::Connected);
        self.stats.max_cwnd_bytes = self.stats.max_cwnd_bytes.max(self.cwnd_bytes());
    }

    fn ts_val(&self, now: Time) -> u32 {
        // Linux TSval: a millisecond clock with a per-connection random offset.
        ((now.as_nanos() / 1_000_000) as u32).wrapping_add(self.ts_offset)
    }

    fn ts_sample(&self, now: Time, pkt: &Packet) -> Option<Duration> {
        if !self.ts_ok {
            return None;
        }
        let (_, ecr) = pkt.options.timestamps?;
        if ecr == 0 {
            return None;
        }
        let ms = self.ts_val(now).wrapping_sub(ecr);
        if ms > 1 << 30 {
            return None;
        }
        Some(Duration::from_millis(ms.max(1) as u64))
    }

    fn can_ack(&self) -> bool {
        !matches!(self.state, TcpState::Listen | TcpState::SynSent | TcpState::Closed)
    }

    fn has_data_to_send(&self) -> bool {
        self.snd_nxt < self.app_end || (self.fin_queued && !self.fin_sent)
    }

    fn window_allows_next(&self) -> bool {
        let len = self.app_end.saturating_sub(self.snd_nxt).min(self.snd_mss);
        self.snd_nxt + len <= self.snd_una + self.snd_wnd
    }

    /// An established-state segment (RFC 9293 §3.10.7.4).
    fn on_segment(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let seg = unwrap(self.irs, self.rcv.rcv_nxt, pkt.seq);
        // RFC 7323 §4.3: remember the peer's TSval if the segment starts at or before the last
        // ACK we sent (Linux `tcp_store_ts_recent` with rcv_wup).
        // An entirely old segment fails Linux's tcp_sequence() check first, so it never updates
        // TS.Recent (which keeps Eifel detection working for the sender's retransmissions).
        if let Some((tsval, _)) = pkt.options.timestamps {
            let seg_end = seg + pkt.seq_len() as i64;
            let wup = self.rcv.rcv_wup as i64;
            if seg <= wup && seg_end >= wup {
                self.ts_recent = tsval;
            }
        }
        if pkt.has(flags::ACK) {
            self.on_ack(now, pkt, seg, log);
        }
        if self.state == TcpState::Closed {
            return;
        }
        let mut ack_needed = false;
        let payload = pkt.payload_len as u64;
        let fin = pkt.has(flags::FIN);
        let syn = pkt.has(flags::SYN);
        if payload > 0 || fin || syn || seg < self.rcv.rcv_nxt as i64 {
            let (start, len) = if syn { (seg, 0) } else { (seg, payload) };
            if self.rcv.fin_received && payload == 0 && !syn {
                // Retransmitted FIN (our ACK was lost) or a probe after the FIN.
                ack_needed = true;
            } else if syn {
                ack_needed = true; // retransmitted SYN/ACK: our handshake ACK was lost
            } else {
                let o = self.rcv.on_segment(start, len, fin);
                if o.new_bytes > 0 && !o.out_of_order {
                    let echo = pkt.options.timestamps.filter(|_| self.ts_ok).map(|(_, ecr)| (ecr, self.ts_val(now).wrapping_sub(ecr)));
                    self.rcv.measure_rcv_rtt(now, echo, len);
                }
                if o.new_bytes > 0 {
                    self.stats.bytes_received += o.new_bytes;
                    self.events.push(SocketEvent::Readable);
                }
                if o.old || o.out_of_order || o.duplicate || o.filled_hole || o.beyond_window || o.fin {
                    ack_needed = true;
                    if o.duplicate {
                        // Linux tcp_enter_quickack_mode: a retransmission means our ACKs are lost
                        // or late; ACK quickly, leave ping-pong mode.
                        self.rcv.quick = self.rcv.quick.max(self.cfg.quickack_segments);
                        self.rcv.pingpong = false;
                        self.rcv.ato = self.cfg.delayed_ack;
                    }
                    if o.new_bytes > 0 {
                        self.rcv.on_data_event(now, self.cfg.delayed_ack, self.rtt.rto(), self.cfg.quickack_segments.max(1));
                    }
                } else if o.new_bytes > 0 {
                    // In-order data (Linux tcp_event_data_recv + __tcp_ack_snd_check).
                    self.rcv.on_data_event(now, self.cfg.delayed_ack, self.rtt.rto(), self.cfg.quickack_segments.max(1));
                    if self.rcv.in_quickack_mode() || self.rcv.two_segments_pending() {
                        ack_needed = true;
                    } else if self.rcv.delack_at.is_none() {
                        self.rcv.delack_at = Some(now + self.rcv.delack_timeout(self.cfg.delayed_ack, self.rtt.srtt()));
                    }
                }
                if o.fin {
                    self.on_peer_fin(now);
                }
            }
        }
        // Data first (it carries the ACK), then a pure ACK if one is still owed.
        let before = self.stats.segments_sent;
        self.try_send(now, out, log);
        if ack_needed && self.stats.segments_sent == before && self.can_ack() {
            self.emit(now, out, log, Kind::Ack);
        }
    }

    fn on_peer_fin(&mut self, now: Time) {
        self.events.push(SocketEvent::PeerClosed);
        match self.state {
            TcpState::Established | TcpState::SynReceived => self.state = TcpState::CloseWait,
            TcpState::FinWait1 => {
                // Our FIN is not acknowledged yet (else we would be in FIN_WAIT_2).
                self.state = TcpState::Closing;
            }
            TcpState::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    fn enter_time_wait(&mut self, now: Time) {
        self.state = TcpState::TimeWait;
        self.clear_timers();
        self.timewait_at = Some(now + self.cfg.time_wait);
    }

    // ------------------------------------------------------------------ ACK processing

    fn on_ack(&mut self, now: Time, pkt: &Packet, seg: i64, log: &mut Vec<TcpLogEvent>) {
        let ack = unwrap(self.iss, self.snd_una, pkt.ack);
        if ack > self.snd_nxt as i64 || ack < self.snd_una as i64 {
            return; // acknowledges something never sent, or too old
        }
        let ack = ack as u64;
        let prior_in_flight = self.sb.in_flight_bytes();
        let prior_wnd = self.snd_wnd;

        // Window update (Linux tcp_may_update_window).
        let nwin = (pkt.window as u64) << self.snd_wscale;
        let seg_u = seg.max(0) as u64;
        if ack > self.snd_una || seg_u > self.snd_wl1 || (seg_u == self.snd_wl1 && nwin > self.snd_wnd) {
            self.snd_wnd = nwin;
            self.snd_wl1 = seg_u;
        }

        // SACK tagging.
        let mut delivered_bytes = 0u64;
        let mut delivered_pkts = 0u64;
        let mut sack_rtt: Option<Time> = None;
        let mut sack_last: Option<Time> = None;
        let mut sacked_new = 0u64;
        let mut dsack = false;
        // Never-retransmitted data newly (S)ACKed by this ACK (Linux FLAG_ORIG_SACK_ACKED).
        let mut orig_delivered = false;
        if self.sack_ok && pkt.options.sack_count > 0 {
            // RFC 2883 §4: a first block below the cumulative ACK, or inside the second, is a D-SACK.
            let sk = pkt.options.sack();
            let (l0, r0) = (unwrap(self.iss, self.snd_una, sk[0].0), unwrap(self.iss, self.snd_una, sk[0].1));
            dsack = r0 <= ack as i64
                || (sk.len() > 1 && {
                    let (l1, r1) = (unwrap(self.iss, self.snd_una, sk[1].0), unwrap(self.iss, self.snd_una, sk[1].1));
                    l1 <= l0 && r0 <= r1
                });
            let mut blocks = [(0u64, 0u64); MAX_SACK_BLOCKS];
            let mut n = 0;
            for &(l, r) in pkt.options.sack() {
                let l = unwrap(self.iss, self.snd_una, l);
                let r = unwrap(self.iss, self.snd_una, r);
                let l = l.max(ack as i64);
                let r = r.min(self.snd_nxt as i64);
                if r > l {
                    blocks[n] = (l as u64, r as u64);
                    n += 1;
                }
            }
            let rate = &mut self.rate;
            let rack = &mut self.rack;
            let min_rtt = self.rtt.min_rtt();
            let d = self.sb.apply_sack(&blocks[..n], |rec| {
                rate.on_delivered(rec);
                rack.on_delivered(rec, now, min_rtt);
                if !rec.ever_retrans {
                    orig_delivered = true;
                }
                if !rec.ever_retrans {
                    // Linux first_sackt / last_sackt (tcp_sacktag_one).
                    sack_rtt = Some(sack_rtt.map_or(rec.sent_at, |t: Time| t.min(rec.sent_at)));
                    sack_last = Some(sack_last.map_or(rec.sent_at, |t: Time| t.max(rec.sent_at)));
                }
            });
            delivered_bytes += d.delivered_bytes;
            delivered_pkts += d.delivered_pkts;
            sacked_new = d.newly_sacked_pkts;
            self.rack.reord_seen |= d.reordered;
        }

        // Cumulative ACK.
        let mut seq_rtt: Option<Time> = None;
        let mut seq_last: Option<Time> = None;
        let mut retrans_acked = false;
        let mut fin_acked = false;
        let una_advanced = ack > self.snd_una;
        if una_advanced {
            let rate = &mut self.rate;
            let rack = &mut self.rack;
            let min_rtt = self.rtt.min_rtt();
            let sack_ok = self.sack_ok;
            let d = self.sb.ack_cumulative(ack, |rec, was_sacked| {
                if !was_sacked {
                    rate.on_delivered(rec);
                    if sack_ok {
                        rack.on_delivered(rec, now, min_rtt);
                    }
                    if !rec.ever_retrans {
                        orig_delivered = true;
                    }
                }
                // Linux tcp_clean_rtx_queue: retransmitted data (even SACKed earlier) forbids the
                // sequence sample for the whole ACK (FLAG_RETRANS_DATA_ACKED, Karn); data SACKed
                // earlier gives none (its send time is old: the sample would include the time the
                // hole below it took to repair). first_ackt is the oldest, last_ackt the newest.
                if rec.ever_retrans {
                    retrans_acked = true;
                } else if !was_sacked {
                    if seq_rtt.is_none() {
                        seq_rtt = Some(rec.sent_at);
                    }
                    seq_last = Some(rec.sent_at);
                }
                if rec.fin {
                    fin_acked = true;
                }
            });
            delivered_bytes += d.delivered_bytes;
            delivered_pkts += d.delivered_pkts;
            self.stats.bytes_acked += d.cum_acked_bytes;
            if self.sack_ok {
                self.rack.reord_seen |= d.reordered;
            }
            if !self.sack_ok {
                let reno_before = self.sb.reno_sacked;
                self.sb.remove_reno_sacks(d.cum_acked_pkts);
                // Duplicate ACKs were already credited as delivered segments.
                let credited = (reno_before - self.sb.reno_sacked) * self.snd_mss;
                delivered_bytes = delivered_bytes.saturating_sub(credited);
            }
            self.snd_una = ack;
        } else if !self.sack_ok
            && pkt.payload_len == 0
            && !pkt.has(flags::FIN)
            && nwin == prior_wnd
            && self.sb.packets_out.pkts > 0
        {
            // A duplicate ACK (RFC 5681 §2): count it as one SACKed segment (Linux tcp_add_reno_sack).
            if self.sb.reno_sacked + self.sb.lost_out.pkts < self.sb.packets_out.pkts {
                self.sb.reno_sacked += 1;
                delivered_bytes += self.snd_mss;
                delivered_pkts += 1;
            }
        }

        // RTT sample (Linux tcp_ack_update_rtt): the sequence RTT (oldest newly ACKed segment),
        // else the SACK RTT (oldest newly SACKed one; both never retransmitted), else — only when
        // the ACK advances snd_una (FLAG_ACKED, RFC 7323 RTTM rule) — the timestamp echo. That
        // sample feeds SRTT/RTO. The CC and min_rtt get Linux's `ca_rtt_us`: the RTT of the
        // newest (S)ACKed segment (last_sackt, else last_ackt), else the same TS sample.
        if retrans_acked {
            seq_rtt = None;
            seq_last = None;
        }
        let ts = if seq_rtt.is_none() && sack_rtt.is_none() && una_advanced { self.ts_sample(now, pkt) } else { None };
        let sample = seq_rtt.or(sack_rtt).map(|t| now - t).or(ts);
        let ca_sample = sack_last.or(seq_last).map(|t| now - t).or(ts);
        if let (Some(m), Some(ca)) = (sample, ca_sample) {
            self.rtt.on_sample(m, self.snd_una, self.snd_nxt);
            self.rtt.note_min(ca);
            self.stats.srtt = self.rtt.srtt();
            self.stats.min_rtt = self.rtt.min_rtt();
        }

        if una_advanced {
            self.rto_at = if self.sb.packets_out.pkts > 0 { Some(now + self.rtt.backed_off_rto()) } else { None };
            if self.snd_wnd > 0 {
                self.persist_backoff = 0;
            }
        }

        // Tail-loss-probe outcome (Linux tcp_process_tlp_ack).
        if self.tlp_high_seq != 0 && ack >= self.tlp_high_seq {
            if !self.tlp_retrans || dsack {
                self.tlp_high_seq = 0;
            } else if ack > self.tlp_high_seq {
                // The probe repaired a loss nobody detected: reduce the window once (CWR).
                self.cc.on_congestion_event(now, CongestionSignal::FastRetransmit, prior_in_flight);
                self.cc.on_recovery_exit(now);
                self.tlp_high_seq = 0;
            } else if !una_advanced && sacked_new == 0 && pkt.payload_len == 0 {
                self.tlp_high_seq = 0; // original and probe both arrived
            }
        }

        // Loss detection and the recovery state machine (Linux tcp_fastretrans_alert).
        let dupthresh = self.cfg.dupack_threshold.max(1) as u64;
        let rack_mode = self.rack_mode();
        let mut newly_lost = 0u64;
        if rack_mode && self.rack.advanced {
            newly_lost += self.rack_scan(now);
        }
        match self.ca {
            CaState::Open | CaState::Disorder => {
                let (marked, recover) = self.time_to_recover(dupthresh, rack_mode);
                newly_lost += marked;
                if recover {
                    newly_lost += self.enter_recovery(now, prior_in_flight, log);
                } else {
                    self.ca = if self.sb.sacked_pkts() > 0 { CaState::Disorder } else { CaState::Open };
                }
            }
            CaState::Recovery => {
                if dsack && self.undo_retrans > 0 {
                    // A D-SACK reports one of our retransmissions as unnecessary (RFC 3708).
                    self.undo_retrans -= 1;
                }
                if self.snd_una >= self.high_seq {
                    // Linux tcp_try_undo_recovery: every retransmission was D-SACKed, or the full
                    // ACK echoes a TSval older than our first retransmission (Eifel): the
                    // recovery was spurious (reordering), restore the window.
                    let delayed = self.ts_ok
                        && self.retrans_stamp.is_some_and(|t| {
                            pkt.options.timestamps.is_some_and(|(_, ecr)| ecr != 0 && (ecr.wrapping_sub(self.ts_val(t)) as i32) < 0)
                        });
                    if self.cfg.frto && self.undo_possible && (self.undo_retrans == 0 || delayed) {
                        self.undo_possible = false;
                        self.undo_cwnd_reduction(now);
                        self.stats.spurious_recoveries += 1;
                        self.ca = CaState::Open;
                        log.push(TcpLogEvent::ExitRecovery {
                            at: now,
                            flow: self.flow,
                            from_node: self.local.node,
                            cwnd_bytes: self.cwnd_bytes(),
                        });
                    } else {
                        self.exit_recovery(now, log);
                    }
                    // Linux tcp_fastretrans_alert, step E: the state is Open again and the same
                    // ACK goes on through the default branch; if loss beyond the recovery point
                    // is already marked (tcp_time_to_recover: lost_out, or DupThresh without
                    // RACK) a new recovery starts at once. Without this, the one ACK in between
                    // ran with cwnd = ssthresh over a pipe that PRR had kept far below it (after
                    // a slow-start overshoot: hundreds of segments) and sent the difference as
                    // one burst into the full queue.
                    if self.sack_ok {
                        let (marked, recover) = self.time_to_recover(dupthresh, rack_mode);
                        newly_lost += marked;
                        if recover {
                            newly_lost += self.enter_recovery(now, prior_in_flight, log);
                        }
                    }
                } else if self.sack_ok {
                    if !rack_mode {
                        newly_lost += self.sb.mark_lost_by_sack(dupthresh);
                    }
                } else if una_advanced {
                    // NewReno partial ACK (RFC 6582 §3.2 step 3): the next hole is lost too.
                    newly_lost += self.sb.mark_head_lost();
                }
            }
            CaState::Loss => {
                // Spurious RTO? (Linux tcp_process_loss → tcp_try_undo_loss.) With timestamps: the
                // ACK echoes a TSval older than our first retransmission, so it acknowledges an
                // original transmission (Eifel, RFC 3522). With SACK: never-retransmitted data was
                // (S)ACKed (F-RTO step 3b, RFC 5682). Deviation: F-RTO step 2b (send new data
                // instead of retransmitting after the first ACK) is not modelled.
                let delayed = una_advanced
                    && self.ts_ok
                    && self.retrans_stamp.is_some_and(|t| {
                        pkt.options.timestamps.is_some_and(|(_, ecr)| ecr != 0 && (ecr.wrapping_sub(self.ts_val(t)) as i32) < 0)
                    });
                let frto = self.sack_ok && orig_delivered;
                if self.undo_possible && (delayed || frto) {
                    self.undo_possible = false;
                    self.sb.unmark_all_lost();
                    // Linux tcp_undo_cwnd_reduction (window-based algorithms only, not BBR).
                    self.undo_cwnd_reduction(now);
                    self.stats.spurious_rtos += 1;
                    self.ca = CaState::Open;
                } else if self.snd_una >= self.high_seq {
                    self.ca = CaState::Open;
                    self.undo_possible = false;
                }
            }
        }

        // Congestion control (Linux tcp_cong_control).
        let rs = self.rate.generate(now, delivered_bytes, newly_lost, self.rtt.min_rtt());
        if delivered_bytes > 0 || sacked_new > 0 {
            let in_recovery = self.ca == CaState::Recovery;
            let ev = AckEvent {
                now,
                acked_bytes: delivered_bytes,
                rtt_sample: ca_sample,
                srtt: self.rtt.srtt().unwrap_or(self.cfg.initial_rto),
                min_rtt: self.rtt.min_rtt().unwrap_or(self.cfg.initial_rto),
                prior_in_flight_bytes: prior_in_flight,
                bytes_in_flight: self.sb.in_flight_bytes(),
                cwnd_limited: self.cwnd_limited(),
                in_recovery,
                delivered_total_bytes: self.rate.delivered,
                rate: rs,
            };
            self.cc.on_ack(&ev);
            // Linux snd_cwnd_clamp: the window itself never grows past the clamp, so lifting the
            // clamp later does not release a burst.
            if let Some(c) = self.cwnd_clamp {
                if self.cc.cwnd() > c {
                    self.cc.set_cwnd(c);
                }
            }
            if in_recovery && !self.cc.owns_recovery() {
                if let Some(c) = self.prr.on_ack(delivered_pkts, newly_lost > 0, una_advanced, self.sb.in_flight_pkts()) {
                    self.prr_cwnd_pkts = c;
                }
            }
        }
        self.stats.max_cwnd_bytes = self.stats.max_cwnd_bytes.max(self.cwnd_bytes());
        if una_advanced || sacked_new > 0 {
            self.schedule_tlp(now);
        }

        // Window opened: stop probing.
        if self.snd_wnd > 0 && self.window_allows_next() {
            self.persist_at = None;
            self.persist_backoff = 0;
        }

        // Socket-level consequences.
        if una_advanced {
            if self.snd_una >= self.app_end && !self.all_acked_reported {
                self.all_acked_reported = true;
                self.stats.last_ack_of_data_at = Some(now);
                self.events.push(SocketEvent::AllAcked);
            }
            if self.writable_wanted && self.send_buffer_free() > 0 {
                self.writable_wanted = false;
                self.events.push(SocketEvent::Writable);
            }
            if fin_acked {
                match self.state {
                    TcpState::FinWait1 => self.state = TcpState::FinWait2,
                    TcpState::Closing => self.enter_time_wait(now),
                    TcpState::LastAck => {
                        self.state = TcpState::Closed;
                        self.clear_timers();
                        self.events.push(SocketEvent::Closed);
                    }
                    _ => {}
                }
            }
        }
    }

    fn enter_recovery(&mut self, now: Time, prior_in_flight: u64, log: &mut Vec<TcpLogEvent>) -> u64 {
        let mut newly = 0;
        if self.sb.pending_rexmit() == 0 {
            // Linux tcp_update_scoreboard(fast_rexmit=1): at least the head is retransmitted.
            newly += self.sb.mark_head_lost();
        }
        let prior_cwnd_pkts = (self.cc.cwnd() / self.snd_mss).max(1);
        // Undo bookkeeping (Linux tcp_init_undo).
        self.undo_prior_cwnd = self.cc.cwnd();
        self.undo_prior_ssthresh = self.current_ssthresh();
        self.undo_possible = true;
        self.undo_retrans = match self.sb.retrans_out.pkts {
            0 => -1,
            n => n as i64,
        };
        self.retrans_stamp = None;
        self.cc.on_congestion_event(now, CongestionSignal::FastRetransmit, prior_in_flight);
        let ssthresh_pkts = (self.cc.ssthresh() / self.snd_mss).max(1);
        self.prr.start(prior_cwnd_pkts, ssthresh_pkts);
        self.prr_cwnd_pkts = prior_cwnd_pkts;
        self.ca = CaState::Recovery;
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.tlp_at = None;
        self.first_rexmit_pending = true;
        log.push(TcpLogEvent::EnterRecovery {
            at: now,
            flow: self.flow,
            from_node: self.local.node,
            cwnd_bytes: prior_cwnd_pkts * self.snd_mss,
            ssthresh_bytes: self.cc.ssthresh(),
        });
        newly
    }

    fn exit_recovery(&mut self, now: Time, log: &mut Vec<TcpLogEvent>) {
        self.ca = if self.sb.sacked_pkts() > 0 { CaState::Disorder } else { CaState::Open };
        self.cc.on_recovery_exit(now);
        log.push(TcpLogEvent::ExitRecovery { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cwnd_bytes() });
    }

    /// Linux `tcp_current_ssthresh` outside CWR/Recovery: max(ssthresh, ¾·cwnd), in bytes of
    /// whole segments (u64::MAX stays infinite).
    fn current_ssthresh(&self) -> u64 {
        let cwnd = self.cwnd_pkts();
        self.cc.ssthresh().max(((cwnd >> 1) + (cwnd >> 2)) * self.snd_mss)
    }

    /// Linux `tcp_undo_cwnd_reduction` for window-based algorithms: cwnd = max(cwnd, prior_cwnd)
    /// (`tcp_reno_undo_cwnd`) and ssthresh = max(ssthresh, prior_ssthresh); then the algorithm's
    /// own undo (`on_spurious_congestion`).
    fn undo_cwnd_reduction(&mut self, now: Time) {
        self.cc.on_spurious_congestion(now);
        if !self.cc.owns_recovery() {
            if self.cc.cwnd() < self.undo_prior_cwnd {
                self.cc.set_cwnd(self.undo_prior_cwnd);
            }
            if self.cc.ssthresh() < self.undo_prior_ssthresh {
                let ss = self.undo_prior_ssthresh;
                self.cc.set_ssthresh(ss);
            }
        }
    }

    /// Linux `tcp_time_to_recover` (with `tcp_identify_packet_loss` for a non-RACK SACK sender):
    /// mark segments lost by DupThresh, then say whether a recovery must start — loss is marked,
    /// or (without RACK) DupThresh segments are SACKed. Returns (segments newly marked, start?).
    fn time_to_recover(&mut self, dupthresh: u64, rack_mode: bool) -> (u64, bool) {
        let marked = if self.sack_ok && !rack_mode { self.sb.mark_lost_by_sack(dupthresh) } else { 0 };
        let by_dupthresh = !rack_mode && self.sb.sacked_pkts() >= dupthresh;
        (marked, self.sb.lost_out.pkts > 0 || by_dupthresh)
    }

    /// Linux `tcp_is_cwnd_limited`.
    fn cwnd_limited(&self) -> bool {
        let cwnd_pkts = (self.cwnd_bytes() / self.snd_mss).max(1);
        if self.cc.in_slow_start() {
            cwnd_pkts < 2 * self.max_packets_out
        } else {
            self.is_cwnd_limited
        }
    }

    fn cwnd_pkts(&self) -> u64 {
        (self.cwnd_bytes() / self.snd_mss).max(1)
    }

    // ------------------------------------------------------------------ sending

    fn can_send_data(&self) -> bool {
        matches!(
            self.state,
            TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::Closing | TcpState::LastAck
        )
    }

    fn pacing_blocks(&mut self, now: Time) -> bool {
        if self.cc.pacing_rate().is_some_and(|r| r.bits_per_sec > 0) && now < self.next_pace_at {
            self.pace_at = Some(self.next_pace_at);
            return true;
        }
        false
    }

    fn after_transmit(&mut self, now: Time, ip_len: u32) {
        if let Some(r) = self.cc.pacing_rate().filter(|r| r.bits_per_sec > 0) {
            // Linux internal pacing (tcp_update_skb_after_send): the next departure is spaced by
            // this segment's length at the pacing rate. We pace on the IP length.
            self.next_pace_at = self.next_pace_at.max(now) + r.transmit_time(ip_len as u64);
        }
    }

    fn try_send(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if !self.can_send_data() {
            return;
        }
        let mut cwnd_stop = false;
        let mut sent_new = false;
        loop {
            let cwnd = self.cwnd_pkts();
            let in_flight = self.sb.in_flight_pkts();
            // NextSeg rule (1): repair a lost segment.
            if let Some(i) = self.sb.next_rexmit() {
                if in_flight >= cwnd {
                    cwnd_stop = true;
                    break;
                }
                if self.pacing_blocks(now) {
                    break;
                }
                self.retransmit(now, i, out, log);
                continue;
            }
            // New data (rule 2).
            let avail = self.app_end.saturating_sub(self.snd_nxt);
            let fin_now = self.fin_queued && !self.fin_sent;
            if avail == 0 && !fin_now {
                break;
            }
            let len = avail.min(self.snd_mss);
            let is_fin = fin_now && self.snd_nxt + len == self.app_end;
            if len > 0 && self.snd_nxt + len > self.snd_una + self.snd_wnd {
                // Receiver window full: persist timer if nothing is in flight to elicit ACKs.
                if self.sb.packets_out.pkts == 0 && self.persist_at.is_none() {
                    self.persist_at = Some(now + self.probe_interval());
                }
                break;
            }
            if len > 0
                && len < self.snd_mss
                && !is_fin
                && self.cfg.nagle
                && self.sb.packets_out.pkts > 0
                && self.snd_sml > self.snd_una
            {
                break; // Nagle with Minshall's rule: one small segment outstanding at a time.
            }
            if in_flight >= cwnd {
                cwnd_stop = true;
                break;
            }
            if self.pacing_blocks(now) {
                break;
            }
            if self.sb.packets_out.pkts == 0 && self.cfg.slow_start_after_idle && !self.cc.owns_recovery() {
                self.restart_after_idle(now, log);
            }
            self.send_new_segment(now, len, is_fin, out, log);
            sent_new = true;
        }
        if sent_new {
            self.schedule_tlp(now);
        }
        if sent_new || cwnd_stop {
            let limited = cwnd_stop || self.sb.in_flight_pkts() >= self.cwnd_pkts();
            self.cwnd_validate(now, limited);
        }
        // Linux tcp_rate_check_app_limited: nothing left to send and room in the window.
        if !self.has_data_to_send() && self.sb.in_flight_pkts() < self.cwnd_pkts() && self.sb.pending_rexmit() == 0 {
            self.rate.mark_app_limited(self.sb.in_flight_bytes());
        }
    }

    /// Put a new segment of `len` bytes (plus FIN) at SND.NXT on the wire and in the queue.
    fn send_new_segment(&mut self, now: Time, len: u64, is_fin: bool, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let rec_len = len as u32;
        let nothing_in_flight = self.sb.packets_out.pkts == 0;
        if len > 0 {
            self.tx_start_check(now);
        }
        let tx = self.rate.on_send(now, nothing_in_flight);
        let rec = SegRec {
            start: self.snd_nxt,
            len: rec_len,
            fin: is_fin,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            sent_at: now,
            xmit_seq: {
                self.xmit_count += 1;
                self.xmit_count
            },
            tx,
        };
        self.sb.push(rec);
        self.snd_nxt = rec.end();
        if is_fin {
            self.fin_sent = true;
        }
        if len < self.snd_mss {
            self.snd_sml = self.snd_nxt;
        }
        if len > 0 {
            self.lsndtime = now;
            // Linux tcp_event_data_sent: data sent soon after data was received → interactive.
            if self.rcv.last_data_at.is_some_and(|t| now.saturating_since(t) < self.rcv.ato) {
                self.rcv.pingpong = true;
            }
            if self.stats.first_data_sent_at.is_none() {
                self.stats.first_data_sent_at = Some(now);
            }
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.backed_off_rto());
        }
        self.persist_at = None;
        if self.ca == CaState::Recovery {
            self.prr.out += 1;
        }
        let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec_len, fin: is_fin });
        self.after_transmit(now, ip_len);
        let app_limited = self.rate.is_app_limited();
        self.cc.on_packet_sent(now, len, self.sb.in_flight_bytes(), app_limited);
    }

    /// Linux `tcp_cwnd_validate` (after a transmission): track whether the window is used, and
    /// when it was not for a whole RTO, decay it (RFC 2861 / RFC 7661 "slow part", Linux
    /// `tcp_cwnd_application_limited`): cwnd = (cwnd + max(used, IW)) / 2. Deviation: Linux also
    /// raises ssthresh to max(ssthresh, ¾·cwnd) first; the CC trait cannot set ssthresh.
    fn cwnd_validate(&mut self, now: Time, limited: bool) {
        let packets_out = self.sb.packets_out.pkts;
        if self.snd_una >= self.cwnd_usage_seq || limited || (!self.is_cwnd_limited && packets_out > self.max_packets_out) {
            self.is_cwnd_limited = limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.cwnd_limited() {
            self.cwnd_used = 0;
            self.cwnd_stamp = now;
            return;
        }
        self.cwnd_used = self.cwnd_used.max(packets_out);
        if self.cfg.slow_start_after_idle
            && !self.cc.owns_recovery()
            && now.saturating_since(self.cwnd_stamp) >= self.rtt.rto()
        {
            if self.ca == CaState::Open && !self.writable_wanted {
                let iw = self.cfg.initial_cwnd_segments;
                let used = self.cwnd_used.max(iw);
                let cwnd = self.cc.cwnd() / self.snd_mss;
                if used < cwnd {
                    // Linux: snd_ssthresh = tcp_current_ssthresh() first, so a later slow start
                    // climbs back to ¾ of the window that was not used.
                    let ss = self.current_ssthresh();
                    self.cc.set_ssthresh(ss);
                    self.cc.set_cwnd((cwnd + used) / 2 * self.snd_mss);
                }
                self.cwnd_used = 0;
            }
            self.cwnd_stamp = now;
        }
    }

    fn rack_mode(&self) -> bool {
        self.cfg.rack_tlp && self.sack_ok
    }

    /// Run RACK's loss scan and (re)arm its reordering timer; returns bytes newly marked lost.
    fn rack_scan(&mut self, now: Time) -> u64 {
        self.rack.advanced = false;
        if !self.rack.valid {
            return 0;
        }
        let reo = self.rack.reo_wnd(
            matches!(self.ca, CaState::Recovery | CaState::Loss),
            self.sb.sacked_pkts(),
            self.cfg.dupack_threshold.max(1) as u64,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        let (lost, wait) = self.sb.rack_detect(now, &self.rack, reo);
        // Linux adds TCP_TIMEOUT_MIN (2 jiffies) to the reordering timeout.
        self.reo_at = wait.map(|w| now + w + Duration::from_millis(2));
        lost
    }

    /// Linux `tcp_rack_reo_timeout`.
    fn on_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if !self.rack_mode() || self.sb.is_empty() {
            return;
        }
        let prior_in_flight = self.sb.in_flight_bytes();
        let lost = self.rack_scan(now);
        if lost > 0 {
            if matches!(self.ca, CaState::Open | CaState::Disorder) {
                self.enter_recovery(now, prior_in_flight, log);
                if !self.cc.owns_recovery() {
                    if let Some(c) = self.prr.on_ack(1, false, false, self.sb.in_flight_pkts()) {
                        self.prr_cwnd_pkts = c;
                    }
                }
            }
            self.try_send(now, out, log);
        }
    }

    /// Linux `tcp_schedule_loss_probe`: PTO = 2·SRTT (+ 200 ms if a single segment is out, for a
    /// delayed ACK; else + 2 ms), never later than the RTO. Only in the Open state with SACK.
    fn schedule_tlp(&mut self, now: Time) {
        if !self.rack_mode() || self.sb.packets_out.pkts == 0 || self.ca != CaState::Open || self.tlp_high_seq != 0 {
            self.tlp_at = None;
            return;
        }
        let Some(srtt) = self.rtt.srtt() else {
            self.tlp_at = None;
            return;
        };
        let extra = if self.sb.packets_out.pkts == 1 { self.cfg.min_rto } else { Duration::from_millis(2) };
        let mut pto = srtt * 2 + extra;
        if let Some(r) = self.rto_at {
            pto = pto.min(r.saturating_since(now));
        }
        self.tlp_at = Some(now + pto);
    }

    /// Linux `tcp_send_loss_probe`: send new data if possible, else the last segment again.
    fn on_tlp(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.sb.packets_out.pkts == 0 || self.tlp_high_seq != 0 || self.ca != CaState::Open || !self.can_send_data() {
            return;
        }
        let avail = self.app_end.saturating_sub(self.snd_nxt);
        let fin_now = self.fin_queued && !self.fin_sent;
        let len = avail.min(self.snd_mss);
        if (avail > 0 || fin_now) && self.snd_nxt + len <= self.snd_una + self.snd_wnd {
            let is_fin = fin_now && self.snd_nxt + len == self.app_end;
            self.send_new_segment(now, len, is_fin, out, log);
            self.tlp_retrans = false;
        } else {
            let i = self.sb.len() - 1;
            self.tx_start_check(now);
            let tx = self.rate.on_send(now, false);
            self.xmit_count += 1;
            let rec = self.sb.on_probe_retransmit(i, now, self.xmit_count, tx);
            self.stats.retrans_tlp += 1;
            log.push(TcpLogEvent::Retransmit {
                at: now,
                flow: self.flow,
                from_node: self.local.node,
                seq: to_wire(self.iss, rec.start),
                len: rec.len,
                cause: RetransmitCause::TailLossProbe,
            });
            let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec.len, fin: rec.fin });
            self.after_transmit(now, ip_len);
            self.cc.on_packet_sent(now, rec.len as u64, self.sb.in_flight_bytes(), false);
            self.tlp_retrans = true;
        }
        self.stats.tlp_probes += 1;
        self.tlp_high_seq = self.snd_nxt;
        self.tlp_at = None;
        self.rto_at = Some(now + self.rtt.backed_off_rto());
    }

    fn retransmit(&mut self, now: Time, i: usize, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let cause = match self.ca {
            CaState::Loss => RetransmitCause::Timeout,
            _ if self.first_rexmit_pending => RetransmitCause::FastRetransmit,
            _ if self.sack_ok => RetransmitCause::SackRecovery,
            _ => RetransmitCause::FastRetransmit,
        };
        self.first_rexmit_pending = false;
        if matches!(self.ca, CaState::Loss | CaState::Recovery) && self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(now);
        }
        if self.ca == CaState::Recovery {
            self.undo_retrans = self.undo_retrans.max(0) + 1;
        }
        self.tx_start_check(now);
        let tx = self.rate.on_send(now, self.sb.packets_out.pkts == 0);
        let is_head = i == 0;
        self.xmit_count += 1;
        let rec = self.sb.on_retransmit(i, now, self.xmit_count, tx);
        match cause {
            RetransmitCause::Timeout => self.stats.retrans_timeout += 1,
            _ => self.stats.retrans_fast += 1,
        }
        if self.ca == CaState::Recovery {
            self.prr.out += 1;
        }
        log.push(TcpLogEvent::Retransmit {
            at: now,
            flow: self.flow,
            from_node: self.local.node,
            seq: to_wire(self.iss, rec.start),
            len: rec.len,
            cause,
        });
        if is_head {
            // Linux tcp_xmit_retransmit_queue re-arms the RTO when the head goes out again.
            self.rto_at = Some(now + self.rtt.backed_off_rto());
        }
        let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec.len, fin: rec.fin });
        self.after_transmit(now, ip_len);
        self.cc.on_packet_sent(now, rec.len as u64, self.sb.in_flight_bytes(), false);
    }

    /// Linux `tcp_event_data_sent`: a data segment (new, retransmitted or a probe) leaves with
    /// nothing in flight (`tcp_packets_in_flight() == 0`, so also the first retransmission after
    /// an RTO marked everything lost) → `CA_EVENT_TX_START`, for every algorithm. Called before
    /// the segment enters the scoreboard. Independent of slow start after idle.
    fn tx_start_check(&mut self, now: Time) {
        if self.sb.in_flight_pkts() == 0 {
            let app_limited = self.rate.is_app_limited();
            self.cc.on_tx_start(now, app_limited);
        }
    }

    /// Linux `tcp_cwnd_restart`: halve cwnd for every RTO of idleness, down to min(IW, cwnd).
    fn restart_after_idle(&mut self, now: Time, log: &mut Vec<TcpLogEvent>) {
        let rto = self.rtt.rto();
        let idle = now.saturating_since(self.lsndtime);
        if self.stats.first_data_sent_at.is_none() || idle <= rto {
            return;
        }
        let cwnd = self.cc.cwnd();
        let restart = (self.cfg.initial_cwnd_segments * self.snd_mss).min(cwnd);
        let mut w = cwnd;
        let mut left = idle;
        loop {
            left = left.saturating_sub(rto);
            if left.is_zero() || w <= restart {
                break;
            }
            w /= 2;
        }
        let w = w.max(restart);
        self.cc.on_restart_after_idle(now, w);
        self.cwnd_stamp = now;
        log.push(TcpLogEvent::RestartAfterIdle { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cc.cwnd() });
    }

    /// Build one segment and push it onto `out`. Returns its IP length.
    fn emit(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>, kind: Kind) -> u32 {
        let mut o = TcpOptions::default();
        let mut fl = flags::ACK;
        let mut seq_off: i64 = self.snd_nxt as i64;
        let mut payload = 0u32;
        let syn_window = (self.cfg.rcv_buf_bytes.min(65_535) / self.cfg.mss as u64 * self.cfg.mss as u64) as u16;
        match kind {
            Kind::Syn | Kind::SynAck => {
                seq_off = 0;
                // The SYN's (unscaled) window is the first advertisement (RFC 7323 §2.2).
                self.rcv.adv_right_edge = self.rcv.rcv_nxt + syn_window as u64;
                self.rcv.last_adv_window = syn_window as u64;
                self.rcv.rcv_wup = self.rcv.rcv_nxt;
                fl = if kind == Kind::Syn { flags::SYN } else { flags::SYN | flags::ACK };
                o.mss = Some(self.cfg.mss);
                let offer = kind == Kind::Syn;
                if self.cfg.sack && (offer || self.sack_ok) {
                    o.sack_permitted = true;
                }
                if self.cfg.timestamps && (offer || self.ts_ok) {
                    o.timestamps = Some((self.ts_val(now), if offer { 0 } else { self.ts_recent }));
                }
                if self.cfg.window_scaling && (offer || self.ws_ok) {
                    o.window_scale = Some(self.rcv.wscale);
                }
            }
            Kind::Data { start, len, fin } => {
                seq_off = start as i64;
                payload = len;
                if fin {
                    fl |= flags::FIN;
                }
                if len > 0 && start + len as u64 == self.app_end {
                    fl |= flags::PSH;
                }
            }
            Kind::Ack => {}
            Kind::Probe => seq_off = self.snd_una as i64 - 1,
            Kind::Rst => fl = flags::RST | flags::ACK,
        }
        let mut window = syn_window;
        if !matches!(kind, Kind::Syn | Kind::SynAck) {
            if self.ts_ok {
                o.timestamps = Some((self.ts_val(now), self.ts_recent));
            }
            // Everything after the handshake carries an ACK and a window.
            let had_new = self.rcv.rcv_nxt > self.rcv.rcv_wup;
            if had_new && self.rcv.quick > 0 {
                self.rcv.quick -= 1;
            }
            let w = self.rcv.advertise();
            window = (w >> self.rcv.wscale).min(65_535) as u16;
            if w == 0 && !self.zero_window_advertised {
                log.push(TcpLogEvent::ZeroWindow { at: now, flow: self.flow, from_node: self.local.node });
            }
            self.zero_window_advertised = w == 0;
            self.rcv.delack_at = None;
            if self.sack_ok {
                let max = if self.ts_ok { 3 } else { 4 };
                let mut b = [(0u64, 0u64); MAX_SACK_BLOCKS];
                let n = self.rcv.sack_blocks(self.cfg.dsack, max, &mut b);
                for (dst, src) in o.sack_blocks.iter_mut().zip(&b[..n]) {
                    *dst = (to_wire(self.irs, src.0), to_wire(self.irs, src.1));
                }
                o.sack_count = n as u8;
            }
        }
        let ack = if fl & flags::ACK != 0 && kind != Kind::Syn { to_wire(self.irs, self.rcv.rcv_nxt) } else { 0 };
        let pkt = Packet {
            uid: 0,
            flow: self.flow,
            src_node: self.local.node,
            dst_node: self.remote.node,
            src_ip: self.local.ip,
            dst_ip: self.remote.ip,
            src_port: self.local.port,
            dst_port: self.remote.port,
            ip_id: self.ip_id,
            seq: self.iss.wrapping_add(seq_off as u32),
            ack,
            flags: fl,
            window,
            options: o,
            payload_len: payload,
            sent_at: now,
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        self.stats.segments_sent += 1;
        if payload > 0 {
            self.stats.data_segments_sent += 1;
            self.stats.bytes_sent += payload as u64;
        }
        let len = pkt.ip_len();
        out.push(pkt);
        len
    }
}
