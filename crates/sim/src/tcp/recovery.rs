//! Loss recovery: the congestion-avoidance state machine and undo, as Linux
//! `tcp_fastretrans_alert` and its helpers in net/ipv4/tcp_input.c, plus RACK's reordering timer
//! (`tcp_rack_reo_timeout`, net/ipv4/tcp_recovery.c).
//!
//! States (Linux `icsk_ca_state`): Open → Disorder (SACKed data above a hole) → Recovery (fast
//! recovery with PRR, entered by [`TcpEndpoint::enter_recovery`]) and Loss (after an RTO, entered
//! in `timers.rs`). A recovery or an RTO is undone when it proves spurious: every retransmission
//! D-SACKed, or the ACK echoes a timestamp older than the first retransmission (Eifel, RFC 3522,
//! [`TcpEndpoint::echoes_original_transmission`]), or with SACK never-retransmitted data arrives
//! after an RTO (F-RTO step 3b, RFC 5682). The ¾·cwnd and undo arithmetic is the model's
//! (`tcpvideo_model::cc::reno`), shared with the algorithms.

use tcpvideo_model::cc::reno::{reno_undo_cwnd, three_quarters};
use tcpvideo_model::cc::CongestionSignal;
use tcpvideo_model::Time;

use super::ack::AckFlags;
use super::endpoint::TcpEndpoint;
use super::log::TcpLogEvent;
use crate::packet::Packet;

/// Linux `icsk_ca_state` (CWR is not used: no ECN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CaState {
    Open,
    Disorder,
    Recovery,
    Loss,
}

impl TcpEndpoint {
    /// Linux `tcp_fastretrans_alert`: mark losses (RACK, or DupThresh / NewReno) and move the CA
    /// state machine for one ACK. Returns what was newly marked lost (for the rate sample and PRR).
    pub(super) fn fastretrans_alert(
        &mut self,
        now: Time,
        pkt: &Packet,
        f: &AckFlags,
        prior_in_flight: u64,
        log: &mut Vec<TcpLogEvent>,
    ) -> u64 {
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
                if f.dsack && self.undo_retrans > 0 {
                    // A D-SACK reports one of our retransmissions as unnecessary (RFC 3708).
                    self.undo_retrans -= 1;
                }
                if self.snd_una >= self.high_seq {
                    self.try_undo_recovery(now, pkt, log);
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
                } else if f.una_advanced && self.try_undo_partial(now, pkt, log) {
                    // Undone, or retransmissions still out: no more loss marking on this ACK.
                } else if self.sack_ok {
                    if !rack_mode {
                        newly_lost += self.sb.mark_lost_by_sack(dupthresh);
                    }
                } else if f.una_advanced {
                    // NewReno partial ACK (RFC 6582 §3.2 step 3): the next hole is lost too.
                    newly_lost += self.sb.mark_head_lost();
                }
            }
            CaState::Loss => self.process_loss(now, pkt, f),
        }
        newly_lost
    }

    /// Linux `tcp_try_undo_recovery` at the full ACK ending a fast recovery: every retransmission
    /// was D-SACKed, or the full ACK echoes a TSval older than our first retransmission (Eifel):
    /// the recovery was spurious (reordering), restore the window. Else end it normally.
    fn try_undo_recovery(&mut self, now: Time, pkt: &Packet, log: &mut Vec<TcpLogEvent>) {
        let delayed = self.echoes_original_transmission(pkt);
        if self.cfg.frto && self.undo_possible && (self.undo_retrans == 0 || delayed) {
            self.undo_possible = false;
            self.undo_cwnd_reduction(now);
            self.stats.spurious_recoveries += 1;
            self.ca = CaState::Open;
            log.push(TcpLogEvent::ExitRecovery { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cwnd_bytes() });
        } else {
            self.exit_recovery(now, log);
        }
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK during fast recovery that echoes a TSval older
    /// than our first retransmission (Eifel) means the hole was filled by the delayed original,
    /// not by the retransmission. With no retransmission still out the recovery is undone (its
    /// lost marks too) and the state goes back to Open or Disorder (`tcp_try_keep_open`); with
    /// retransmissions out, Linux keeps clocking out data but marks nothing more lost on this ACK.
    /// Returns whether the caller skips loss marking. Gated on `frto` like the other undos.
    fn try_undo_partial(&mut self, now: Time, pkt: &Packet, log: &mut Vec<TcpLogEvent>) -> bool {
        if !(self.cfg.frto && self.undo_possible && self.echoes_original_transmission(pkt)) {
            return false;
        }
        if self.sb.retrans_out.pkts > 0 {
            return true;
        }
        self.undo_possible = false;
        self.sb.unmark_all_lost();
        self.undo_cwnd_reduction(now);
        self.stats.spurious_recoveries += 1;
        self.ca = if self.sb.sacked_pkts() > 0 { CaState::Disorder } else { CaState::Open };
        log.push(TcpLogEvent::ExitRecovery { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cwnd_bytes() });
        false
    }

    /// Linux `tcp_process_loss` → `tcp_try_undo_loss`: was the RTO spurious? With timestamps: the
    /// ACK advances SND.UNA and echoes a TSval older than our first retransmission, so it
    /// acknowledges an original transmission (Eifel, RFC 3522). With SACK: never-retransmitted
    /// data was (S)ACKed (F-RTO step 3b, RFC 5682). Deviation: F-RTO step 2b (send new data
    /// instead of retransmitting after the first ACK) is not modelled.
    fn process_loss(&mut self, now: Time, pkt: &Packet, f: &AckFlags) {
        let delayed = f.una_advanced && self.echoes_original_transmission(pkt);
        let frto = self.sack_ok && f.orig_delivered;
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

    /// The Eifel test (RFC 3522 §3.2, Linux `tcp_packet_delayed`): with timestamps, the segment
    /// echoes a TSval older than our first retransmission of the episode, so what it acknowledges
    /// was an original transmission.
    fn echoes_original_transmission(&self, pkt: &Packet) -> bool {
        self.ts_ok
            && self
                .retrans_stamp
                .is_some_and(|t| pkt.options.timestamps.is_some_and(|(_, ecr)| ecr != 0 && (ecr.wrapping_sub(self.ts_val(t)) as i32) < 0))
    }

    pub(super) fn enter_recovery(&mut self, now: Time, prior_in_flight: u64, log: &mut Vec<TcpLogEvent>) -> u64 {
        let mut newly = 0;
        if self.sb.pending_rexmit() == 0 {
            // Linux tcp_update_scoreboard(fast_rexmit=1): at least the head is retransmitted.
            newly += self.sb.mark_head_lost();
        }
        let prior_cwnd_pkts = (self.cc.cwnd() / self.snd_mss).max(1);
        // Undo bookkeeping (Linux tcp_init_undo).
        self.save_undo_window();
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
        self.timers.tlp = None;
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

    pub(super) fn exit_recovery(&mut self, now: Time, log: &mut Vec<TcpLogEvent>) {
        self.ca = if self.sb.sacked_pkts() > 0 { CaState::Disorder } else { CaState::Open };
        self.cc.on_recovery_exit(now);
        log.push(TcpLogEvent::ExitRecovery { at: now, flow: self.flow, from_node: self.local.node, cwnd_bytes: self.cwnd_bytes() });
    }

    /// Linux `tcp_current_ssthresh` outside CWR/Recovery: max(ssthresh, ¾·cwnd), ¾ of whole
    /// segments ([`three_quarters`], shared with the algorithms), in bytes (u64::MAX stays infinite).
    pub(super) fn current_ssthresh(&self) -> u64 {
        self.cc.ssthresh().max(three_quarters(self.cwnd_pkts()) * self.snd_mss)
    }

    /// Linux `tcp_init_undo`'s window part: remember cwnd and ssthresh before a congestion event
    /// reduces them, for [`TcpEndpoint::undo_cwnd_reduction`].
    pub(super) fn save_undo_window(&mut self) {
        self.undo_prior_cwnd = self.cc.cwnd();
        self.undo_prior_ssthresh = self.current_ssthresh();
    }

    /// Linux `tcp_undo_cwnd_reduction` for window-based algorithms: cwnd = max(cwnd, prior_cwnd)
    /// (`tcp_reno_undo_cwnd`) and ssthresh = max(ssthresh, prior_ssthresh); then the algorithm's
    /// own undo (`on_spurious_congestion`).
    pub(super) fn undo_cwnd_reduction(&mut self, now: Time) {
        self.cc.on_spurious_congestion(now);
        if !self.cc.owns_recovery() {
            let cwnd = self.cc.cwnd();
            let undone = reno_undo_cwnd(cwnd, self.undo_prior_cwnd);
            if undone != cwnd {
                self.cc.set_cwnd(undone);
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
    pub(super) fn time_to_recover(&mut self, dupthresh: u64, rack_mode: bool) -> (u64, bool) {
        let marked = if self.sack_ok && !rack_mode { self.sb.mark_lost_by_sack(dupthresh) } else { 0 };
        let by_dupthresh = !rack_mode && self.sb.sacked_pkts() >= dupthresh;
        (marked, self.sb.lost_out.pkts > 0 || by_dupthresh)
    }

    pub(super) fn rack_mode(&self) -> bool {
        self.cfg.rack_tlp && self.sack_ok
    }

    /// Run RACK's loss scan and (re)arm its reordering timer; returns bytes newly marked lost.
    pub(super) fn rack_scan(&mut self, now: Time) -> u64 {
        self.rack.advanced = false;
        if !self.rack.valid {
            return 0;
        }
        let reo = self.rack.reo_wnd_ns(
            matches!(self.ca, CaState::Recovery | CaState::Loss),
            self.sb.sacked_pkts(),
            self.cfg.dupack_threshold.max(1) as u64,
            self.rtt.min_rtt_ns(),
            self.rtt.srtt_ns(),
        );
        let (lost, wait) = self.sb.rack_detect(now, &self.rack, reo);
        match wait {
            Some(w) => self.arm_reo(now, w),
            None => self.timers.reo = None,
        }
        lost
    }

    /// Linux `tcp_rack_reo_timeout`.
    pub(super) fn on_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
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
}
