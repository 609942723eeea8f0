//! Sending, as Linux net/ipv4/tcp_output.c: the send loop (`tcp_write_xmit`: lost segments first,
//! NextSeg rule 1, then new data while the packets in flight are below cwnd, the segment fits
//! the peer's window, Nagle/Minshall allows a sub-MSS segment and pacing permits), new segments
//! and retransmissions (`tcp_transmit_skb`, `tcp_retransmit_skb`), the tail-loss probe
//! (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`), cwnd validation for application-limited
//! senders (`tcp_cwnd_validate`), slow start after idle (`tcp_cwnd_restart`), internal pacing
//! (`tcp_update_skb_after_send`), and [`TcpEndpoint::emit`], which builds every segment's header
//! and options. New data leaves in GSO packets (`tso.rs`: their size, the deferral, PSH on each
//! packet's last segment) unless `TcpConfig::tso` is off.

use tcpvideo_model::{Bandwidth, Time};

use super::endpoint::{TcpEndpoint, TcpState};
use super::log::{RetransmitCause, TcpLogEvent};
use super::recovery::CaState;
use super::scoreboard::SegRec;
use super::seq::to_wire;
use super::tso::GsoDecision;
use crate::packet::{flags, Packet, TcpOptions, MAX_SACK_BLOCKS};

/// What kind of segment [`TcpEndpoint::emit`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Syn,
    SynAck,
    /// Data/FIN segment of a scoreboard record.
    Data {
        start: u64,
        len: u32,
        fin: bool,
        /// The last segment of a GSO packet (PSH; also set at the end of the application's data).
        psh: bool,
    },
    /// Pure ACK at SND.NXT.
    Ack,
    /// Zero-window or keep-alive probe: SND.UNA − 1, no data.
    Probe,
    Rst,
}

impl TcpEndpoint {
    pub(super) fn cwnd_pkts(&self) -> u64 {
        (self.cwnd_bytes() / self.snd_mss).max(1)
    }

    pub(super) fn can_send_data(&self) -> bool {
        matches!(self.state, TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::Closing | TcpState::LastAck)
    }

    /// The socket's pacing rate (Linux sk_pacing_rate), None when the socket does not pace. A CC
    /// that paces (BBR) sets it; otherwise it exists only under SO_MAX_PACING_RATE, which makes
    /// Linux pace a non-pacing CC at `tcp_update_pacing_rate`'s rate: mss·max(cwnd, packets_out)
    /// / srtt × 200 % in slow start (cwnd < ssthresh/2), × 120 % otherwise (sysctls
    /// tcp_pacing_ss_ratio / tcp_pacing_ca_ratio). Either is capped at the maximum.
    pub(super) fn pacing_rate(&self) -> Option<Bandwidth> {
        let own = self.cc.pacing_rate().filter(|r| r.bits_per_sec > 0);
        let Some(max) = self.max_pacing_rate else { return own };
        let rate = own.or_else(|| {
            let srtt = self.rtt.srtt()?;
            let cwnd = self.cwnd_pkts();
            let ratio = if cwnd < self.cc.ssthresh() / self.snd_mss.max(1) / 2 { 2.0 } else { 1.2 };
            let window = cwnd.max(self.sb.packets_out.pkts) * self.snd_mss;
            Some(Bandwidth::from_bytes_per(window, srtt).scale(ratio))
        });
        Some(rate.map_or(max, |r| if r.bits_per_sec < max.bits_per_sec { r } else { max }))
    }

    pub(super) fn pacing_blocks(&mut self, now: Time) -> bool {
        if self.pacing_rate().is_some() && now < self.next_pace_at {
            self.timers.pace = Some(self.next_pace_at);
            return true;
        }
        false
    }

    pub(super) fn after_transmit(&mut self, now: Time, ip_len: u32) {
        if let Some(r) = self.pacing_rate() {
            // Linux internal pacing (tcp_update_skb_after_send): the next departure is spaced by
            // this segment's length at the pacing rate. We pace on the IP length.
            self.next_pace_at = self.next_pace_at.max(now) + r.transmit_time(ip_len as u64);
        }
    }

    pub(super) fn try_send(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if !self.can_send_data() {
            return;
        }
        let mut cwnd_stop = false;
        let mut sent_new = false;
        // Segments left in the GSO packet being sent (tso.rs); 0 = the next one starts a packet.
        // PSH goes on the last segment of a packet of two or more (measured: the kernel's
        // one-segment packets carry none).
        let mut gso_left = 0u64;
        let mut gso_multi = false;
        loop {
            // The window is read only where a segment could go out: most calls (an ACK's
            // receiver, an idle sender) stop before it, and it costs a division and a virtual
            // call. Nothing in between changes it.
            // NextSeg rule (1): repair a lost segment.
            if let Some(i) = self.sb.next_rexmit() {
                if self.sb.in_flight_pkts() >= self.cwnd_pkts() {
                    cwnd_stop = true;
                    break;
                }
                if self.pacing_blocks(now) {
                    break;
                }
                gso_left = 0;
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
                if self.sb.packets_out.pkts == 0 && self.timers.persist.is_none() {
                    self.arm_persist(now);
                }
                break;
            }
            if len > 0 && len < self.snd_mss && !is_fin && self.cfg.nagle && self.sb.packets_out.pkts > 0 && self.snd_sml > self.snd_una {
                break; // Nagle with Minshall's rule: one small segment outstanding at a time.
            }
            if self.sb.in_flight_pkts() >= self.cwnd_pkts() {
                cwnd_stop = true;
                break;
            }
            if gso_left == 0 {
                // A new packet: Linux checks pacing per skb (tcp_pacing_check), then sizes it
                // and may defer it (tso.rs).
                if self.pacing_blocks(now) {
                    break;
                }
                if !self.cfg.tso {
                    gso_left = 1;
                } else {
                    match self.gso_decision(now, avail, self.fin_queued) {
                        GsoDecision::Send(n) => {
                            gso_left = n;
                            gso_multi = n > 1;
                        }
                        GsoDecision::Defer { cwnd_limited } => {
                            cwnd_stop |= cwnd_limited;
                            break;
                        }
                    }
                }
            }
            if self.sb.packets_out.pkts == 0
                && self.cfg.slow_start_after_idle
                && (!self.cc.owns_recovery() || self.cfg.cwnd_restart_with_cong_control)
            {
                self.restart_after_idle(now, log);
            }
            gso_left -= 1;
            self.send_new_segment(now, len, is_fin, gso_multi && gso_left == 0, out, log);
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

    /// Linux `tcp_event_data_sent`, run by `__tcp_transmit_skb` for every segment that carries
    /// data — new data, retransmissions and loss probes alike: remember when data last left
    /// (`lsndtime`, from which slow start after idle measures the idle time, so a download whose
    /// last transmission was a retransmission is idle only from that retransmission), and mark the
    /// connection interactive when it answers data received within the delayed-ACK timeout.
    /// (`CA_EVENT_TX_START` is [`TcpEndpoint::tx_start_check`], run before the segment is queued.)
    pub(super) fn event_data_sent(&mut self, now: Time) {
        self.lsndtime = now;
        if self.rcv.answers_within_ato(now) {
            self.rcv.pingpong = true;
        }
    }

    /// Put a new segment of `len` bytes (plus FIN) at SND.NXT on the wire and in the queue; `psh`:
    /// it ends a GSO packet.
    pub(super) fn send_new_segment(
        &mut self,
        now: Time,
        len: u64,
        is_fin: bool,
        psh: bool,
        out: &mut Vec<Packet>,
        log: &mut Vec<TcpLogEvent>,
    ) {
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
            probe_copy: false,
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
            self.event_data_sent(now);
            if self.stats.first_data_sent_at.is_none() {
                self.stats.first_data_sent_at = Some(now);
            }
        }
        if self.timers.rto.is_none() {
            self.arm_rto(now, true);
        }
        self.timers.persist = None;
        if self.ca == CaState::Recovery {
            self.prr.out += 1;
        }
        let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec_len, fin: is_fin, psh });
        self.after_transmit(now, ip_len);
        let app_limited = self.rate.is_app_limited();
        self.cc.on_packet_sent(now, len, self.sb.in_flight_bytes(), app_limited);
    }

    /// Linux `tcp_cwnd_validate` (after a transmission): track whether the window is used, and
    /// when it was not for a whole RTO, decay it (RFC 2861 / RFC 7661 "slow part", Linux
    /// `tcp_cwnd_application_limited`): cwnd = (cwnd + max(used, IW)) / 2. Deviation: Linux also
    /// raises ssthresh to max(ssthresh, ¾·cwnd) first; the CC trait cannot set ssthresh.
    pub(super) fn cwnd_validate(&mut self, now: Time, limited: bool) {
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
        if self.cfg.slow_start_after_idle && !self.cc.owns_recovery() && now.saturating_since(self.cwnd_stamp) >= self.rtt.rto() {
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

    /// Linux `tcp_schedule_loss_probe`: PTO = 2·SRTT (+ 200 ms if a single segment is out, for a
    /// delayed ACK; else + 2 ms), never later than the RTO. Only in the Open state with SACK, in
    /// RACK mode, and with `tlp` on. (Linux also probes in CWR, a state the simulator has no
    /// entry into.)
    pub(super) fn schedule_tlp(&mut self, now: Time) {
        if !self.rack_mode() || !self.cfg.tlp || self.sb.packets_out.pkts == 0 || self.ca != CaState::Open || self.tlp_high_seq != 0 {
            self.timers.tlp = None;
            return;
        }
        let Some(srtt) = self.rtt.srtt_ns() else {
            self.timers.tlp = None;
            return;
        };
        // In nanoseconds (this runs on every ACK that delivers data).
        let extra = if self.sb.packets_out.pkts == 1 { self.cfg.min_rto.as_nanos() as u64 } else { 2_000_000 };
        self.arm_tlp(now, srtt * 2 + extra);
    }

    /// Linux `tcp_send_loss_probe`: send new data if possible, else the last segment again.
    pub(super) fn on_tlp(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.sb.packets_out.pkts == 0 || self.tlp_high_seq != 0 || self.ca != CaState::Open || !self.can_send_data() {
            return;
        }
        let avail = self.app_end.saturating_sub(self.snd_nxt);
        let fin_now = self.fin_queued && !self.fin_sent;
        let len = avail.min(self.snd_mss);
        if (avail > 0 || fin_now) && self.snd_nxt + len <= self.snd_una + self.snd_wnd {
            let is_fin = fin_now && self.snd_nxt + len == self.app_end;
            // Linux sends the probe as one packet (tcp_write_xmit with push_one); one segment
            // here, so no PSH (tso.rs).
            self.send_new_segment(now, len, is_fin, false, out, log);
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
            let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec.len, fin: rec.fin, psh: false });
            if rec.len > 0 {
                self.event_data_sent(now);
            }
            self.after_transmit(now, ip_len);
            self.cc.on_packet_sent(now, rec.len as u64, self.sb.in_flight_bytes(), false);
            self.tlp_retrans = true;
        }
        self.stats.tlp_probes += 1;
        self.tlp_high_seq = self.snd_nxt;
        self.timers.tlp = None;
        self.arm_rto(now, true);
    }

    pub(super) fn retransmit(&mut self, now: Time, i: usize, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
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
            self.arm_rto(now, true);
        }
        let ip_len = self.emit(now, out, log, Kind::Data { start: rec.start, len: rec.len, fin: rec.fin, psh: false });
        if rec.len > 0 {
            self.event_data_sent(now);
        }
        self.after_transmit(now, ip_len);
        self.cc.on_packet_sent(now, rec.len as u64, self.sb.in_flight_bytes(), false);
    }

    /// Linux `tcp_event_data_sent`: a data segment (new, retransmitted or a probe) leaves with
    /// nothing in flight (`tcp_packets_in_flight() == 0`, so also the first retransmission after
    /// an RTO marked everything lost) → `CA_EVENT_TX_START`, for every algorithm. Called before
    /// the segment enters the scoreboard. Independent of slow start after idle.
    pub(super) fn tx_start_check(&mut self, now: Time) {
        if self.sb.in_flight_pkts() == 0 {
            let app_limited = self.rate.is_app_limited();
            self.cc.on_tx_start(now, app_limited);
        }
    }

    /// Linux `tcp_cwnd_restart`: halve cwnd for every RTO of idleness, down to min(IW, cwnd).
    /// Idleness is measured from `lsndtime` (the last segment with data, retransmissions included,
    /// [`TcpEndpoint::event_data_sent`]) against the current RTO, as in
    /// `tcp_slow_start_after_idle_check`. Deviation: Linux checks when the application queues new
    /// data (`tcp_skb_entail`), we when the first new segment leaves; the same instant unless the
    /// peer's window or pacing holds that data back.
    pub(super) fn restart_after_idle(&mut self, now: Time, log: &mut Vec<TcpLogEvent>) {
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
        if self.cc.owns_recovery() {
            // Only with `cwnd_restart_with_cong_control`: what tcp_cwnd_restart did to snd_cwnd.
            self.cc.set_cwnd(w);
        }
        self.cwnd_stamp = now;
        self.cwnd_used = 0;
        log.push(TcpLogEvent::RestartAfterIdle { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cc.cwnd() });
    }

    /// Build one segment and push it onto `out`. Returns its IP length.
    pub(super) fn emit(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>, kind: Kind) -> u32 {
        let mut o = TcpOptions::default();
        let mut fl = flags::ACK;
        let mut seq_off: i64 = self.snd_nxt as i64;
        let mut payload = 0u32;
        // The SYN's window: the receiver's clamp (Linux `tcp_select_initial_window`: the buffer's
        // window share), at most 65 535, in whole segments. For a small fixed buffer this is below
        // the buffer's size: offering the size would let the peer send more than the receiver
        // can queue out of order (issue 15, session 14).
        let syn_window = (self.rcv.window_clamp().min(65_535) / self.cfg.mss as u64 * self.cfg.mss as u64) as u16;
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
            Kind::Data { start, len, fin, psh } => {
                seq_off = start as i64;
                payload = len;
                if fin {
                    fl |= flags::FIN;
                }
                if len > 0 && (psh || start + len as u64 == self.app_end) {
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
            let w = self.rcv.advertise();
            window = (w >> self.rcv.wscale).min(65_535) as u16;
            if w == 0 && !self.zero_window_advertised {
                log.push(TcpLogEvent::ZeroWindow { at: now, flow: self.flow, from_node: self.local.node });
            }
            self.zero_window_advertised = w == 0;
            self.rcv.on_ack_sent(self.cfg.delayed_ack);
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
        self.last_xmit_at = now;
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
