//! The sender's retransmission queue and SACK scoreboard (RFC 2018, RFC 6675, Linux tcp_input.c).
//!
//! Every segment sent and not yet cumulatively acknowledged is one [`SegRec`] in a `VecDeque`
//! ordered by stream offset (Linux's rtx rb-tree of skbs). Segments are never re-packetized, so
//! SACK blocks from our receiver always cover whole records. Each record carries Linux's
//! `sacked` bits: SACKED, LOST, RETRANS (a retransmitted copy is in flight) and EVER_RETRANS (for
//! Karn's rule), plus the delivery-rate snapshot taken when it was sent.
//!
//! Counters kept incrementally (packets and bytes): `packets_out`, `sacked_out`, `lost_out`,
//! `retrans_out`, giving Linux's `tcp_packets_in_flight()` =
//! packets_out − (sacked_out + lost_out) + retrans_out, which is RFC 6675's `pipe` with
//! IsLost() implemented by the LOST bit (seed 000 equation (1)).
//!
//! Loss marking follows RFC 6675 IsLost / Linux `tcp_mark_head_lost` without RACK: a hole is lost
//! once at least DupThresh SACKed segments lie above it. NextSeg is rule (1) only — the first
//! lost, not yet retransmitted segment — then new data (rule 2) which the endpoint handles;
//! rules (3)/(4) are not used, as in Linux since forward retransmission was removed.
//!
//! Cost per ACK: two hints (Linux `lost_skb_hint` and `retransmit_skb_hint`) make the loss scan and
//! the NextSeg search resume where they stopped, and a cache of the previous ACK's SACK blocks
//! (Linux `recv_sack_cache`) means only the newly reported part of a block is walked, so the
//! common case is O(log n) (one binary search) plus the records that actually change state.

use std::collections::VecDeque;

use tcpvideo_model::Time;

use super::rack::Rack;

/// Sender-side snapshot for delivery-rate estimation (Linux `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TxSnapshot {
    pub delivered: u64,
    pub delivered_at: Time,
    pub first_tx_at: Time,
    pub app_limited: bool,
}

/// One segment in the retransmission queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegRec {
    /// Stream offset of the first payload byte (or of the FIN for a bare FIN).
    pub start: u64,
    pub len: u32,
    pub fin: bool,
    pub sacked: bool,
    pub lost: bool,
    /// A retransmitted copy is in flight (Linux TCPCB_SACKED_RETRANS).
    pub retrans: bool,
    /// Ever retransmitted (Linux TCPCB_EVER_RETRANS): no RTT sample from it (Karn).
    pub ever_retrans: bool,
    /// The copy in flight is a tail-loss probe's. Linux sends the probe with
    /// `__tcp_retransmit_skb`, which sets no TCPCB_SACKED_RETRANS (only `tcp_retransmit_skb`
    /// does), so for loss marking the probed segment counts as never retransmitted. `retrans`
    /// is still set for it: we count the probe in `retrans_out` (a deviation, see
    /// [`Scoreboard::on_probe_retransmit`]).
    pub probe_copy: bool,
    /// Last (re)transmission time.
    pub sent_at: Time,
    /// Transmission counter at the last (re)transmission: orders segments sent at the same
    /// simulated instant (Linux breaks such ties by sequence number, which is wrong for a
    /// retransmission sent after new data within one burst; real clocks rarely tie).
    pub xmit_seq: u64,
    pub tx: TxSnapshot,
}

impl SegRec {
    /// One past the last sequence offset this record occupies (FIN counts one).
    pub fn end(&self) -> u64 {
        self.start + self.len as u64 + self.fin as u64
    }
    fn pending_rexmit(&self) -> bool {
        self.lost && !self.retrans && !self.sacked
    }

    /// A data record as first sent: not SACKed, lost or retransmitted (unit tests).
    #[cfg(test)]
    pub(crate) fn first_sent(start: u64, len: u32, sent_at: Time, xmit_seq: u64, tx: TxSnapshot) -> Self {
        SegRec {
            start,
            len,
            fin: false,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            probe_copy: false,
            sent_at,
            xmit_seq,
            tx,
        }
    }
}

/// A packet and byte counter pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub pkts: u64,
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, r: &SegRec) {
        self.pkts += 1;
        self.bytes += r.len as u64;
    }
    fn sub(&mut self, r: &SegRec) {
        self.pkts -= 1;
        self.bytes -= r.len as u64;
    }
}

/// What one cumulative ACK or SACK pass changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// Bytes newly delivered (cumulatively ACKed and not SACKed before, or newly SACKed).
    pub delivered_bytes: u64,
    pub delivered_pkts: u64,
    /// Payload bytes removed from the queue by the cumulative ACK.
    pub cum_acked_bytes: u64,
    pub cum_acked_pkts: u64,
    pub newly_sacked_pkts: u64,
    /// A never-retransmitted segment was delivered below data SACKed earlier: the path reorders
    /// (Linux tcp_check_sack_reordering / the reordering check of tcp_clean_rtx_queue).
    pub reordered: bool,
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    recs: VecDeque<SegRec>,
    pub packets_out: Count,
    pub sacked_out: Count,
    pub lost_out: Count,
    pub retrans_out: Count,
    /// Duplicate ACKs counted as SACKed segments when SACK is off (Linux `tcp_add_reno_sack`).
    pub reno_sacked: u64,
    reno_mss: u64,
    pending_rexmit: u64,
    rexmit_hint: u64,
    lost_hint: u64,
    lost_hint_sacked_below: u64,
    sack_cache: [(u64, u64); 4],
    sack_cache_len: usize,
    /// Highest SACKed end offset (Linux's highest_sack, used for reporting).
    pub highest_sacked: u64,
    /// (offset, time) of every retransmission, in order (Linux's tsorted list, retransmitted part).
    rexmit_order: VecDeque<(u64, u64)>,
    /// Never-retransmitted records below this offset are no RACK candidates any more.
    rack_hint: u64,
}

impl Scoreboard {
    pub fn new(mss: u64) -> Scoreboard {
        Scoreboard { recs: VecDeque::with_capacity(64), reno_mss: mss, ..Default::default() }
    }

    pub fn set_mss(&mut self, mss: u64) {
        self.reno_mss = mss;
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.recs.len()
    }
    pub fn get(&self, i: usize) -> &SegRec {
        &self.recs[i]
    }
    pub fn front(&self) -> Option<&SegRec> {
        self.recs.front()
    }
    pub fn back(&self) -> Option<&SegRec> {
        self.recs.back()
    }
    pub fn back_mut(&mut self) -> Option<&mut SegRec> {
        self.recs.back_mut()
    }

    /// Linux `tcp_packets_in_flight`, in packets.
    pub fn in_flight_pkts(&self) -> u64 {
        (self.packets_out.pkts + self.retrans_out.pkts).saturating_sub(self.sacked_out.pkts + self.lost_out.pkts + self.reno_sacked)
    }
    /// The same in bytes (RFC 6675 pipe).
    pub fn in_flight_bytes(&self) -> u64 {
        (self.packets_out.bytes + self.retrans_out.bytes)
            .saturating_sub(self.sacked_out.bytes + self.lost_out.bytes + self.reno_sacked * self.reno_mss)
    }
    /// SACKed segments (real or emulated by duplicate ACKs).
    pub fn sacked_pkts(&self) -> u64 {
        self.sacked_out.pkts + self.reno_sacked
    }
    pub fn pending_rexmit(&self) -> u64 {
        self.pending_rexmit
    }

    /// A new segment was sent.
    pub fn push(&mut self, rec: SegRec) {
        debug_assert!(self.recs.back().is_none_or(|b| b.end() <= rec.start));
        self.packets_out.add(&rec);
        self.recs.push_back(rec);
    }

    fn index_of(&self, off: u64) -> usize {
        // Most look-ups are at the front (RACK's scan resumes at its hint, which a cumulative ACK
        // moves to SND.UNA, i.e. the first record): answer those without the binary search, whose
        // probes into a deque of thousands of records were ~9 % of a 50 Mbit/s ETHLE run.
        match self.recs.front() {
            Some(first) if first.start >= off => 0,
            _ => self.recs.partition_point(|r| r.start < off),
        }
    }

    /// Remove every record that ends at or below `una`; `f` sees each removed record and whether
    /// it was SACKed before (i.e. already counted as delivered). `prior_fack` is the end of the
    /// highest segment SACKed before this ACK (Linux `prior_fack`): a never-retransmitted,
    /// never-SACKed record below it that the cumulative ACK now covers arrived after data sent
    /// later — reordering (Linux: "Non-retransmitted hole got filled?" in `tcp_clean_rtx_queue`).
    /// Blocks SACKed by this same ACK do not count: an ACK that carries both the in-order data a
    /// delayed ACK held and the first SACK block after a loss shows a loss, not reordering.
    pub fn ack_cumulative(&mut self, una: u64, prior_fack: u64, mut f: impl FnMut(&SegRec, bool)) -> Delta {
        let mut d = Delta::default();
        while let Some(r) = self.recs.front() {
            if r.end() > una {
                break;
            }
            let r = self.recs.pop_front().unwrap();
            self.packets_out.sub(&r);
            d.cum_acked_bytes += r.len as u64;
            d.cum_acked_pkts += 1;
            let was_sacked = r.sacked;
            if !r.sacked && !r.ever_retrans && r.end() < prior_fack {
                d.reordered = true;
            }
            if r.sacked {
                self.sacked_out.sub(&r);
                if r.start < self.lost_hint {
                    self.lost_hint_sacked_below -= 1;
                }
            } else {
                d.delivered_bytes += r.len as u64;
                d.delivered_pkts += 1;
            }
            if r.lost {
                self.lost_out.sub(&r);
            }
            if r.retrans {
                self.retrans_out.sub(&r);
            }
            if r.pending_rexmit() {
                self.pending_rexmit -= 1;
            }
            f(&r, was_sacked);
        }
        if self.lost_hint < una {
            self.lost_hint = una;
            self.lost_hint_sacked_below = 0;
        }
        if self.rexmit_hint < una {
            self.rexmit_hint = una;
        }
        if self.rack_hint < una {
            self.rack_hint = una;
        }
        while self.rexmit_order.front().is_some_and(|&(o, _)| o < una) {
            self.rexmit_order.pop_front();
        }
        d
    }

    /// End of the highest SACKed segment while any is SACKed, else `una` (Linux
    /// `tcp_highest_sack_seq`, which answers SND.UNA when `sacked_out` is 0).
    pub fn highest_sacked_or(&self, una: u64) -> u64 {
        if self.sacked_out.pkts > 0 {
            self.highest_sacked
        } else {
            una
        }
    }

    /// Apply SACK blocks (stream offsets, already restricted to above SND.UNA). `f` sees each
    /// newly SACKed record. Only the parts not reported by the previous ACK are walked.
    pub fn apply_sack(&mut self, blocks: &[(u64, u64)], mut f: impl FnMut(&SegRec)) -> Delta {
        let mut d = Delta::default();
        let prior_highest = self.highest_sacked;
        for &(s, e) in blocks {
            // Subtract the cached blocks: at most 5 pieces remain.
            let mut pieces = [(0u64, 0u64); 6];
            let mut n = 1;
            pieces[0] = (s, e);
            for &(cs, ce) in &self.sack_cache[..self.sack_cache_len] {
                let mut m = 0;
                let mut out = [(0u64, 0u64); 6];
                for &(ps, pe) in &pieces[..n] {
                    if ce <= ps || cs >= pe {
                        out[m] = (ps, pe);
                        m += 1;
                    } else {
                        if ps < cs {
                            out[m] = (ps, cs);
                            m += 1;
                        }
                        if ce < pe && m < 6 {
                            out[m] = (ce, pe);
                            m += 1;
                        }
                    }
                }
                pieces = out;
                n = m;
            }
            for &(ps, pe) in &pieces[..n] {
                self.sack_range(ps, pe, prior_highest, &mut d, &mut f);
            }
        }
        let k = blocks.len().min(4);
        self.sack_cache[..k].copy_from_slice(&blocks[..k]);
        self.sack_cache_len = k;
        d
    }

    fn sack_range(&mut self, s: u64, e: u64, prior_highest: u64, d: &mut Delta, f: &mut impl FnMut(&SegRec)) {
        if s >= e {
            return;
        }
        // First record that may lie inside [s, e): the one containing s or the next.
        let mut i = self.index_of(s);
        if i > 0 && self.recs[i - 1].end() > s {
            i -= 1;
        }
        while i < self.recs.len() {
            let r = self.recs[i];
            if r.start >= e {
                break;
            }
            // Only whole records are SACKed (our segments are never split).
            if r.start >= s && r.end() <= e && !r.sacked {
                if !r.ever_retrans && r.end() < prior_highest {
                    d.reordered = true;
                }
                self.mark_sacked(i);
                d.delivered_bytes += r.len as u64;
                d.delivered_pkts += 1;
                d.newly_sacked_pkts += 1;
                f(&self.recs[i]);
            }
            i += 1;
        }
    }

    fn mark_sacked(&mut self, i: usize) {
        let r = self.recs[i];
        if r.pending_rexmit() {
            self.pending_rexmit -= 1;
        }
        if r.lost {
            self.lost_out.sub(&r);
        }
        if r.retrans {
            self.retrans_out.sub(&r);
        }
        self.sacked_out.add(&r);
        if r.start < self.lost_hint {
            self.lost_hint_sacked_below += 1;
        }
        self.highest_sacked = self.highest_sacked.max(r.end());
        let m = &mut self.recs[i];
        m.sacked = true;
        m.lost = false;
        m.retrans = false;
        m.probe_copy = false;
    }

    /// Linux `tcp_mark_skb_lost` (tcp_input.c, 5.10+): a segment not yet marked lost gets the
    /// LOST mark and nothing else; only a segment *already* marked lost whose retransmission is
    /// still in flight ("retransmits that are lost again") loses its SACKED_RETRANS mark and
    /// leaves `retrans_out`, which makes `tcp_xmit_retransmit_queue` send it again. So a
    /// retransmitted segment that is not marked lost — its LOST mark was cleared by an undo
    /// (`tcp_undo_cwnd_reduction` with unmark_loss: F-RTO, Eifel) — becomes lost *with* its
    /// retransmission still counted in flight and is not re-sent until a later marking finds it
    /// lost again or the RTO re-sends the head (`on_rto`). A tail-loss probe's copy carries no
    /// SACKED_RETRANS in Linux (`probe_copy`), so marking it lost makes it a retransmission
    /// candidate at once. Returns the bytes marked (Linux counts both cases in `tp->lost`).
    fn mark_lost(&mut self, i: usize) -> u64 {
        let r = self.recs[i];
        if r.sacked || (r.lost && !r.retrans) {
            return 0;
        }
        if r.retrans && !r.lost && !r.probe_copy {
            self.lost_out.add(&r);
            self.recs[i].lost = true;
            return r.len as u64;
        }
        if r.retrans {
            self.retrans_out.sub(&r);
            self.recs[i].retrans = false;
            self.recs[i].probe_copy = false;
        }
        if !r.lost {
            self.lost_out.add(&r);
            self.recs[i].lost = true;
        }
        self.pending_rexmit += 1;
        if r.start < self.rexmit_hint {
            self.rexmit_hint = r.start;
        }
        r.len as u64
    }

    /// RFC 6675 IsLost with DupThresh `dupthresh`: mark every hole below which ≥ dupthresh SACKed
    /// segments lie above. Returns bytes newly marked lost.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u64) -> u64 {
        if self.sacked_out.pkts < dupthresh {
            return 0;
        }
        let mut i = self.index_of(self.lost_hint);
        let mut below = self.lost_hint_sacked_below;
        let mut newly = 0;
        while i < self.recs.len() {
            if self.sacked_out.pkts - below < dupthresh {
                break;
            }
            if self.recs[i].sacked {
                below += 1;
            } else if !self.recs[i].lost {
                newly += self.mark_lost(i);
            }
            i += 1;
        }
        self.lost_hint = if i < self.recs.len() { self.recs[i].start } else { self.recs.back().map_or(0, |r| r.end()) };
        self.lost_hint_sacked_below = below;
        newly
    }

    /// Mark the first un-SACKed record lost (fast retransmit without SACK, NewReno partial ACK,
    /// and the "force one retransmission" of Linux `tcp_update_scoreboard`).
    pub fn mark_head_lost(&mut self) -> u64 {
        for i in 0..self.recs.len() {
            if !self.recs[i].sacked {
                if self.recs[i].lost && !self.recs[i].retrans {
                    return 0;
                }
                if self.recs[i].lost {
                    return 0; // already retransmitted, wait
                }
                return self.mark_lost(i);
            }
        }
        0
    }

    /// RTO: every un-SACKed record is lost (Linux `tcp_timeout_mark_lost` without RACK), each
    /// through `mark_lost`: a retransmission already marked lost is lost again and will be
    /// re-sent; one whose LOST mark an undo cleared keeps its retransmitted mark, as in Linux, so
    /// the RTO re-sends the head explicitly (`on_rto`, Linux `tcp_retransmit_timer`). Returns
    /// bytes newly marked.
    pub fn mark_all_lost(&mut self) -> u64 {
        let mut newly = 0;
        for i in 0..self.recs.len() {
            newly += self.mark_lost(i);
        }
        self.rexmit_hint = self.recs.front().map_or(0, |r| r.start);
        self.reno_sacked = 0;
        newly
    }

    /// Undo of a spurious loss episode (Linux `tcp_undo_cwnd_reduction` with unmark_loss): no
    /// segment is lost any more; retransmitted copies stay in flight until acknowledged.
    pub fn unmark_all_lost(&mut self) {
        for r in self.recs.iter_mut() {
            r.lost = false;
        }
        self.lost_out = Count::default();
        self.pending_rexmit = 0;
    }

    /// NextSeg rule (1): index of the first lost, not yet retransmitted record.
    pub fn next_rexmit(&mut self) -> Option<usize> {
        if self.pending_rexmit == 0 {
            return None;
        }
        let mut i = self.index_of(self.rexmit_hint);
        while i < self.recs.len() {
            if self.recs[i].pending_rexmit() {
                self.rexmit_hint = self.recs[i].start;
                return Some(i);
            }
            i += 1;
        }
        debug_assert!(false, "pending_rexmit count out of sync");
        None
    }

    /// Record that record `i` was retransmitted at `now`; returns the record as sent.
    pub fn on_retransmit(&mut self, i: usize, now: Time, xmit_seq: u64, tx: TxSnapshot) -> SegRec {
        let r = &mut self.recs[i];
        let was_pending = r.pending_rexmit();
        r.retrans = true;
        r.probe_copy = false;
        r.ever_retrans = true;
        r.sent_at = now;
        r.xmit_seq = xmit_seq;
        r.tx = tx;
        let r = *r;
        if was_pending {
            self.pending_rexmit -= 1;
            self.retrans_out.add(&r);
        }
        self.rexmit_order.push_back((r.start, xmit_seq));
        r
    }

    /// A tail-loss probe re-sends record `i`, which is not marked lost. Deviation: we count the
    /// probe in `retrans_out` (in flight twice until resolved); Linux `tcp_send_loss_probe` sends
    /// it with `__tcp_retransmit_skb`, which leaves `retrans_out` and TCPCB_SACKED_RETRANS alone.
    /// For loss marking the copy is treated as Linux treats it (`probe_copy`).
    pub fn on_probe_retransmit(&mut self, i: usize, now: Time, xmit_seq: u64, tx: TxSnapshot) -> SegRec {
        let r = self.recs[i];
        if r.pending_rexmit() {
            return self.on_retransmit(i, now, xmit_seq, tx);
        }
        let m = &mut self.recs[i];
        if !m.retrans && !m.sacked {
            m.retrans = true;
            m.probe_copy = true;
            self.retrans_out.add(&r);
        }
        let m = &mut self.recs[i];
        m.ever_retrans = true;
        m.sent_at = now;
        m.xmit_seq = xmit_seq;
        m.tx = tx;
        let r = *m;
        self.rexmit_order.push_back((r.start, xmit_seq));
        r
    }

    /// RACK loss detection (RFC 8985 §6.2 step 5, Linux `tcp_rack_detect_loss`): mark lost every
    /// un-SACKed segment sent before the RACK segment and overdue by `rtt + reo_wnd`. Segments are
    /// visited in send order: never-retransmitted ones in offset order (resuming at a hint below
    /// which nothing can be a candidate again), retransmitted ones in retransmission order.
    /// Returns (bytes newly lost, time until the last waiting candidate becomes overdue — Linux arms
    /// its reordering timer with the maximum).
    /// Times in nanoseconds (`reo_wnd_ns`, the returned wait).
    pub fn rack_detect(&mut self, now: Time, rack: &Rack, reo_wnd_ns: u64) -> (u64, Option<u64>) {
        let mut newly = 0;
        let mut wait: Option<u64> = None;
        let budget = rack.rtt_ns + reo_wnd_ns;
        let now_ns = now.as_nanos();
        // Never-retransmitted segments.
        let mut i = self.index_of(self.rack_hint);
        let mut advance = true;
        while i < self.recs.len() {
            let r = self.recs[i];
            if r.sacked || r.ever_retrans || r.lost {
                if advance {
                    self.rack_hint = r.end();
                }
                i += 1;
                continue;
            }
            if rack.xmit_seq <= r.xmit_seq {
                break;
            }
            let elapsed = now_ns.saturating_sub(r.sent_at.as_nanos());
            if elapsed >= budget {
                newly += self.mark_lost(i);
                if advance {
                    self.rack_hint = r.end();
                }
            } else {
                let rem = budget - elapsed;
                wait = Some(wait.map_or(rem, |w| w.max(rem)));
                advance = false;
            }
            i += 1;
        }
        // Retransmitted segments, oldest retransmission first.
        while let Some(&(off, t)) = self.rexmit_order.front() {
            let j = self.index_of(off);
            let live = j < self.recs.len() && self.recs[j].start == off && {
                let r = &self.recs[j];
                r.xmit_seq == t && r.retrans && !r.sacked
            };
            if !live {
                self.rexmit_order.pop_front();
                continue;
            }
            let r = self.recs[j];
            if rack.xmit_seq <= r.xmit_seq {
                break;
            }
            let elapsed = now_ns.saturating_sub(r.sent_at.as_nanos());
            if elapsed >= budget {
                newly += self.mark_lost(j);
                self.rexmit_order.pop_front();
            } else {
                let rem = budget - elapsed;
                wait = Some(wait.map_or(rem, |w| w.max(rem)));
                break;
            }
        }
        (newly, wait)
    }

    /// Cumulative-ACK bookkeeping of emulated SACKs when SACK is off (Linux `tcp_remove_reno_sacks`).
    pub fn remove_reno_sacks(&mut self, acked_pkts: u64) {
        if acked_pkts > 0 {
            self.reno_sacked = self.reno_sacked.saturating_sub(acked_pkts - 1);
        }
    }

    pub fn reset_sack_cache(&mut self) {
        self.sack_cache_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new(100);
        for k in 0..n {
            b.push(SegRec::first_sent(1 + k * 100, 100, Time::ZERO, k, TxSnapshot::default()));
        }
        b
    }

    #[test]
    fn a_record_index_is_the_first_record_at_or_above_the_offset_front_shortcut_or_not() {
        let mut b = board(10); // records start at 1, 101, ..., 901
        b.ack_cumulative(301, b.highest_sacked, |_, _| {}); // now 301, 401, ..., 901
        for off in [0, 1, 300, 301] {
            assert_eq!(b.index_of(off), 0, "offset {off}");
        }
        assert_eq!(b.index_of(302), 1);
        assert_eq!(b.index_of(401), 1);
        assert_eq!(b.index_of(901), 6);
        assert_eq!(b.index_of(902), 7, "past the last record");
        assert_eq!(Scoreboard::new(100).index_of(5), 0, "empty board");
    }

    #[test]
    fn pipe_counts_sacked_and_lost_out_and_retransmissions_in() {
        let mut b = board(10);
        assert_eq!(b.in_flight_pkts(), 10);
        // SACK segments 2..5 (offsets 201..601): head and seg 1 are holes.
        b.apply_sack(&[(201, 601)], |_| {});
        assert_eq!(b.sacked_out.pkts, 4);
        assert_eq!(b.in_flight_pkts(), 6);
        let newly = b.mark_lost_by_sack(3);
        assert_eq!(newly, 200, "both holes have ≥ 3 SACKed segments above");
        assert_eq!(b.in_flight_pkts(), 4);
        let i = b.next_rexmit().unwrap();
        assert_eq!(b.get(i).start, 1);
        b.on_retransmit(i, Time::ZERO, 100, TxSnapshot::default());
        assert_eq!(b.in_flight_pkts(), 5);
        let j = b.next_rexmit().unwrap();
        assert_eq!(b.get(j).start, 101);
    }

    #[test]
    fn is_lost_needs_dupthresh_sacked_segments_above() {
        let mut b = board(10);
        b.apply_sack(&[(201, 401)], |_| {});
        assert_eq!(b.mark_lost_by_sack(3), 0);
        b.apply_sack(&[(201, 501)], |_| {});
        assert_eq!(b.mark_lost_by_sack(3), 200);
    }

    #[test]
    fn sack_cache_walks_only_new_parts_and_stays_correct() {
        let mut b = board(10);
        b.apply_sack(&[(201, 401)], |_| {});
        let d = b.apply_sack(&[(201, 601)], |_| {});
        assert_eq!(d.newly_sacked_pkts, 2);
        let d = b.apply_sack(&[(801, 901), (201, 601)], |_| {});
        assert_eq!(d.newly_sacked_pkts, 1);
        assert_eq!(b.sacked_out.pkts, 5);
    }

    #[test]
    fn cumulative_ack_removes_records_and_counts_unsacked_as_delivered() {
        let mut b = board(5);
        b.apply_sack(&[(101, 201)], |_| {});
        let d = b.ack_cumulative(301, b.highest_sacked, |_, _| {});
        assert_eq!(d.cum_acked_pkts, 3);
        assert_eq!(d.delivered_pkts, 2);
        assert_eq!(b.sacked_out.pkts, 0);
        assert_eq!(b.packets_out.pkts, 2);
    }

    /// Head retransmitted after being marked lost, then an undo clears every LOST mark.
    fn retransmitted_head_after_undo(b: &mut Scoreboard) {
        b.mark_head_lost();
        let i = b.next_rexmit().unwrap();
        b.on_retransmit(i, Time::ZERO, 100, TxSnapshot::default());
        b.unmark_all_lost();
    }

    #[test]
    fn a_retransmitted_record_not_marked_lost_keeps_its_retransmission_when_marked_lost() {
        let mut b = board(6);
        retransmitted_head_after_undo(&mut b);
        b.apply_sack(&[(201, 501)], |_| {}); // segments 2..4: holes at 0 (head) and 1
        assert_eq!(b.mark_lost_by_sack(3), 200, "both holes are marked");
        let head = *b.get(0);
        assert!(head.lost && head.retrans, "{head:?}");
        assert_eq!(b.retrans_out.pkts, 1, "its copy is still counted in flight");
        assert_eq!(b.pending_rexmit(), 1, "only the never-retransmitted hole waits");
        assert_eq!(b.next_rexmit(), Some(1));
        // 6 out − 3 SACKed − 2 lost + 1 retransmitted.
        assert_eq!(b.in_flight_pkts(), 2);
    }

    #[test]
    fn a_retransmission_already_marked_lost_is_lost_again_and_resent() {
        let mut b = board(6);
        retransmitted_head_after_undo(&mut b);
        b.mark_all_lost(); // LOST again, SACKED_RETRANS kept
        assert_eq!(b.next_rexmit(), Some(1), "the head is not pending");
        assert!(b.get(0).retrans);
        b.mark_all_lost(); // now a retransmission that is lost again
        assert!(!b.get(0).retrans);
        assert_eq!(b.retrans_out.pkts, 0);
        assert_eq!(b.next_rexmit(), Some(0));
        assert_eq!(b.pending_rexmit(), 6);
    }

    #[test]
    fn a_tail_loss_probe_copy_marked_lost_is_resent() {
        // Linux sends the probe with __tcp_retransmit_skb: no SACKED_RETRANS, so the marking
        // treats the segment as never retransmitted.
        let mut b = board(4);
        b.on_probe_retransmit(3, Time::ZERO, 100, TxSnapshot::default());
        assert_eq!(b.retrans_out.pkts, 1);
        b.mark_all_lost();
        assert_eq!(b.pending_rexmit(), 4);
        assert_eq!(b.retrans_out.pkts, 0);
        assert!(!b.get(3).retrans && !b.get(3).probe_copy);
    }

    #[test]
    fn rto_marks_retransmitted_segments_lost_again() {
        let mut b = board(4);
        b.mark_head_lost();
        let i = b.next_rexmit().unwrap();
        b.on_retransmit(i, Time::ZERO, 100, TxSnapshot::default());
        assert_eq!(b.pending_rexmit(), 0);
        b.mark_all_lost();
        assert_eq!(b.pending_rexmit(), 4);
        assert_eq!(b.in_flight_pkts(), 0);
        assert_eq!(b.next_rexmit(), Some(0));
    }
}
