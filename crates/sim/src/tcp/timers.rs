//! Timers, as Linux net/ipv4/tcp_timer.c: the retransmission timer (`tcp_retransmit_timer`:
//! SYN retries, then RTO recovery: all un-SACKed data marked lost, cwnd to one segment, ssthresh
//! reduced once per episode, the head retransmitted, exponential backoff), zero-window probes
//! (`tcp_probe_timer`), keep-alive (`tcp_keepalive_timer`), TIME_WAIT, and the dispatch of the
//! timers other files own (tail-loss probe and RACK reordering timer: `output.rs`,
//! `recovery.rs`; pacing release: `output.rs`; delayed ACK: `recv.rs`).
//!
//! The endpoint's seven timers are one [`Timers`] value; the delayed-ACK timer lives with the
//! receive side.
//!
//! On a kernel with a tick (`TcpConfig::hz`, default 250) the RTO, tail-loss-probe, RACK
//! reordering and zero-window-probe timers fire as Linux's one `icsk_retransmit_timer` does: the
//! timeout becomes whole jiffies the way each caller converts it (`icsk_rto` is kept in jiffies;
//! the probe's and RACK's microsecond timeouts are rounded up by `usecs_to_jiffies`), most
//! callers add the pacing delay (`tcp_reset_xmit_timer`), and the timer wheel fires it on the
//! tick after it is due, or on the next 8-jiffy boundary when it is 63 jiffies or more ahead
//! (every RTO): [`timer_wheel_fires_at`], the `arm_*` methods. `hz` = 0 keeps exact timers.
//! Deviations: Linux has one slot for the four (`icsk_pending`), the simulator keeps the RTO
//! armed under a probe or reordering timer and lets the probe go first when both are due; so
//! it re-arms the RTO one RTO from now where Linux, replacing a pending probe or reordering
//! timer, counts from the head's last transmission (`tcp_rearm_rto`'s `tcp_rto_delta_us`).

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
/// delayed ACK); the wheel then fires it as [`timer_wheel_fires_at`] says. So a 40-ms delayed
/// ACK at HZ = 250 leaves 40–44 ms after the segment (the tick phase), not 40: the emulated 6.18
/// client's delayed ACKs came 42.9 and 43.9 ms after the segment (issue 15, session 12,
/// `icsk_ack.ato` = 10 jiffies traced).
pub(super) fn timer_list_expiry(now: Time, after: Duration, hz: u32) -> Time {
    if hz == 0 {
        return now + after;
    }
    let delta = (after.as_nanos() as u64 / super::recv::tick_ns(hz)).max(1);
    timer_wheel_fires_at(now, delta, hz)
}

/// When a Linux `timer_list` armed at `now` for `when` jiffies fires (`hz` = 0: `when` is in
/// nanoseconds and the timer fires exactly then). Linux sets `expires` = jiffies + `when`; the
/// timer wheel puts the timer in the bucket one granule *after* its expiry so that it never
/// fires early (kernel/time/timer.c `calc_index`: "Round up with level granularity",
/// `(expires >> LVL_SHIFT(lvl)) + 1`; level n has granules of 8^n jiffies and holds timers less
/// than 63·8^(n−1) jiffies ahead), and it fires at that tick. A timer 63 jiffies or more ahead
/// (252 ms at HZ = 250: every RTO) sits in level 1 and fires on the next 8-jiffy (32-ms)
/// boundary after `expires`: traced on 6.18 (issue 15, session 14), RTOs of 91, 136, 182, 164
/// and 422 jiffies fired 91.09, 139.26, 184.00, 168.01 and 424.00 jiffies after arming, RACK
/// reordering timers of 7 jiffies 7.25–7.81 jiffies after the ACK (level 0: the tick after
/// `expires`). Deviation: the jiffy clock is aligned with simulated time 0 (a real kernel's
/// tick phase is arbitrary) and the wheel's clock is never behind `jiffies` (an idle NOHZ CPU's
/// can be, which may put a timer one level lower).
pub(super) fn timer_wheel_fires_at(now: Time, when: u64, hz: u32) -> Time {
    if hz == 0 {
        return Time(now.as_nanos().saturating_add(when));
    }
    let tick_ns = super::recv::tick_ns(hz);
    let now_j = now.as_nanos() / tick_ns;
    let mut shift = 0; // LVL_SHIFT(lvl) = 3·lvl
    while shift < 21 && when >= 63u64 << shift {
        shift += 3;
    }
    let fires_j = (((now_j + when) >> shift) + 1) << shift;
    Time(fires_j.saturating_mul(tick_ns))
}

/// Linux `usecs_to_jiffies` (and `msecs_to_jiffies`): a timeout in whole jiffies, rounded *up*
/// so that a timer never waits less than asked (`hz` = 0: nanoseconds, exact).
pub(super) fn jiffies_ceil(ns: u64, hz: u32) -> u64 {
    ns.div_ceil(super::recv::tick_ns(hz))
}

/// Linux TCP_TIMEOUT_MIN_US: the floor added to the tail-loss-probe and RACK reordering
/// timeouts before they become jiffies (since 6.7, "tcp: fix excessive TLP and RACK timeouts
/// from HZ rounding"; before, 2 jiffies were added after the conversion — 8 ms at HZ = 250).
const TIMEOUT_MIN_NS: u64 = 2_000_000;

/// The endpoint's timers: each an absolute expiry time, `None` when not armed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Timers {
    /// Retransmission timer (RFC 6298; SYN/SYN-ACK retries during the handshake): when it
    /// fires, on the timer wheel's tick ([`timer_wheel_fires_at`]).
    pub rto: Option<Time>,
    /// When the armed RTO is due (Linux `icsk_timeout`, the jiffy of `expires`; `rto` fires up
    /// to one wheel granule later). The tail-loss probe is capped at it. Stale while `rto` is
    /// `None`: read it through [`TcpEndpoint::rto_due`].
    pub rto_due: Time,
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
        // Runs after every event an endpoint handles: folded branch-free over the nine slots
        // (an iterator chain of Options was ~3 % of an onoff run).
        let t = &self.timers;
        let all = [t.rto, t.persist, t.keepalive, t.pace, t.time_wait, t.reo, t.tlp, self.rcv.delack_at, self.rcv.comp_sack_at];
        let any = all.iter().fold(false, |a, o| a | o.is_some());
        let min = all.iter().fold(u64::MAX, |m, o| m.min(o.map_or(u64::MAX, |x| x.0)));
        any.then_some(Time(min))
    }

    /// Linux `inet_csk_reset_xmit_timer` for the users of the retransmission timer (RTO,
    /// tail-loss probe, RACK reordering, zero-window probe: one `timer_list`,
    /// `icsk_retransmit_timer`, session 14's BTF): when a timer armed now for `when` jiffies
    /// fires. With `pace_delay` (Linux `tcp_reset_xmit_timer(.., true)`: `tcp_rearm_rto`, the
    /// loss probe, `tcp_xmit_retransmit_queue`, the zero-window probe) the time until the next
    /// paced departure is added first (`tcp_pacing_delay`, truncated to jiffies: "scheduling a
    /// retransmit timer too early would be silly"); the RTO re-armed by a timeout, the SYN's and
    /// RACK's timers go without. `hz` = 0: exact, no pacing delay.
    fn xmit_timer_fires_at(&self, now: Time, when: u64, pace_delay: bool) -> Time {
        let hz = self.cfg.hz;
        let mut when = when;
        if pace_delay && hz != 0 && self.next_pace_at > now && self.pacing_rate().is_some() {
            when += (self.next_pace_at.as_nanos() - now.as_nanos()) / super::recv::tick_ns(hz);
        }
        timer_wheel_fires_at(now, when, hz)
    }

    /// Linux `icsk_rto` with its backoff, in jiffies (nanoseconds at `hz` = 0). The estimator
    /// keeps the RTO a whole number of jiffies, as Linux does (rtt.rs), so this is exact.
    pub(super) fn rto_jiffies(&self) -> u64 {
        jiffies_ceil(self.rtt.backed_off_rto().as_nanos() as u64, self.cfg.hz)
    }

    /// (Re)arm the retransmission timer one RTO from now (Linux `tcp_rearm_rto` with
    /// `pace_delay`, `tcp_retransmit_timer` and `tcp_connect` without).
    pub(super) fn arm_rto(&mut self, now: Time, pace_delay: bool) {
        let when = self.rto_jiffies();
        self.timers.rto = Some(self.xmit_timer_fires_at(now, when, pace_delay));
        // `expires` = jiffies + when (at `hz` = 0 a "jiffy" is a nanosecond: now + when).
        let tick_ns = super::recv::tick_ns(self.cfg.hz);
        self.timers.rto_due = Time((now.as_nanos() / tick_ns).saturating_add(when).saturating_mul(tick_ns));
    }

    /// When the armed RTO is due (its `expires`, before the wheel's rounding); `None` unarmed.
    pub(super) fn rto_due(&self) -> Option<Time> {
        self.timers.rto.map(|_| self.timers.rto_due)
    }

    /// Linux `tcp_schedule_loss_probe`'s timer: the probe timeout `pto_ns` (2·SRTT plus a floor)
    /// in jiffies, rounded up (since 6.7 the floor is added before the conversion), never
    /// later than the RTO is due (`tcp_rto_delta_us`, rounded up), plus the pacing delay. The
    /// simulator keeps the RTO armed under the probe (Linux has one slot), so the probe is
    /// also held to the RTO's tick, which it only passes by a pacing delay.
    pub(super) fn arm_tlp(&mut self, now: Time, pto_ns: u64) {
        let hz = self.cfg.hz;
        let mut when = jiffies_ceil(pto_ns, hz);
        if let Some(due) = self.rto_due() {
            when = when.min(jiffies_ceil(due.as_nanos().saturating_sub(now.as_nanos()), hz));
        }
        let fires = self.xmit_timer_fires_at(now, when, true);
        self.timers.tlp = Some(self.timers.rto.map_or(fires, |rto| fires.min(rto)));
    }

    /// Linux `tcp_rack_mark_lost`'s timer: RACK's wait `wait_ns` plus TCP_TIMEOUT_MIN_US in
    /// jiffies, rounded up, at most the RTO (`max_when` = `icsk_rto`), without pacing delay.
    pub(super) fn arm_reo(&mut self, now: Time, wait_ns: u64) {
        let when = jiffies_ceil(wait_ns.saturating_add(TIMEOUT_MIN_NS), self.cfg.hz).min(self.rto_jiffies());
        self.timers.reo = Some(self.xmit_timer_fires_at(now, when, false));
    }

    /// Linux `tcp_check_probe_timer` / `tcp_send_probe0`: the zero-window probe timer (same
    /// slot as the RTO) one probe interval from now, plus the pacing delay.
    pub(super) fn arm_persist(&mut self, now: Time) {
        let when = jiffies_ceil(self.probe_interval().as_nanos() as u64, self.cfg.hz);
        self.timers.persist = Some(self.xmit_timer_fires_at(now, when, true));
    }

    pub(super) fn clear_timers(&mut self) {
        self.timers = Timers::default();
        self.rcv.delack_at = None;
        self.rcv.comp_sack_at = None;
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
        // Linux tcp_compressed_ack_kick: one ACK for the ACKs SACK compression held.
        if self.rcv.comp_sack_at.is_some_and(|t| t <= now) {
            self.rcv.comp_sack_at = None;
            if self.rcv.compressed_acks > 0 && self.can_ack() {
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
                self.arm_rto(now, false);
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
                self.next_pace_at = now;
                self.arm_rto(now, false);
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
        self.arm_persist(now);
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

    /// Armed at `jiffy` + `fraction`/100 of a 4-ms jiffy (HZ = 250).
    fn at_jiffy(jiffy: u64, hundredths: u64) -> Time {
        Time(jiffy * 4_000_000 + hundredths * 40_000)
    }

    #[test]
    fn the_traced_6_18_rtos_fire_on_the_next_8_jiffy_boundary_after_they_are_due() {
        // Issue 15, session 14: RTOs of 91, 136, 182, 164, 422 jiffies fired 91.09, 139.26,
        // 184.00, 168.01, 424.00 jiffies after arming. Each (when, jiffy and hundredths of a
        // jiffy it was armed at, hundredths of a jiffy it fired after) — the arming phases are
        // the ones those delays imply; a delay of a whole number of jiffies means armed on a tick.
        for (when, jiffy, phase, fired_after) in
            [(91, 4, 91, 9_109), (136, 4, 74, 13_926), (182, 0, 0, 18_400), (164, 7, 99, 16_801), (422, 0, 0, 42_400)]
        {
            let armed = at_jiffy(jiffy, phase);
            let fires = timer_wheel_fires_at(armed, when, 250);
            assert_eq!(fires.as_nanos() - armed.as_nanos(), fired_after * 40_000, "{when} jiffies");
            assert_eq!(fires.as_nanos() / 4_000_000 % 8, 0, "level 1: an 8-jiffy boundary");
        }
    }

    #[test]
    fn a_7_jiffy_rack_timer_fires_on_the_tick_after_it_is_due() {
        // The traced reordering timers of 7 jiffies fired 7.25–7.81 jiffies after the ACK.
        for phase in [19, 50, 75] {
            let armed = at_jiffy(1000, phase);
            assert_eq!(timer_wheel_fires_at(armed, 7, 250), at_jiffy(1008, 0));
        }
    }

    #[test]
    fn without_a_tick_a_timer_fires_exactly_when_due() {
        // `hz` = 0: `when` is nanoseconds, no rounding, no wheel (the simulator before the wheel).
        assert_eq!(timer_wheel_fires_at(at_us(101_000), 91_000_001, 0), Time(192_000_001));
        assert_eq!(jiffies_ceil(27_000_001, 0), 27_000_001);
    }

    #[test]
    fn timeouts_become_jiffies_rounded_up_as_usecs_to_jiffies() {
        // 27 ms (a 25-ms reordering window + TCP_TIMEOUT_MIN_US) is 6.75 jiffies: 7. A whole
        // number stays whole.
        assert_eq!(jiffies_ceil(27_000_000, 250), 7);
        assert_eq!(jiffies_ceil(300_000_000, 250), 75);
        assert_eq!(jiffies_ceil(300_000_001, 250), 76);
    }

    #[test]
    fn a_timer_504_jiffies_or_more_ahead_rounds_up_to_64_jiffies() {
        // Level 2: a 600-jiffy RTO (2.4 s) armed at jiffy 100 is due at 700, fires at 704.
        assert_eq!(timer_wheel_fires_at(at_jiffy(100, 0), 600, 250), at_jiffy(704, 0));
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
