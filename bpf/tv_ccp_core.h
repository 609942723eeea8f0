// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * The CCP family's core as a BPF struct_ops congestion control: the estimators (capacity C,
 * base RTT, backlog x_k, storage B), the Eq. 4 law, and the phases — a line-by-line port of
 * tcpvideo's model crates/model/src/cc/ccp.rs (`CcpCore`, `CcpFamily`), so that a real Linux
 * TCP stack runs the algorithm the simulator runs. Read that file first: it states the seed's
 * law, our estimator choices (seed 001's reference [3] was not available) and the parameters.
 * Written for tcpvideo; no kernel source is copied.
 *
 * Included by tv_ccp.bpf.c, tv_ccplca.bpf.c and tv_ccplb.bpf.c, each of which defines, after
 * including this file, `variant_window` (declared below; the model's `Variant::window`: the
 * family member's window, in 1/1000 segments, from the Eq. 4 value) and the
 * `struct tcp_congestion_ops` that names the programs below.
 *
 * How the model's callbacks map onto Linux's:
 *  - `on_ack` -> cong_control (called on every ACK that delivers data, in recovery too, and
 *    replacing Linux's PRR: the law owns the window, as the model's `owns_recovery`);
 *    AckEvent.rtt_sample = rate_sample.rtt_us (the newest delivered segment's RTT; -1 when
 *    Karn's rule forbids one; dropped when the ACK covered retransmitted data, where Linux falls
 *    back to the timestamp echo and the model has no sample — without this, on a lossy path such
 *    samples inflated rtt_max and tv_ccplb's window ran away to ~5600 segments), acked = rate_sample.acked_sacked, prior_in_flight =
 *    rate_sample.prior_in_flight, in_flight after the ACK = tcp_packets_in_flight (written out),
 *    in_recovery = icsk_ca_state == TCP_CA_Recovery (not Loss: the model's definition),
 *    cwnd_limited = tcp_is_cwnd_limited (written out, 6.x form), delivered = tp->delivered,
 *    round counting = BBR's (rate_sample.prior_delivered >= next round's delivered count).
 *  - `on_congestion_event(FastRetransmit)` -> ssthresh callback at entering recovery: no window
 *    change; it only ends slow start. Linux calls ssthresh also at an RTO, so the RTO branch is
 *    in cwnd_event(CA_EVENT_LOSS), which Linux raises right after, before it sets cwnd to 1.
 *  - `on_congestion_event(Timeout)` -> cwnd_event(CA_EVENT_LOSS): ssthresh = max(cwnd/2, 2),
 *    slow start again; Linux itself sets cwnd = in-flight + 1 = 1 (the model's enter_loss).
 *  - `on_recovery_exit` does nothing; undo keeps the law's window.
 *
 * Deviations from the model (all from integer arithmetic or the kernel's clock):
 *  - quantities in integers: C in bytes/s, times in microseconds (tp->tcp_mstamp), windows in
 *    1/1000 segments; the model uses f64 segments and nanoseconds. Rounding at the end is the
 *    model's round-half-up.
 *  - time: the kernel's tcp_mstamp (us, taken once per incoming packet); the simulator's clock
 *    is exact. Real ACKs arrive in bursts (link emulator wake-ups, GRO), which is why the
 *    default capacity sample is an ACK train of >= max(1 ms, baseRTT/8) (capacity_estimator 2),
 *    not the per-ACK dispersion (0) whose sub-microsecond gaps cannot even be measured here.
 *  - delivered counts are packets (tp->delivered), the model's bytes; same thresholds.
 */
#ifndef TV_CCP_CORE_H
#define TV_CCP_CORE_H

#include "tv_app_info.h"

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

/* Model parameters (ccp.rs PARAMS), fixed at load time (.rodata). */
const volatile __u32 kp_milli = 2000;		/* Kp x 1000 (default 2) */
const volatile __u32 storage_segments = 0;	/* fixed B; 0 = estimate C x rtt_max */
const volatile __u32 capacity_win_rounds = 10;	/* window of the capacity max filter, rounds */
const volatile __u32 capacity_estimator = 1;	/* 0 = per-ACK dispersion, 1 = delivery rate, 2 = ACK trains */

#define TRAIN_MIN_US 1000	/* model TRAIN_MIN: the shortest ACK train */
const volatile __u32 backlog_estimator = 0;	/* rtt_k: 0 = this ACK's sample, 1 = previous round's min */
const volatile __u32 min_cwnd = 2;		/* smallest window the law may set, segments */

#define TV_RTT_NONE 0xffffffffU

struct tv_minmax_sample {
	__u32 t;	/* round count */
	__u32 v;	/* capacity sample, bytes/s */
};

/* Per-connection state, in icsk_ca_priv (104 bytes); the model's CcpCore. */
struct tv_ccp {
	struct tv_minmax_sample cap[3];	/* windowed max filter of C (bbr/windowed_filter.rs) */
	__u64 last_ack_us;		/* tcp_mstamp of the previous ACK (0: none yet) */
	__u64 train_start_us;		/* start of the current ACK train (0: none yet) */
	__u32 train_bytes;		/* bytes ACKed since the train started */
	__u32 round_count;		/* RoundCounter.count */
	__u32 next_round_delivered;	/* RoundCounter.next_round_delivered (packets) */
	__u32 base_rtt_us;		/* minimum RTT sample (TV_RTT_NONE: none) */
	__u32 rtt_max_us;		/* largest explained RTT outside recovery (0: none) */
	__u32 rtt_us;			/* latest explained RTT sample, the law's rtt_k (TV_RTT_NONE) */
	__u32 round_min_us;		/* minimum explained sample of this round (TV_RTT_NONE) */
	__u32 prev_round_min_us;	/* ... of the previous round (TV_RTT_NONE) */
	__u32 rto_episode_end;		/* tp->delivered at which the RTO's outstanding data is in */
	__u8 in_ca;			/* slow start is over: the law sets the window */
	__u8 in_rto_recovery;		/* this loss episode began with an RTO */
};

/* The family member's window (1/1000 segments) from Eq. 4's value; defined by each variant. */
static __always_inline __s64 variant_window(struct sock *sk, const struct tv_ccp *c, __s64 law_milli);

/* Diagnostics only (never read by the algorithm): the latest connection's estimators per peer,
 * indexed by the last byte of the peer's IPv4 address; `bpftool map dump name <obj>.bss`. */
struct tv_ccp_diag {
	__u32 capacity_Bps;
	__u32 base_rtt_us;
	__u32 rtt_max_us;
	__u32 rtt_us;
	__u32 cwnd;
	__u32 in_ca;
	__u32 acks;
	__u32 variant_milli;	/* what the variant added to Eq. 4 last (tv_ccplb: POB/POBRate) */
	__u32 above_max_in_recovery;	/* explained samples above rtt_max seen in Recovery (not taken) */
	__u32 above_max_unexplained;	/* samples above rtt_max dropped as unexplained */
	__u32 retrans_samples_dropped;	/* samples of ACKs covering retransmitted data (dropped) */
};
struct tv_ccp_diag ccp_diag[256];

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct tv_ccp *ccp(const struct sock *sk)
{
	return (struct tv_ccp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u8 ca_state(const struct sock *sk)
{
	return ((struct inet_connection_sock *)sk)->icsk_ca_state;
}

static __always_inline __u32 mss_of(const struct tcp_sock *tp)
{
	return tp->mss_cache ? tp->mss_cache : 1;
}

/* Linux tcp_packets_in_flight (include/net/tcp.h, an inline, not a kfunc). */
static __always_inline __u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* Linux tcp_is_cwnd_limited (6.x, an inline). */
static __always_inline bool cwnd_limited(const struct tcp_sock *tp)
{
	if (tp->is_cwnd_limited)
		return true;
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* ---- windowed max filter (model: bbr/windowed_filter.rs, Nichols' three samples) ---- */

static __always_inline __u32 cap_reset(struct tv_ccp *c, __u32 t, __u32 v)
{
	c->cap[0].t = t; c->cap[0].v = v;
	c->cap[1] = c->cap[0];
	c->cap[2] = c->cap[0];
	return v;
}

static __always_inline __u32 cap_update(struct tv_ccp *c, __u32 window, __u32 t, __u32 v)
{
	struct tv_minmax_sample x = { .t = t, .v = v };
	__u32 dt;

	if (v >= c->cap[0].v || t - c->cap[2].t > window)
		return cap_reset(c, t, v);
	if (v >= c->cap[1].v) {
		c->cap[1] = x;
		c->cap[2] = x;
	} else if (v >= c->cap[2].v) {
		c->cap[2] = x;
	}
	dt = t - c->cap[0].t;
	if (dt > window) {
		c->cap[0] = c->cap[1];
		c->cap[1] = c->cap[2];
		c->cap[2] = x;
		if (t - c->cap[0].t > window) {
			c->cap[0] = c->cap[1];
			c->cap[1] = c->cap[2];
			c->cap[2] = x;
		}
	} else if (c->cap[1].t == c->cap[0].t && dt > window / 4) {
		c->cap[1] = x;
		c->cap[2] = x;
	} else if (c->cap[2].t == c->cap[1].t && dt > window / 2) {
		c->cap[2] = x;
	}
	return c->cap[0].v;
}

/* ---- estimators (model: CcpCore) ---- */

/* Bottleneck capacity estimate C, bytes/s (0: none yet). */
static __always_inline __u64 capacity_Bps(const struct tv_ccp *c)
{
	return c->cap[0].v;
}

/* C x d in 1/1000 segments (model: segments_in). */
static __always_inline __s64 milli_segments_in(const struct tv_ccp *c, __u32 d_us, __u32 mss)
{
	return (__s64)(capacity_Bps(c) * d_us / ((__u64)mss * 1000));
}

/* a / b for a signed a and positive b, truncating toward zero as C does (BPF before v4 has no
 * signed division). */
static __always_inline __s64 sdiv(__s64 a, __u64 b)
{
	return a < 0 ? -(__s64)((__u64)(-a) / b) : (__s64)((__u64)a / b);
}

/* rtt_k of the backlog (model: CcpCore::backlog). */
static __always_inline __u32 backlog_rtt(const struct tv_ccp *c)
{
	if (backlog_estimator && c->prev_round_min_us != TV_RTT_NONE)
		return c->prev_round_min_us;
	return c->rtt_us;
}

/* Eq. 4 in 1/1000 segments; false until the estimators have samples (model: CcpCore::law). */
static __always_inline bool law_milli(const struct tv_ccp *c, __u32 in_flight, __u32 mss, __s64 *out)
{
	__s64 b, x;

	if (capacity_Bps(c) == 0 || c->rtt_us == TV_RTT_NONE || c->base_rtt_us == TV_RTT_NONE)
		return false;
	if (storage_segments)
		b = (__s64)storage_segments * 1000;
	else if (c->rtt_max_us)
		b = milli_segments_in(c, c->rtt_max_us, mss);
	else
		return false;
	x = milli_segments_in(c, backlog_rtt(c) - c->base_rtt_us, mss);
	*out = sdiv(sdiv((__s64)kp_milli * (b - x), 1000) - (__s64)in_flight * 1000, 2);
	return true;
}

/* Backlog x_k >= 1 segment (the fixed-storage exit from slow start). */
static __always_inline bool backlog_at_least_one(const struct tv_ccp *c, __u32 mss)
{
	if (capacity_Bps(c) == 0 || c->rtt_us == TV_RTT_NONE || c->base_rtt_us == TV_RTT_NONE)
		return false;
	return milli_segments_in(c, backlog_rtt(c) - c->base_rtt_us, mss) >= 1000;
}

/* Update the estimators from one ACK (model: CcpCore::observe). */
/* Linux tcp_input.c FLAG_RETRANS_DATA_ACKED: this ACK acknowledged retransmitted data, so its
 * RTT can only come from the timestamp echo (ms granularity, and after a hole it includes the
 * time the receiver waited for the retransmission). The model's endpoint follows Karn's rule
 * and gives no sample then; the port drops it too. */
#define TV_FLAG_RETRANS_DATA_ACKED 0x08

static __always_inline void observe(struct sock *sk, const struct rate_sample *rs, int flag, bool in_recovery)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tv_ccp *c = ccp(sk);
	__u32 mss = mss_of(tp);
	__u64 now = tp->tcp_mstamp;

	struct tv_ccp_diag *d = &ccp_diag[(sk->__sk_common.skc_daddr >> 24) & 0xff];

	if (rs->rtt_us >= 0 && (flag & TV_FLAG_RETRANS_DATA_ACKED))
		d->retrans_samples_dropped++;
	if (rs->rtt_us >= 0 && !(flag & TV_FLAG_RETRANS_DATA_ACKED)) {
		__u32 r = (__u32)rs->rtt_us;
		bool explained = true;

		if (r < c->base_rtt_us)
			c->base_rtt_us = r;
		/* queueing our own in-flight data cannot explain: waited for a retransmission */
		if (capacity_Bps(c) && c->base_rtt_us != TV_RTT_NONE)
			explained = capacity_Bps(c) * (r - c->base_rtt_us) / 1000000 <=
				    (__u64)rs->prior_in_flight * mss;
		if (!explained && r > c->rtt_max_us)
			d->above_max_unexplained++;
		if (explained && in_recovery && r > c->rtt_max_us)
			d->above_max_in_recovery++;
		if (explained) {
			c->rtt_us = r;
			if (r < c->round_min_us)
				c->round_min_us = r;
			if (!in_recovery && tp->delivered >= c->rto_episode_end && r > c->rtt_max_us)
				c->rtt_max_us = r;
		}
	}
	/* RoundCounter::on_ack (BBR's packet-timed rounds) */
	if (rs->prior_delivered >= c->next_round_delivered) {
		c->next_round_delivered = tp->delivered;
		c->round_count++;
		if (c->round_min_us != TV_RTT_NONE)
			c->prev_round_min_us = c->round_min_us;
		c->round_min_us = TV_RTT_NONE;
	}
	if (capacity_estimator == 2) {
		/* ACK trains of at least max(TRAIN_MIN, baseRTT/8) (sample_ack_train) */
		if (!c->train_start_us) {
			c->train_start_us = now;
			c->train_bytes = 0;
		} else {
			__u64 span = now - c->train_start_us;
			__u64 min_span = TRAIN_MIN_US;

			c->train_bytes += rs->acked_sacked * mss;
			if (c->base_rtt_us != TV_RTT_NONE && c->base_rtt_us / 8 > min_span)
				min_span = c->base_rtt_us / 8;
			if (span >= min_span) {
				if (c->train_bytes > 0) {
					__u64 rate = (__u64)c->train_bytes * 1000000 / span;

					if (rate > 0xffffffffULL)
						rate = 0xffffffffULL;
					cap_update(c, capacity_win_rounds, c->round_count, (__u32)rate);
				}
				c->train_start_us = now;
				c->train_bytes = 0;
			}
		}
	} else if (capacity_estimator == 1) {
		/* delivery rate of the rate sample (sample_delivery_rate); app-limited only if higher */
		if (rs->interval_us > 0 && rs->delivered > 0) {
			__u64 rate = (__u64)rs->delivered * mss * 1000000 / (__u64)rs->interval_us;

			if (rate > 0xffffffffULL)
				rate = 0xffffffffULL;
			if (!rs->is_app_limited || rate >= capacity_Bps(c))
				cap_update(c, capacity_win_rounds, c->round_count, (__u32)rate);
		}
	} else if (c->last_ack_us && now > c->last_ack_us && rs->acked_sacked > 0) {
		/* ACK dispersion (sample_ack_dispersion) */
		__u64 gap = now - c->last_ack_us;
		__u64 rate = (__u64)rs->acked_sacked * mss * 1000000 / gap;

		if (rate > 0xffffffffULL)
			rate = 0xffffffffULL;
		cap_update(c, capacity_win_rounds, c->round_count, (__u32)rate);
	}
	c->last_ack_us = now;
}

/* The family member's window in segments, or 0 when the law has no estimates yet
 * (model: CcpFamily::apply_law). */
static __always_inline __u32 apply_law(struct sock *sk, __u32 in_flight)
{
	struct tv_ccp *c = ccp(sk);
	__s64 law, w;
	__u32 seg;

	if (!law_milli(c, in_flight, mss_of(tcp_sk(sk)), &law))
		return 0;
	w = variant_window(sk, c, law);
	ccp_diag[(sk->__sk_common.skc_daddr >> 24) & 0xff].variant_milli = w > law ? (__u32)(w - law) : 0;
	seg = w > 0 ? (__u32)((w + 500) / 1000) : 0;
	return seg > min_cwnd ? seg : min_cwnd;
}

static __always_inline void diag(struct sock *sk)
{
	struct tv_ccp *c = ccp(sk);
	struct tv_ccp_diag *d = &ccp_diag[(sk->__sk_common.skc_daddr >> 24) & 0xff];

	d->capacity_Bps = c->cap[0].v;
	d->base_rtt_us = c->base_rtt_us;
	d->rtt_max_us = c->rtt_max_us;
	d->rtt_us = c->rtt_us;
	d->cwnd = tcp_sk(sk)->snd_cwnd;
	d->in_ca = c->in_ca;
	d->acks++;
}

static __always_inline void set_cwnd(struct tcp_sock *tp, __u32 w)
{
	tp->snd_cwnd = w < tp->snd_cwnd_clamp ? w : tp->snd_cwnd_clamp;
}

static __always_inline void enter_ca(struct sock *sk)
{
	ccp(sk)->in_ca = 1;
	tcp_sk(sk)->snd_ssthresh = tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(ccp_init, struct sock *sk)
{
	struct tv_ccp *c = ccp(sk);

	__builtin_memset(c, 0, sizeof(*c));
	__builtin_memset(&ccp_diag[(sk->__sk_common.skc_daddr >> 24) & 0xff], 0, sizeof(struct tv_ccp_diag));
	c->base_rtt_us = TV_RTT_NONE;
	c->rtt_us = TV_RTT_NONE;
	c->round_min_us = TV_RTT_NONE;
	c->prev_round_min_us = TV_RTT_NONE;
}

/* The model's CcpFamily::on_ack. */
SEC("struct_ops")
void BPF_PROG(ccp_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tv_ccp *c = ccp(sk);
	bool in_recovery = ca_state(sk) == TCP_CA_Recovery;
	__u32 acked = rs->acked_sacked;
	__u32 w;

	observe(sk, rs, flag, in_recovery);
	if (!in_recovery)
		c->in_rto_recovery = 0;
	if (!c->in_ca) {
		/* fixed storage: leave slow start once a backlog exists and the law wants less */
		if (storage_segments && backlog_at_least_one(c, mss_of(tp))) {
			w = apply_law(sk, packets_in_flight(tp));
			if (w && w < tp->snd_cwnd) {
				enter_ca(sk);
				set_cwnd(tp, w);
				return;
			}
		}
		if ((in_recovery && !c->in_rto_recovery) || !cwnd_limited(tp) || acked == 0)
			return;
		tcp_slow_start(tp, acked);
		if (tp->snd_cwnd >= tp->snd_ssthresh)
			enter_ca(sk);	/* reached ssthresh (after an RTO) */
		return;
	}
	/* congestion avoidance: the law sets the window on every ACK, in recovery too */
	w = apply_law(sk, packets_in_flight(tp));
	if (w)
		set_cwnd(tp, w);
	diag(sk);
}

/* Entering fast recovery (and, first, an RTO: see cwnd_event). A loss only ends slow start;
 * the threshold keeps the window (the model's enter_ca: ssthresh = cwnd). */
SEC("struct_ops")
__u32 BPF_PROG(ccp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!ccp(sk)->in_ca)
		ccp(sk)->in_ca = 1;
	return tp->snd_cwnd > 2 ? tp->snd_cwnd : 2;
}

SEC("struct_ops")
void BPF_PROG(ccp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tv_ccp *c = ccp(sk);
	__u32 half;

	if (ev != CA_EVENT_LOSS)
		return;
	/* RTO (model: on_congestion_event(Timeout)); Linux sets cwnd = 1 next */
	c->rto_episode_end = tp->delivered + packets_in_flight(tp);
	half = tp->snd_cwnd / 2;
	tp->snd_ssthresh = half > 2 ? half : 2;
	c->in_ca = 0;
	c->in_rto_recovery = 1;
}

/* The window is the law's; an undo changes nothing. */
SEC("struct_ops")
__u32 BPF_PROG(ccp_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

#endif
