// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_bic: BIC-TCP as Linux 6.x net/ipv4/tcp_bic.c runs it, as a BPF struct_ops congestion
 * control, so that a real Linux TCP stack on a kernel built without tcp_bic can run the algorithm
 * tcpvideo models (crates/model/src/cc/bic.rs). Written for tcpvideo from our reading of the
 * algorithm (Xu, Harfoush, Rhee, "Binary Increase Congestion Control (BIC) for Fast
 * Long-Distance Networks", IEEE INFOCOM 2004, section III) and of Linux's module and tcpvideo's
 * model; no Linux source is copied.
 *
 * The algorithm (what Linux does):
 *  - ssthresh on a loss: the epoch ends; W_max = cwnd, or with fast convergence, when the loss
 *    came below the previous W_max, cwnd*(1+beta)/2 (beta = 819/1024); the new ssthresh is
 *    max(cwnd/2, 2) at or below low_window, max(cwnd*beta, 2) above.
 *  - cong_avoid (only when cwnd-limited): slow start with tcp_slow_start; the segments ACKed
 *    beyond ssthresh, and every ACK in congestion avoidance, go to tcp_cong_avoid_ai(cnt), where
 *    cnt (segments ACKed per +1 segment) is recomputed when cwnd changed or HZ/32 jiffies passed:
 *       cwnd <= low_window:            cnt = cwnd (Reno);
 *       below W_max (binary search):   dist = (W_max - cwnd)/B;  cnt = cwnd/max_increment when
 *                                      dist > max_increment, cwnd*smooth_part/B when dist <= 1,
 *                                      else cwnd/dist;
 *       at/above W_max (max probing):  cwnd*smooth_part/B below W_max + B,
 *                                      cwnd*(B-1)/(cwnd-W_max) below W_max + max_increment*(B-1),
 *                                      else cwnd/max_increment;
 *       no loss yet (W_max = 0):       cnt <= 20 (+5 % per RTT at least);
 *       then cnt = cnt*16/delayed_ack (at least 1), delayed_ack being segments per ACK << 4.
 *  - pkts_acked: in TCP_CA_Open, delayed_ack += pkts_acked - delayed_ack/16 (an integer EWMA,
 *    gain 1/16, that starts at 2 << 4).
 *  - set_state TCP_CA_Loss (RTO): reset everything, W_max and the ACK ratio included.
 *  - undo = tcp_reno_undo_cwnd.
 * tcp_slow_start, tcp_cong_avoid_ai and tcp_reno_undo_cwnd are the kernel's own functions, called
 * as kfuncs where Linux BIC calls them. tcp_is_cwnd_limited (an inline in include/net/tcp.h) is
 * written out from the same socket fields. The jiffies clock is the kernel's (bpf_jiffies64), and
 * HZ the running kernel's CONFIG_HZ.
 *
 * Parameters (Linux module parameters, same defaults): beta = 819 (/1024), max_increment = 16,
 * low_window = 14, smooth_part = 20, fast_convergence = 1, initial_ssthresh = 0 (unset).
 *
 * Differences from the in-tree module: none in the algorithm. The per-flow state is mirrored in
 * the global array `tv_bic_flows` (indexed by the last byte of the peer's IPv4 address) for
 * bench/cc_bpf_vs_tcpvideo.py to read with bpftool.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* The kernel lets only programs with a GPL-compatible license string implement tcp_congestion_ops
 * and call its kfuncs; this file (our own code) is offered under MIT or GPL-2.0, which the kernel
 * accepts as "Dual MIT/GPL" and which sits fine in this Apache-2.0 project. */
char _license[] SEC("license") = "Dual MIT/GPL";

#define BETA_SCALE 1024
#define BIC_B 4			/* binary search goes to (max + min)/B */
#define ACK_RATIO_SHIFT 4

/* Linux module parameters. */
const volatile __u32 fast_convergence = 1;
const volatile __u32 max_increment = 16;	/* segments per RTT */
const volatile __u32 low_window = 14;		/* segments */
const volatile __u32 beta = 819;		/* /1024 */
const volatile __u32 initial_ssthresh = 0;	/* segments, 0 = unset */
const volatile __u32 smooth_part = 20;		/* RTTs from W_max - B to W_max */

extern const unsigned int CONFIG_HZ __kconfig;

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Per-connection state, in icsk_ca_priv. */
struct tv_bic {
	__u32 cnt;		/* segments ACKed per +1 segment of cwnd */
	__u32 last_max_cwnd;	/* W_max (0: no loss yet) */
	__u32 last_cwnd;	/* cwnd when cnt was last computed */
	__u32 last_time;	/* jiffies then */
	__u32 epoch_start;	/* jiffies at the epoch start (0: none) */
	__u32 delayed_ack;	/* segments per ACK << ACK_RATIO_SHIFT */
};

/* Diagnostics only: per client address, the latest connection. */
struct tv_bic_flow {
	__u32 losses;		/* ssthresh calls (fast recovery or RTO) */
	__u32 resets;		/* TCP_CA_Loss resets */
	__u32 last_max_cwnd;
	__u32 cnt;
	__u32 delayed_ack;	/* << 4 */
	__u32 cwnd_at_first_loss;
	__u32 delayed_ack_min;	/* smallest ratio seen (<< 4), after the first update */
	__u32 delayed_ack_max;
	__u32 updates;		/* cnt recomputations */
	__u32 ratio_sum;	/* sum of delayed_ack (<< 4) over the cnt recomputations above low_window */
	__u32 cnt_sum;		/* sum of the resulting cnt */
	__u32 ratio_n;		/* number of such recomputations */
	__u32 acks_open;	/* ACKs seen by pkts_acked in TCP_CA_Open */
	__u32 pkts_open;	/* segments they acknowledged */
};
struct tv_bic_flow tv_bic_flows[256];

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct tv_bic *ca(const struct sock *sk)
{
	return (struct tv_bic *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline struct tv_bic_flow *flow_of(const struct sock *sk)
{
	__u32 i = (sk->__sk_common.skc_daddr >> 24) & 0xff;

	return &tv_bic_flows[i];
}

static __always_inline __u32 jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

static __always_inline bool in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* include/net/tcp.h tcp_is_cwnd_limited (6.x). */
static __always_inline bool is_cwnd_limited(const struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	/* in slow start, let cwnd grow to twice what was in flight */
	if (in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

static __always_inline void bic_reset(struct tv_bic *c)
{
	c->cnt = 0;
	c->last_max_cwnd = 0;
	c->last_cwnd = 0;
	c->last_time = 0;
	c->epoch_start = 0;
	c->delayed_ack = 2 << ACK_RATIO_SHIFT;
}

SEC("struct_ops")
void BPF_PROG(tv_bic_init, struct sock *sk)
{
	struct tv_bic_flow *f = flow_of(sk);

	__builtin_memset(f, 0, sizeof(*f));
	f->delayed_ack_min = 0xffffffff;
	bic_reset(ca(sk));
	if (initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

/* Linux bictcp_update: the cnt for this window. */
static __always_inline void bic_update(struct tv_bic *c, __u32 cwnd, struct tv_bic_flow *f)
{
	__u32 now = jiffies32();
	__u32 wmax = c->last_max_cwnd, dist;

	if (c->last_cwnd == cwnd && (__s32)(now - c->last_time) <= (__s32)(CONFIG_HZ / 32))
		return;
	c->last_cwnd = cwnd;
	c->last_time = now;
	if (c->epoch_start == 0)
		c->epoch_start = now;
	f->updates++;
	if (cwnd <= low_window) {
		c->cnt = cwnd;	/* Reno */
		return;
	}
	if (cwnd < wmax) {
		dist = (wmax - cwnd) / BIC_B;
		if (dist > max_increment)
			c->cnt = cwnd / max_increment;		/* additive increase */
		else if (dist <= 1)
			c->cnt = cwnd * smooth_part / BIC_B;	/* last steps to W_max */
		else
			c->cnt = cwnd / dist;			/* binary search */
	} else {
		if (cwnd < wmax + BIC_B)
			c->cnt = cwnd * smooth_part / BIC_B;	/* just past W_max */
		else if (cwnd < wmax + max_increment * (BIC_B - 1))
			c->cnt = cwnd * (BIC_B - 1) / (cwnd - wmax); /* max probing */
		else
			c->cnt = cwnd / max_increment;
	}
	if (wmax == 0 && c->cnt > 20)
		c->cnt = 20;	/* no loss yet: at least +5 % per RTT */
	c->cnt = (c->cnt << ACK_RATIO_SHIFT) / c->delayed_ack;
	if (c->cnt == 0)
		c->cnt = 1;
	f->ratio_sum += c->delayed_ack;
	f->cnt_sum += c->cnt;
	f->ratio_n++;
}

SEC("struct_ops")
void BPF_PROG(tv_bic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tv_bic *c = ca(sk);
	struct tv_bic_flow *f = flow_of(sk);

	if (!is_cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bic_update(c, tp->snd_cwnd, f);
	f->cnt = c->cnt;
	tcp_cong_avoid_ai(tp, c->cnt, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(tv_bic_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tv_bic *c = ca(sk);
	struct tv_bic_flow *f = flow_of(sk);
	__u32 cwnd = tp->snd_cwnd, s;

	c->epoch_start = 0;
	if (cwnd < c->last_max_cwnd && fast_convergence)
		c->last_max_cwnd = cwnd * (BETA_SCALE + beta) / (2 * BETA_SCALE);
	else
		c->last_max_cwnd = cwnd;
	if (f->losses == 0)
		f->cwnd_at_first_loss = cwnd;
	f->losses++;
	f->last_max_cwnd = c->last_max_cwnd;
	if (cwnd <= low_window)
		s = cwnd >> 1;
	else
		s = cwnd * beta / BETA_SCALE;
	return s > 2 ? s : 2;
}

SEC("struct_ops")
void BPF_PROG(tv_bic_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		bic_reset(ca(sk));
		flow_of(sk)->resets++;
	}
}

SEC("struct_ops")
void BPF_PROG(tv_bic_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tv_bic *c;
	struct tv_bic_flow *f;

	if (BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state) != TCP_CA_Open)
		return;
	c = ca(sk);
	c->delayed_ack += sample->pkts_acked - (c->delayed_ack >> ACK_RATIO_SHIFT);
	f = flow_of(sk);
	f->acks_open++;
	f->pkts_open += sample->pkts_acked;
	f->delayed_ack = c->delayed_ack;
	if (c->delayed_ack < f->delayed_ack_min)
		f->delayed_ack_min = c->delayed_ack;
	if (c->delayed_ack > f->delayed_ack_max)
		f->delayed_ack_max = c->delayed_ack;
}

SEC("struct_ops")
__u32 BPF_PROG(tv_bic_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops tv_bic = {
	.init = (void *)tv_bic_init,
	.ssthresh = (void *)tv_bic_ssthresh,
	.cong_avoid = (void *)tv_bic_cong_avoid,
	.set_state = (void *)tv_bic_state,
	.undo_cwnd = (void *)tv_bic_undo_cwnd,
	.pkts_acked = (void *)tv_bic_acked,
	.name = "tv_bic",
};
