//! One TCP connection endpoint, behaving like Linux 6.x: the state machine of RFC 9293 with the
//! sender and receiver machinery Linux runs by default.
//!
//! Where things live: sequence arithmetic in `seq.rs`, RTT/RTO in `rtt.rs`, the SACK scoreboard
//! and RFC 6675 pipe in `scoreboard.rs`, PRR in `prr.rs`, delivery-rate sampling in `rate.rs`,
//! the receive queue / SACK generation / window / delayed ACK in `recv.rs`. The endpoint's control
//! flow is split as Linux splits tcp_input.c / tcp_output.c / tcp_timer.c: this file holds the
//! connection state, the handshake and segment arrival; `ack.rs` an incoming ACK step by step
//! (tcp_ack); `recovery.rs` the CA states, loss marking and undo (tcp_fastretrans_alert);
//! `output.rs` sending, retransmission, TLP and pacing (tcp_output.c); `timers.rs` the timers
//! (tcp_timer.c). Together they follow Linux's control flow:
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
//! DupThresh (tp->reordering) for the non-RACK path, TCP small queues (GSO packets, their
//! deferral and PSH are modelled: tso.rs), receive-buffer autotuning, ECN, urgent data, the CWR state as a distinct state (a
//! probe-repaired loss reduces cwnd at once, as Linux's CWR ends there).

use std::time::Duration;

use tcpvideo_model::cc::{self, AppInfo, CcConfig, CongestionControl};
use tcpvideo_model::{Bandwidth, Time};

use super::config::TcpConfig;
use super::log::TcpLogEvent;
use super::output::Kind;
use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateSampler;
use super::recovery::CaState;
use super::recv::Receiver;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::seq::{to_wire, unwrap};
use super::stats::TcpStats;
use super::timers::Timers;
use crate::packet::{flags, NodeId, Packet, TcpOptions};

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

pub struct TcpEndpoint {
    pub(super) cfg: TcpConfig,
    pub(super) flow: u32,
    pub(super) local: Addr,
    pub(super) remote: Addr,
    pub(super) state: TcpState,

    pub(super) iss: u32,
    pub(super) irs: u32,
    pub(super) ts_offset: u32,
    pub(super) syn_sent_at: Time,
    pub(super) syn_retransmits: u32,

    // Negotiated.
    pub(super) snd_mss: u64,
    pub(super) ts_ok: bool,
    pub(super) sack_ok: bool,
    /// Shift applied to the windows the peer sends.
    pub(super) snd_wscale: u8,

    // Send side, in stream offsets (0 = our SYN, data from 1).
    pub(super) snd_una: u64,
    pub(super) snd_nxt: u64,
    /// One past the last byte the application queued.
    pub(super) app_end: u64,
    pub(super) fin_queued: bool,
    pub(super) fin_sent: bool,
    pub(super) snd_wnd: u64,
    pub(super) snd_wl1: u64,
    pub(super) sb: Scoreboard,
    pub(super) rtt: RttEstimator,
    pub(super) rate: RateSampler,
    pub(super) prr: Prr,
    pub(super) prr_cwnd_pkts: u64,
    pub(super) cc: Box<dyn CongestionControl>,
    pub(super) cc_custom: bool,
    pub(super) cc_mss: u64,
    /// Both sides sent the window-scale option.
    pub(super) ws_ok: bool,
    pub(super) ca: CaState,
    pub(super) high_seq: u64,
    pub(super) first_rexmit_pending: bool,
    pub(super) cwnd_clamp: Option<u64>,
    /// SO_MAX_PACING_RATE: caps the pacing rate, and switches pacing on for a CC that does not
    /// pace by itself (Linux sets sk_pacing_status to SK_PACING_NEEDED). See `output.rs`.
    pub(super) max_pacing_rate: Option<Bandwidth>,
    pub(super) lsndtime: Time,
    pub(super) next_pace_at: Time,
    /// When the last segment of any kind left (Linux `tcp_wstamp_ns` without pacing), for the
    /// GSO deferral's "recent write" rule (tso.rs).
    pub(super) last_xmit_at: Time,
    pub(super) snd_sml: u64,
    pub(super) max_packets_out: u64,
    pub(super) cwnd_usage_seq: u64,
    pub(super) is_cwnd_limited: bool,
    /// Most packets out while not cwnd-limited (Linux `snd_cwnd_used`) and when the window was
    /// last full (Linux `snd_cwnd_stamp`).
    pub(super) cwnd_used: u64,
    pub(super) cwnd_stamp: Time,
    pub(super) rack: Rack,
    /// Time of the first retransmission of the current RTO episode (Linux `retrans_stamp`),
    /// for the timestamp-based spurious-RTO check.
    pub(super) retrans_stamp: Option<Time>,
    /// An RTO episode whose reduction may still be undone (Linux `undo_marker` set, `frto`).
    pub(super) undo_possible: bool,
    /// cwnd before the RTO / recovery episode (Linux `prior_cwnd`), restored by an undo.
    pub(super) undo_prior_cwnd: u64,
    /// ssthresh before it (Linux `prior_ssthresh` = tcp_current_ssthresh), restored by an undo.
    pub(super) undo_prior_ssthresh: u64,
    /// Retransmissions of the recovery episode not yet reported unnecessary by a D-SACK (Linux
    /// `undo_retrans`): at the start the retransmissions still outstanding (a recovery that
    /// starts on the ACK ending the previous one inherits them), -1 if none (Linux
    /// tcp_init_undo), then +1 per retransmission (a -1 becomes 1).
    pub(super) undo_retrans: i64,
    /// Data transmissions so far (orders segments sent at the same instant, for RACK).
    pub(super) xmit_count: u64,
    /// Highest SND.NXT when a tail-loss probe was sent; 0 = no probe outstanding.
    pub(super) tlp_high_seq: u64,
    pub(super) tlp_retrans: bool,

    pub(super) timers: Timers,
    pub(super) persist_backoff: u32,
    pub(super) ka_probes_out: u32,
    pub(super) last_rcv_at: Time,

    // Receive side.
    pub(super) rcv: Receiver,
    pub(super) ts_recent: u32,
    pub(super) window_update_pending: bool,
    pub(super) zero_window_advertised: bool,

    pub(super) ip_id: u16,
    pub(super) stats: TcpStats,
    pub(super) events: Vec<SocketEvent>,
    pub(super) writable_wanted: bool,
    pub(super) all_acked_reported: bool,
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
    tcpvideo_model::splitmix::splitmix64((isn as u64) << 32 | flow as u64)
}

impl TcpEndpoint {
    pub(super) fn new(cfg: &TcpConfig, flow: u32, local: Addr, remote: Addr, isn: u32, state: TcpState) -> Result<TcpEndpoint, String> {
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
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto).with_tick_ns(super::recv::tick_ns(cfg.hz)),
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
            max_pacing_rate: None,
            lsndtime: Time::ZERO,
            next_pace_at: Time::ZERO,
            last_xmit_at: Time::ZERO,
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
            timers: Timers::default(),
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
    pub fn connect(
        cfg: &TcpConfig,
        flow: u32,
        local: Addr,
        remote: Addr,
        isn: u32,
        now: Time,
        out: &mut Vec<Packet>,
    ) -> Result<TcpEndpoint, String> {
        let mut ep = TcpEndpoint::new(cfg, flow, local, remote, isn, TcpState::SynSent)?;
        ep.snd_nxt = 1;
        ep.syn_sent_at = now;
        let mut log = Vec::new();
        ep.emit(now, out, &mut log, Kind::Syn);
        ep.arm_rto(now, false); // Linux tcp_connect: no pacing delay
        Ok(ep)
    }

    /// A passive opener in LISTEN for exactly this flow.
    pub fn listen(cfg: &TcpConfig, flow: u32, local: Addr, remote: Addr, isn: u32) -> Result<TcpEndpoint, String> {
        TcpEndpoint::new(cfg, flow, local, remote, isn, TcpState::Listen)
    }

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
        let w = if self.ca == CaState::Recovery && !self.cc.owns_recovery() { self.prr_cwnd_pkts * self.snd_mss } else { self.cc.cwnd() };
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

    /// Additive: Linux `tcp_packets_in_flight` in segments (packets_out + retrans_out − sacked_out
    /// − lost_out; the seed's Eq. 1), for the crowdlive truth's timeout context.
    pub fn in_flight_pkts(&self) -> u64 {
        self.sb.in_flight_pkts()
    }

    /// Additive: SACKed segments (`sacked_out`, or dupacks counted without SACK).
    pub fn sacked_pkts(&self) -> u64 {
        self.sb.sacked_pkts()
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

    /// Additive: the receiver holds out-of-order data (ground truth for seed 000's reordering stalls).
    pub fn holds_out_of_order(&self) -> bool {
        self.rcv.holds_out_of_order()
    }

    /// Additive: bytes the application queued that were never sent (beyond SND.NXT).
    pub fn unsent_bytes(&self) -> u64 {
        self.app_end.saturating_sub(self.snd_nxt.max(1))
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

    /// SO_MAX_PACING_RATE (None = unlimited): the socket's pacing rate becomes
    /// min(rate the CC or Linux's default pacing would use, `rate`); see `output.rs`.
    pub fn set_max_pacing_rate(&mut self, rate: Option<Bandwidth>) {
        self.max_pacing_rate = rate.filter(|r| r.bits_per_sec > 0);
    }

    pub fn set_app_info(&mut self, info: &AppInfo) {
        self.cc.on_app_info(info);
    }

    pub fn take_events(&mut self, into: &mut Vec<SocketEvent>) {
        into.append(&mut self.events);
    }

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
                    // Linux's request socket timer (`rsk_timer`) is a timer_list too.
                    self.arm_rto(now, false);
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
    pub(super) fn negotiate(&mut self, o: &TcpOptions, passive: bool) {
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
            r.tcp_hdr = if self.ts_ok { 32 } else { 20 };
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

    pub(super) fn handshake_sample(&mut self, now: Time, pkt: &Packet) {
        let sample = if self.syn_retransmits == 0 { Some(now - self.syn_sent_at) } else { self.ts_sample(now, pkt) };
        if let Some(s) = sample {
            self.stats.handshake_rtt = Some(s);
            self.rtt.on_sample(s, 1, 1);
            self.stats.srtt = self.rtt.srtt();
            self.stats.min_rtt = self.rtt.min_rtt();
        }
    }

    pub(super) fn establish(&mut self, now: Time) {
        self.state = if self.fin_queued { TcpState::FinWait1 } else { TcpState::Established };
        self.stats.established_at = Some(now);
        self.lsndtime = now;
        self.cwnd_stamp = now;
        self.timers.rto = None;
        if self.syn_retransmits > 0 {
            // RFC 6298 §5.7 / RFC 5681 §3.1: a lost SYN means a 1-segment initial window.
            self.rtt.fallback_after_syn_loss();
            self.cc.set_cwnd(self.snd_mss);
        }
        if let Some(ka) = self.cfg.keepalive {
            self.timers.keepalive = Some(now + ka.idle);
        }
        self.rcv.on_established(now);
        self.events.push(SocketEvent::Connected);
        self.stats.max_cwnd_bytes = self.stats.max_cwnd_bytes.max(self.cwnd_bytes());
    }

    pub(super) fn ts_val(&self, now: Time) -> u32 {
        // Linux TSval: a millisecond clock with a per-connection random offset.
        ((now.as_nanos() / 1_000_000) as u32).wrapping_add(self.ts_offset)
    }

    pub(super) fn ts_sample(&self, now: Time, pkt: &Packet) -> Option<Duration> {
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

    pub(super) fn can_ack(&self) -> bool {
        !matches!(self.state, TcpState::Listen | TcpState::SynSent | TcpState::Closed)
    }

    pub(super) fn has_data_to_send(&self) -> bool {
        self.snd_nxt < self.app_end || (self.fin_queued && !self.fin_sent)
    }

    pub(super) fn window_allows_next(&self) -> bool {
        let len = self.app_end.saturating_sub(self.snd_nxt).min(self.snd_mss);
        self.snd_nxt + len <= self.snd_una + self.snd_wnd
    }

    /// An established-state segment (RFC 9293 §3.10.7.4).
    pub(super) fn on_segment(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
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
                    self.rcv.measure_rcv_rtt(now, echo, len, o.new_bytes);
                    self.rcv.note_in_order_segment(len, if self.ts_ok { 32 } else { 20 }, pkt.has(flags::PSH));
                }
                if o.new_bytes > 0 {
                    self.stats.bytes_received += o.new_bytes;
                    self.events.push(SocketEvent::Readable);
                }
                if o.old || o.duplicate || o.filled_hole || o.beyond_window || o.fin {
                    ack_needed = true;
                    if o.duplicate {
                        // Linux tcp_enter_quickack_mode: a retransmission means our ACKs are lost
                        // or late; ACK quickly, leave ping-pong mode.
                        self.rcv.quick = self.rcv.quick.max(self.cfg.quickack_segments);
                        self.rcv.pingpong = false;
                        self.rcv.ato = self.rcv.ticks(self.cfg.delayed_ack);
                    }
                    if o.new_bytes > 0 {
                        self.rcv.on_data_event(now, self.cfg.delayed_ack, self.rtt.rto_ns(), self.cfg.quickack_segments.max(1));
                    }
                } else if o.out_of_order || (o.new_bytes > 0 && self.rcv.has_ooo()) {
                    // Out-of-order data, or in-order data with a hole still behind it: Linux's
                    // __tcp_ack_snd_check with the out-of-order queue non-empty (SACK
                    // compression, recv.rs module doc).
                    if o.new_bytes > 0 {
                        self.rcv.on_data_event(now, self.cfg.delayed_ack, self.rtt.rto_ns(), self.cfg.quickack_segments.max(1));
                    }
                    if o.sack_flush && self.rcv.compressed_acks > 0 && self.can_ack() {
                        // tcp_sack_compress_send_ack: the held ACKs go before a block drops to third place.
                        self.emit(now, out, log, Kind::Ack);
                    }
                    let delay = self.rcv.comp_sack_timer_delay(self.rtt.srtt(), self.cfg.comp_sack_delay, self.cfg.comp_sack_slack);
                    if self.rcv.immediate_ack_due() || self.rcv.ooo_ack_now(now, self.sack_ok, self.cfg.comp_sack_nr, delay) {
                        ack_needed = true;
                    }
                } else if o.new_bytes > 0 {
                    // In-order data (Linux tcp_event_data_recv + __tcp_ack_snd_check).
                    self.rcv.on_data_event(now, self.cfg.delayed_ack, self.rtt.rto_ns(), self.cfg.quickack_segments.max(1));
                    if self.rcv.immediate_ack_due() {
                        ack_needed = true;
                    } else if self.rcv.delack_at.is_none() {
                        let ato = self.rcv.delack_timeout(self.cfg.delayed_ack, self.rtt.srtt());
                        self.rcv.delack_at = Some(super::timers::timer_list_expiry(now, ato, self.cfg.hz));
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

    pub(super) fn on_peer_fin(&mut self, now: Time) {
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

    pub(super) fn enter_time_wait(&mut self, now: Time) {
        self.state = TcpState::TimeWait;
        self.clear_timers();
        self.timers.time_wait = Some(now + self.cfg.time_wait);
    }
}
