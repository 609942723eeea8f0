//! Processing of an incoming ACK, as Linux `tcp_ack` (net/ipv4/tcp_input.c) orders it:
//!
//! 1. window update (`tcp_ack_update_window` / `tcp_may_update_window`);
//! 2. SACK tagging (`tcp_sacktag_write_queue`): newly SACKed segments are delivered, D-SACKs
//!    noticed, RACK and the delivery-rate sampler told;
//! 3. the cumulative ACK (`tcp_clean_rtx_queue`), or without SACK a duplicate ACK counted as one
//!    SACKed segment (`tcp_add_reno_sack`);
//! 4. the RTT sample (`tcp_ack_update_rtt`) and the retransmission timer (`tcp_rearm_rto`);
//! 5. the tail-loss-probe outcome (`tcp_process_tlp_ack`);
//! 6. loss detection and the CA state machine (`tcp_fastretrans_alert`, in `recovery.rs`);
//! 7. congestion control (`tcp_cong_control`): the algorithm's `on_ack` with the rate sample, the
//!    cwnd clamp, PRR during recovery;
//! 8. what the socket sees: everything acknowledged, send-buffer space, the FIN acknowledged.
//!
//! Each step is a function named after the Linux step it mirrors; what one ACK carries between
//! them (Linux's `flag` bits and `struct tcp_sacktag_state`) is an [`AckFlags`].

use std::time::Duration;

use tcpvideo_model::cc::{AckEvent, CongestionSignal};
use tcpvideo_model::Time;

use super::endpoint::{SocketEvent, TcpEndpoint, TcpState};
use super::log::TcpLogEvent;
use super::recovery::CaState;
use super::seq::unwrap;
use crate::packet::{flags, Packet, MAX_SACK_BLOCKS};

/// What one ACK did, gathered by the steps of [`TcpEndpoint::on_ack`] (Linux's `flag` bits,
/// `first_sackt`/`last_sackt` and `first_ackt`/`last_ackt`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AckFlags {
    /// The cumulative ACK moved SND.UNA (Linux FLAG_SND_UNA_ADVANCED).
    pub una_advanced: bool,
    /// Bytes newly delivered: cumulatively ACKed plus newly SACKed (Linux `acked_sacked`).
    pub delivered_bytes: u64,
    /// The same in segments.
    pub delivered_pkts: u64,
    /// Segments newly SACKed by this ACK.
    pub newly_sacked_pkts: u64,
    /// The first SACK block is a D-SACK (RFC 2883).
    pub dsack: bool,
    /// Never-retransmitted data newly (S)ACKed by this ACK (Linux FLAG_ORIG_SACK_ACKED).
    pub orig_delivered: bool,
    /// Send times of the oldest and newest never-retransmitted segment newly SACKed.
    pub first_sackt: Option<Time>,
    pub last_sackt: Option<Time>,
    /// Send times of the oldest and newest segment newly cumulatively ACKed (not SACKed before).
    pub first_ackt: Option<Time>,
    pub last_ackt: Option<Time>,
    /// Retransmitted data was cumulatively ACKed (Linux FLAG_RETRANS_DATA_ACKED): Karn's rule.
    pub retrans_acked: bool,
    /// The ACK covers our FIN.
    pub fin_acked: bool,
    /// End of the highest SACKed segment *before* this ACK, SND.UNA when nothing was SACKed
    /// (Linux `prior_fack`, taken at the top of `tcp_ack`, before the SACK blocks are tagged):
    /// the cumulative ACK shows reordering only for a hole below data SACKed by an earlier ACK.
    pub prior_fack: u64,
}

impl TcpEndpoint {
    /// Linux `tcp_ack`: one incoming ACK, step by step (see the file header).
    pub(super) fn on_ack(&mut self, now: Time, pkt: &Packet, seg: i64, log: &mut Vec<TcpLogEvent>) {
        let ack = unwrap(self.iss, self.snd_una, pkt.ack);
        if ack > self.snd_nxt as i64 || ack < self.snd_una as i64 {
            return; // acknowledges something never sent, or too old
        }
        let ack = ack as u64;
        let prior_in_flight = self.sb.in_flight_bytes();
        let prior_wnd = self.snd_wnd;
        let nwin = self.ack_update_window(pkt, ack, seg);

        let mut f = AckFlags { prior_fack: self.sb.highest_sacked_or(self.snd_una), ..AckFlags::default() };
        if self.sack_ok && pkt.options.sack_count > 0 {
            self.sacktag(now, pkt, ack, &mut f);
        }
        f.una_advanced = ack > self.snd_una;
        if f.una_advanced {
            self.clean_rtx_queue(now, ack, &mut f);
        } else if !self.sack_ok && pkt.payload_len == 0 && !pkt.has(flags::FIN) && nwin == prior_wnd && self.sb.packets_out.pkts > 0 {
            self.add_reno_sack(&mut f);
        }

        let ca_rtt = self.ack_update_rtt(now, pkt, &mut f);
        if f.una_advanced {
            self.rearm_rto(now);
        }
        self.process_tlp_ack(now, pkt, ack, &f, prior_in_flight);
        let newly_lost = self.fastretrans_alert(now, pkt, &f, prior_in_flight, log);
        self.cong_control(now, &f, newly_lost, ca_rtt, prior_in_flight);
        self.stats.max_cwnd_bytes = self.stats.max_cwnd_bytes.max(self.cwnd_bytes());
        if f.una_advanced || f.newly_sacked_pkts > 0 {
            self.schedule_tlp(now);
        }

        // Window opened: stop probing.
        if self.snd_wnd > 0 && self.window_allows_next() {
            self.timers.persist = None;
            self.persist_backoff = 0;
        }
        if f.una_advanced {
            self.ack_socket_events(now, &f);
        }
    }

    /// Linux `tcp_ack_update_window` (`tcp_may_update_window`): take the advertised window from a
    /// newer segment, or a larger one from the same. Returns the window this ACK advertises.
    fn ack_update_window(&mut self, pkt: &Packet, ack: u64, seg: i64) -> u64 {
        let nwin = (pkt.window as u64) << self.snd_wscale;
        let seg_u = seg.max(0) as u64;
        if ack > self.snd_una || seg_u > self.snd_wl1 || (seg_u == self.snd_wl1 && nwin > self.snd_wnd) {
            self.snd_wnd = nwin;
            self.snd_wl1 = seg_u;
        }
        nwin
    }

    /// Linux `tcp_sacktag_write_queue`: tag newly SACKed segments (above the cumulative ACK and
    /// below SND.NXT) as delivered, and notice a D-SACK.
    fn sacktag(&mut self, now: Time, pkt: &Packet, ack: u64, f: &mut AckFlags) {
        // RFC 2883 §4: a first block below the cumulative ACK, or inside the second, is a D-SACK.
        let sk = pkt.options.sack();
        let (l0, r0) = (unwrap(self.iss, self.snd_una, sk[0].0), unwrap(self.iss, self.snd_una, sk[0].1));
        f.dsack = r0 <= ack as i64
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
        let min_rtt = self.rtt.min_rtt_ns();
        let (mut first, mut last, mut orig) = (f.first_sackt, f.last_sackt, f.orig_delivered);
        // Linux tcp_sacktag_one: FLAG_ORIG_SACK_ACKED only for data sent before the RTO
        // (`!after(end_seq, tp->high_seq)`); new data SACKed after it says nothing of the RTO.
        let high_seq = self.high_seq;
        let d = self.sb.apply_sack(&blocks[..n], |rec| {
            rate.on_delivered(rec);
            rack.on_delivered(rec, now, min_rtt);
            if !rec.ever_retrans {
                orig |= rec.end() <= high_seq;
                // Linux first_sackt / last_sackt (tcp_sacktag_one).
                first = Some(first.map_or(rec.sent_at, |t: Time| t.min(rec.sent_at)));
                last = Some(last.map_or(rec.sent_at, |t: Time| t.max(rec.sent_at)));
            }
        });
        (f.first_sackt, f.last_sackt, f.orig_delivered) = (first, last, orig);
        f.delivered_bytes += d.delivered_bytes;
        f.delivered_pkts += d.delivered_pkts;
        f.newly_sacked_pkts = d.newly_sacked_pkts;
        self.rack.reord_seen |= d.reordered;
    }

    /// Linux `tcp_clean_rtx_queue`: remove what the cumulative ACK covers, deliver what was not
    /// SACKed before, collect the sequence RTT's send times; then SND.UNA = ACK.
    fn clean_rtx_queue(&mut self, now: Time, ack: u64, f: &mut AckFlags) {
        let rate = &mut self.rate;
        let rack = &mut self.rack;
        let min_rtt = self.rtt.min_rtt_ns();
        let sack_ok = self.sack_ok;
        let (mut first, mut last, mut orig) = (f.first_ackt, f.last_ackt, f.orig_delivered);
        let (mut retrans_acked, mut fin_acked) = (f.retrans_acked, f.fin_acked);
        let high_seq = self.high_seq;
        let d = self.sb.ack_cumulative(ack, f.prior_fack, |rec, was_sacked| {
            if !was_sacked {
                rate.on_delivered(rec);
                if sack_ok {
                    rack.on_delivered(rec, now, min_rtt);
                }
                // Linux tcp_clean_rtx_queue: only data sent before the RTO (high_seq).
                if !rec.ever_retrans && rec.end() <= high_seq {
                    orig = true;
                }
            }
            // Linux tcp_clean_rtx_queue: retransmitted data (even SACKed earlier) forbids the
            // sequence sample for the whole ACK (FLAG_RETRANS_DATA_ACKED, Karn); data SACKed
            // earlier gives none (its send time is old: the sample would include the time the
            // hole below it took to repair). first_ackt is the oldest, last_ackt the newest.
            if rec.ever_retrans {
                retrans_acked = true;
            } else if !was_sacked {
                if first.is_none() {
                    first = Some(rec.sent_at);
                }
                last = Some(rec.sent_at);
            }
            if rec.fin {
                fin_acked = true;
            }
        });
        (f.first_ackt, f.last_ackt, f.orig_delivered) = (first, last, orig);
        (f.retrans_acked, f.fin_acked) = (retrans_acked, fin_acked);
        f.delivered_bytes += d.delivered_bytes;
        f.delivered_pkts += d.delivered_pkts;
        self.stats.bytes_acked += d.cum_acked_bytes;
        if self.sack_ok {
            self.rack.reord_seen |= d.reordered;
        }
        if !self.sack_ok {
            let reno_before = self.sb.reno_sacked;
            self.sb.remove_reno_sacks(d.cum_acked_pkts);
            // Duplicate ACKs were already credited as delivered segments.
            let credited = (reno_before - self.sb.reno_sacked) * self.snd_mss;
            f.delivered_bytes = f.delivered_bytes.saturating_sub(credited);
        }
        self.snd_una = ack;
    }

    /// Linux `tcp_add_reno_sack`: without SACK, a duplicate ACK (RFC 5681 §2) counts as one
    /// SACKed segment.
    fn add_reno_sack(&mut self, f: &mut AckFlags) {
        if self.sb.reno_sacked + self.sb.lost_out.pkts < self.sb.packets_out.pkts {
            self.sb.reno_sacked += 1;
            f.delivered_bytes += self.snd_mss;
            f.delivered_pkts += 1;
        }
    }

    /// Linux `tcp_ack_update_rtt`: the sequence RTT (oldest newly ACKed segment), else the SACK
    /// RTT (oldest newly SACKed one; both never retransmitted), else — only when the ACK advances
    /// snd_una (FLAG_ACKED, RFC 7323 RTTM rule) — the timestamp echo. That sample feeds SRTT/RTO.
    /// Returns Linux's `ca_rtt_us`, which the CC and min_rtt get: the RTT of the newest (S)ACKed
    /// segment (last_sackt, else last_ackt), else the same TS sample.
    fn ack_update_rtt(&mut self, now: Time, pkt: &Packet, f: &mut AckFlags) -> Option<Duration> {
        if f.retrans_acked {
            f.first_ackt = None;
            f.last_ackt = None;
        }
        let ts = if f.first_ackt.is_none() && f.first_sackt.is_none() && f.una_advanced { self.ts_sample(now, pkt) } else { None };
        let sample = f.first_ackt.or(f.first_sackt).map(|t| now - t).or(ts);
        let ca_sample = f.last_sackt.or(f.last_ackt).map(|t| now - t).or(ts);
        if let (Some(m), Some(ca)) = (sample, ca_sample) {
            self.rtt.on_sample(m, self.snd_una, self.snd_nxt);
            self.rtt.note_min(ca);
            self.stats.srtt = self.rtt.srtt();
            self.stats.min_rtt = self.rtt.min_rtt();
        }
        ca_sample
    }

    /// Linux `tcp_rearm_rto` after SND.UNA advanced: restart the timer while data is outstanding;
    /// an open window ends zero-window probing's backoff.
    fn rearm_rto(&mut self, now: Time) {
        if self.sb.packets_out.pkts > 0 {
            self.arm_rto(now, true);
        } else {
            self.timers.rto = None;
        }
        if self.snd_wnd > 0 {
            self.persist_backoff = 0;
        }
    }

    /// Linux `tcp_process_tlp_ack`: the tail-loss probe's outcome.
    fn process_tlp_ack(&mut self, now: Time, pkt: &Packet, ack: u64, f: &AckFlags, prior_in_flight: u64) {
        if self.tlp_high_seq == 0 || ack < self.tlp_high_seq {
            return;
        }
        if !self.tlp_retrans || f.dsack {
            self.tlp_high_seq = 0;
        } else if ack > self.tlp_high_seq {
            // The probe repaired a loss nobody detected: reduce the window once (CWR).
            self.cc.on_congestion_event(now, CongestionSignal::FastRetransmit, prior_in_flight);
            self.cc.on_recovery_exit(now);
            self.tlp_high_seq = 0;
        } else if !f.una_advanced && f.newly_sacked_pkts == 0 && pkt.payload_len == 0 {
            self.tlp_high_seq = 0; // original and probe both arrived
        }
    }

    /// Linux `tcp_cong_control`: the algorithm reacts to the delivery (with the rate sample); the
    /// cwnd clamp holds; during fast recovery PRR sets the window.
    fn cong_control(&mut self, now: Time, f: &AckFlags, newly_lost: u64, ca_rtt: Option<Duration>, prior_in_flight: u64) {
        let rs = self.rate.generate(now, f.delivered_bytes, newly_lost, self.rtt.min_rtt_ns());
        if f.delivered_bytes == 0 && f.newly_sacked_pkts == 0 {
            return;
        }
        let in_recovery = self.ca == CaState::Recovery;
        let ev = AckEvent {
            now,
            acked_bytes: f.delivered_bytes,
            rtt_sample: ca_rtt,
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
            if let Some(c) = self.prr.on_ack(f.delivered_pkts, newly_lost > 0, f.una_advanced, self.sb.in_flight_pkts()) {
                self.prr_cwnd_pkts = c;
            }
        }
    }

    /// Linux `tcp_is_cwnd_limited`.
    pub(super) fn cwnd_limited(&self) -> bool {
        let cwnd_pkts = (self.cwnd_bytes() / self.snd_mss).max(1);
        if self.cc.in_slow_start() {
            cwnd_pkts < 2 * self.max_packets_out
        } else {
            self.is_cwnd_limited
        }
    }

    /// What SND.UNA's advance means to the socket: everything acknowledged, send-buffer space
    /// for a writer that waits, our FIN acknowledged (RFC 9293 state transitions).
    fn ack_socket_events(&mut self, now: Time, f: &AckFlags) {
        if self.snd_una >= self.app_end && !self.all_acked_reported {
            self.all_acked_reported = true;
            self.stats.last_ack_of_data_at = Some(now);
            self.events.push(SocketEvent::AllAcked);
        }
        if self.writable_wanted && self.send_buffer_free() > 0 {
            self.writable_wanted = false;
            self.events.push(SocketEvent::Writable);
        }
        if f.fin_acked {
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
