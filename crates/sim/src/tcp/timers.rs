//! Timers, as Linux net/ipv4/tcp_timer.c: the retransmission timer (`tcp_retransmit_timer`:
//! SYN retries, then RTO recovery: all un-SACKed data marked lost, cwnd to one segment, ssthresh
//! reduced once per episode, the head retransmitted, exponential backoff), zero-window probes
//! (`tcp_probe_timer`), keep-alive (`tcp_keepalive_timer`), TIME_WAIT, and the dispatch of the
//! timers other files own (tail-loss probe and RACK reordering timer: `output.rs`,
//! `recovery.rs`; pacing release: `output.rs`; delayed ACK: `recv.rs`).
//!
//! The endpoint's seven timers are one [`Timers`] value; the delayed-ACK timer lives with the
//! receive side.

use std::time::Duration;

use tcpvideo_model::cc::CongestionSignal;
use tcpvideo_model::Time;

use super::endpoint::{SocketEvent, TcpEndpoint, TcpState};
use super::log::{RetransmitCause, TcpLogEvent};
use super::output::Kind;
use super::recovery::CaState;
use crate::packet::Packet;

/// When a Linux `timer_list` armed at `now` to expire `after` later fires, on a kernel ticking
/// at `hz` (0: exactly `after` later, no tick). Linux counts the timeout in jiffies (truncated:
/// the delayed-ACK ATO is an integer number of jiffies, TCP_ATO_MIN = HZ/25 = 10 at HZ = 250,
/// and recv.rs adapts it in jiffies as Linux does, e.g. 20 → 15 → 12 → 11 → 10 after a missed
/// delayed ACK), the timer wheel puts it in the bucket
/// one granule *after* its expiry so that it never fires early (kernel/time/timer.c
/// `calc_index`: "Round up with level granularity", `(expires >> LVL_SHIFT(lvl)) + 1`; level
/// n has granules of 8^n jiffies and holds timers less than 63·8^(n−1) jiffies ahead), and it
/// fires at that tick. So a 40-ms delayed ACK at HZ = 250 leaves 40–44 ms after the segment (the
/// tick phase), not 40: the emulated 6.18 client's delayed ACKs came 42.9 and 43.9 ms after the
/// segment (issue 15, session 12, `icsk_ack.ato` = 10 jiffies traced). Deviation: the jiffy
/// clock is aligned with simulated time 0 (a real kernel's tick phase is arbitrary).
pub(super) fn timer_list_expiry(now: Time, after: Duration, hz: u32) -> Time {
    if hz == 0 {
        return now + after;
    }
    let tick_ns = super::recv::tick_ns(hz);
    let now_j = now.as_nanos() / tick_ns;
    let delta = (after.as_nanos() as u64 / tick_ns).max(1);
    let mut shift = 0; // LVL_SHIFT(lvl) = 3·lvl
    while shift < 21 && delta >= 63u64 << shift {
        shift += 3;
    }
    let fires_j = (((now_j + delta) >> shift) + 1) << shift;
    Time::ZERO + Duration::from_nanos(fires_j * tick_ns)
}

/// The endpoint's timers: each an absolute expiry time, `None` when not armed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Timers {
    /// Retransmission timer (RFC 6298; SYN/SYN-ACK retries during the handshake).
    pub rto: Option<Time>,
    /// Zero-window probe (persist) timer.
    pub persist: Option<Time>,
    /// Keep-alive (SO_KEEPALIVE) timer.
    pub keepalive: Option<Time>,
    /// Pacing: the next segment may leave then.
    pub pace: Option<Time>,
    /// End of TIME_WAIT.
    pub time_wait: Option<Time>,
    /// RACK reordering-window timer.
    pub reo: Option<Time>,
    /// Tail-loss-probe timer (PTO).
    pub tlp: Option<Time>,
}

impl TcpEndpoint {
    /// When the endpoint next needs [`TcpEndpoint::on_timer`]: its earliest timer, the receive
    /// side's delayed ACK included.
    pub fn next_timer(&self) -> Option<Time> {
        // Runs after every event an endpoint handles: folded branch-free over the eight slots
        // (an iterator chain of Options was ~3 % of an onoff run).
        let t = &self.timers;
        let all = [t.rto, t.persist, t.keepalive, t.pace, t.time_wait, t.reo, t.tlp, self.rcv.delack_at];
        let any = all.iter().fold(false, |a, o| a | o.is_some());
        let min = all.iter().fold(u64::MAX, |m, o| m.min(o.map_or(u64::MAX, |x| x.0)));
        any.then_some(Time(min))
    }

    pub(super) fn clear_timers(&mut self) {
        self.timers = Timers::default();
        self.rcv.delack_at = None;
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if self.timers.time_wait.is_some_and(|t| t <= now) {
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
        if self.timers.tlp.is_some_and(|t| t <= now) {
            self.timers.tlp = None;
            self.on_tlp(now, out, log);
        }
        if self.timers.reo.is_some_and(|t| t <= now) {
            self.timers.reo = None;
            self.on_reo_timeout(now, out, log);
        }
        if self.timers.rto.is_some_and(|t| t <= now) {
            self.timers.rto = None;
            self.on_rto(now, out, log);
        }
        if self.timers.persist.is_some_and(|t| t <= now) {
            self.timers.persist = None;
            self.on_persist(now, out, log);
        }
        if self.timers.keepalive.is_some_and(|t| t <= now) {
            self.timers.keepalive = None;
            self.on_keepalive(now, out, log);
            if self.state == TcpState::Closed {
                return;
            }
        }
        if self.timers.pace.is_some_and(|t| t <= now) {
            self.timers.pace = None;
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

    pub(super) fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
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
                    at: now,
                    flow: self.flow,
                    from_node: self.local.node,
                    seq: self.iss,
                    len: 0,
                    cause: RetransmitCause::SynTimeout,
                });
                let kind = if self.state == TcpState::SynSent { Kind::Syn } else { Kind::SynAck };
                self.syn_sent_at = now;
                self.emit(now, out, log, kind);
                self.timers.rto = Some(now + rto);
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
                    self.save_undo_window();
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
                self.timers.tlp = None;
                self.tlp_high_seq = 0;
                self.timers.reo = None;
                self.ca = CaState::Loss;
                self.high_seq = self.snd_nxt;
                self.rtt.on_timeout();
                self.stats.rto_count += 1;
                let rto = self.rtt.backed_off_rto();
                log.push(TcpLogEvent::Rto { at: now, flow: self.flow, from_node: self.local.node, backoff: self.rtt.backoff, rto });
                self.timers.rto = Some(now + rto);
                self.next_pace_at = now;
                self.retransmit_head_on_rto(now, out, log);
                self.try_send(now, out, log);
            }
        }
    }

    /// Linux `tcp_retransmit_timer` sends the head of the retransmission queue whatever its marks
    /// (`tcp_retransmit_skb(sk, tcp_rtx_queue_head(sk), 1)`), before `tcp_xmit_retransmit_queue`
    /// sends the rest on later ACKs. Usually the head is a pending retransmission and `try_send`
    /// would send it first anyway; it is not when its earlier retransmission kept its
    /// retransmitted mark through `mark_all_lost` (an undo had cleared its LOST mark, see
    /// `Scoreboard::mark_lost`), and then only this re-sends it. Deviation: Linux adds such a
    /// head to `retrans_out` a second time (its "retrans_out leaked" debug case); we count it once.
    fn retransmit_head_on_rto(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        if !self.can_send_data() || self.sb.front().is_none_or(|h| h.sacked) {
            return;
        }
        self.retransmit(now, 0, out, log);
    }

    pub(super) fn probe_interval(&self) -> Duration {
        let base = self.rtt.rto().max(self.cfg.min_rto).as_nanos();
        Duration::from_nanos((base << self.persist_backoff.min(31)).min(self.cfg.max_rto.as_nanos()) as u64)
    }

    pub(super) fn on_persist(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
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
            // tcp_write_wakeup marks the probe PSH (with the Linux sender model, `tso`).
            self.send_new_segment(now, len, false, self.cfg.tso, out, log);
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
        self.timers.persist = Some(now + self.probe_interval());
    }

    pub(super) fn on_keepalive(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>) {
        let Some(ka) = self.cfg.keepalive else { return };
        if !matches!(self.state, TcpState::Established | TcpState::CloseWait) {
            return;
        }
        if self.sb.packets_out.pkts > 0 || self.has_data_to_send() {
            self.timers.keepalive = Some(now + ka.idle);
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
            self.timers.keepalive = Some(now + ka.interval);
        } else {
            self.timers.keepalive = Some(self.last_rcv_at + ka.idle);
        }
    }

    pub(super) fn reset(&mut self, now: Time, out: &mut Vec<Packet>, log: &mut Vec<TcpLogEvent>, send_rst: bool) {
        if send_rst {
            self.emit(now, out, log, Kind::Rst);
        }
        self.state = TcpState::Closed;
        self.clear_timers();
        self.events.push(SocketEvent::Reset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_us(us: u64) -> Time {
        Time::ZERO + Duration::from_micros(us)
    }

    #[test]
    fn a_40_ms_delayed_ack_fires_on_the_tick_after_its_tenth_jiffy() {
        // HZ = 250: jiffies of 4 ms. Armed at 101 ms (jiffy 25): expires at jiffy 35, the wheel's
        // bucket is jiffy 36 = 144 ms, 43 ms after arming; armed on a tick edge, 44 ms.
        let ato = Duration::from_millis(40);
        assert_eq!(timer_list_expiry(at_us(101_000), ato, 250), at_us(144_000));
        assert_eq!(timer_list_expiry(at_us(100_000), ato, 250), at_us(144_000));
        assert_eq!(timer_list_expiry(at_us(103_900), ato, 250), at_us(144_000), "40.1 ms");
        assert_eq!(timer_list_expiry(at_us(101_000), ato, 0), at_us(141_000), "no tick: exact");
    }

    #[test]
    fn a_timer_63_jiffies_or_more_ahead_rounds_up_to_eight_jiffies() {
        // Level 1 of the wheel: granules of 8 jiffies. 300 ms = 75 jiffies from jiffy 25:
        // expires at 100, bucket ((100 >> 3) + 1) << 3 = 104 = 416 ms.
        assert_eq!(timer_list_expiry(at_us(101_000), Duration::from_millis(300), 250), at_us(416_000));
    }

    #[test]
    fn the_atos_of_a_deflating_ato_truncate_to_linuxs_integer_jiffies() {
        // After a missed delayed ACK Linux's ATO is 20 jiffies and each quick segment halves it
        // plus 5 (integer): 15, 12, 11, 10. The simulator's 60, 50, 45, 42.5 ms truncate to those.
        for (ms_x10, jiffies) in [(600, 15u64), (500, 12), (450, 11), (425, 10)] {
            let ato = Duration::from_micros(ms_x10 * 100);
            assert_eq!(timer_list_expiry(at_us(0), ato, 250), at_us((jiffies + 1) * 4000));
        }
    }
}
