// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_vegas: TCP Vegas as Linux 6.x net/ipv4/tcp_vegas.c runs it, as a BPF struct_ops
 * congestion control, so that a real Linux TCP stack on a kernel built without tcp_vegas can run
 * the algorithm tcpvideo models (crates/model/src/cc/vegas.rs). Written for tcpvideo from our
 * reading of the algorithm (Brakmo & Peterson, IEEE JSAC 13(8), 1995, sections 3.2-3.3) and of
 * Linux's module and tcpvideo's model; no Linux source is copied.
 *
 * The algorithm (what Linux does, step by step):
 *  - pkts_acked: every ACK with an RTT sample (ack_sample.rtt_us >= 0, the RTT of the newest
 *    segment it delivered) feeds vrtt = rtt_us + 1 into two minima: baseRTT (the minimum since
 *    init, never forgotten while the connection runs) and minRTT (the minimum of this round),
 *    and counts the sample (cntRTT).
 *  - cong_avoid: a round ends on the first ACK beyond the snd_nxt recorded at the previous round
 *    end. At a round end, with > 2 samples in the round:
 *        diff = cwnd * (minRTT - baseRTT) / baseRTT      (segments queued, Linux's form)
 *        in slow start and diff > gamma: cwnd = min(cwnd, cwnd*baseRTT/minRTT + 1), leave slow
 *                                         start (ssthresh = min(ssthresh, cwnd));
 *        in slow start otherwise:        tcp_slow_start;
 *        congestion avoidance:           diff > beta: cwnd - 1 (ssthresh = min(ssthresh, cwnd));
 *                                         diff < alpha: cwnd + 1; else hold;
 *        then cwnd in [2, snd_cwnd_clamp], ssthresh = tcp_current_ssthresh (max(ssthresh,
 *        3/4 cwnd) in the Open state).
 *    With <= 2 samples (probably delayed ACKs only) the round end is a Reno step. Between round
 *    ends only slow start grows the window. When Vegas is off (not in TCP_CA_Open), Reno.
 *  - set_state: Vegas runs only in TCP_CA_Open; entering Open restarts the round (fresh
 *    samples), every other state switches it off.
 *  - cwnd_event CA_EVENT_TX_START / CA_EVENT_CWND_RESTART (send after idle): init again, which
 *    also forgets baseRTT.
 *  - ssthresh on loss = tcp_reno_ssthresh (max(cwnd/2, 2)); undo = tcp_reno_undo_cwnd.
 * tcp_slow_start, tcp_reno_cong_avoid, tcp_reno_ssthresh and tcp_reno_undo_cwnd are the kernel's
 * own functions, called as kfuncs (the kernel exports them to BPF congestion controls), exactly
 * where Linux Vegas calls them.
 *
 * Parameters (Linux module parameters, same defaults): alpha = 2, beta = 4, gamma = 1
 * (segments queued). Change them in this file before `tcpvideo bpf load` (they are .rodata constants).
 *
 * Differences from the in-tree module: no get_info (INET_DIAG_VEGASINFO; BPF congestion
 * controls cannot provide it); instead the per-flow state is mirrored in the global array
 * `tv_vegas_flows` (indexed by the last byte of the peer's IPv4 address, the client number on
 * tcpvideo's real-Linux dumbbell) for bench/cc_bpf_vs_tcpvideo.py to read with bpftool.
 * tcp_current_ssthresh is not a kfunc: it is written out here (Vegas calls it only in Open).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* The kernel lets only programs with a GPL-compatible license string implement tcp_congestion_ops
 * and call its kfuncs; this file (our own code) is offered under MIT or GPL-2.0, which the kernel
 * accepts as "Dual MIT/GPL" and which sits fine in this Apache-2.0 project. */
char _license[] SEC("license") = "Dual MIT/GPL";

#define RTT_INF 0x7fffffffU

/* Linux module parameters alpha, beta, gamma (segments). */
const volatile __u32 alpha = 2;
const volatile __u32 beta = 4;
const volatile __u32 gamma = 1;

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Per-connection state, in icsk_ca_priv (104 bytes). */
struct tv_vegas {
	__u32 beg_snd_nxt;	/* round ends on the first ACK after this sequence */
	__u32 min_rtt;		/* minimum vrtt (us + 1) of this round */
	__u32 base_rtt;		/* minimum vrtt since init: the propagation delay estimate */
	__u16 cnt_rtt;		/* RTT samples this round */
	__u8 doing_vegas_now;
};

/* Diagnostics only (not read by the algorithm): per client address, the latest connection's
 * state and what its rounds did. */
struct tv_vegas_flow {
	__u32 base_rtt_us;		/* current baseRTT (vrtt) */
	__u32 ss_exit_cwnd;		/* cwnd set when Vegas left slow start (0: not yet) */
	__u32 ss_exit_min_rtt_us;	/* the round minimum RTT at that moment */
	__u32 ss_exit_base_rtt_us;	/* the baseRTT at that moment */
	__u32 ss_exit_ms;		/* tcp_mstamp (ms) at that moment */
	__u32 vegas_rounds;		/* round ends with the Vegas computation */
	__u32 reno_rounds;		/* round ends with <= 2 samples (Reno step) */
	__u32 dec;			/* -1 steps (diff > beta) */
	__u32 inc;			/* +1 steps (diff < alpha) */
	__u32 last_diff;		/* diff at the latest Vegas round end */
	__u32 inits;			/* tcp_vegas_init calls (connection start, restarts) */
	__u32 samples;			/* RTT samples */
	__u32 init_ms;			/* tcp_mstamp (ms) when the connection's CC started */
	__u32 tx_starts;		/* CA_EVENT_TX_START: sending with nothing in flight */
	__u32 cwnd_restarts;		/* CA_EVENT_CWND_RESTART: sending after an idle RTO */
	__u32 reinit_ms;		/* tcp_mstamp (ms) of the latest re-init after data flowed */
	__u32 forgotten_base_rtt_us;	/* the baseRTT that re-init threw away */
};
struct tv_vegas_flow tv_vegas_flows[256];

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct tv_vegas *ca(const struct sock *sk)
{
	return (struct tv_vegas *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline struct tv_vegas_flow *flow_of(const struct sock *sk)
{
	/* skc_daddr is in network byte order: its last octet is the most significant byte here */
	__u32 i = (sk->__sk_common.skc_daddr >> 24) & 0xff;

	return &tv_vegas_flows[i];
}

static __always_inline bool in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline bool seq_after(__u32 a, __u32 b)
{
	return (__s32)(b - a) < 0;
}

/* Start a round of fresh samples (Linux vegas_enable). */
static __always_inline void vegas_enable(struct sock *sk)
{
	struct tv_vegas *v = ca(sk);

	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = RTT_INF;
}

static __always_inline void vegas_init(struct sock *sk)
{
	ca(sk)->base_rtt = RTT_INF;
	vegas_enable(sk);
	flow_of(sk)->inits++;
}

SEC("struct_ops")
void BPF_PROG(tv_vegas_init, struct sock *sk)
{
	struct tv_vegas_flow *f = flow_of(sk);

	__builtin_memset(f, 0, sizeof(*f));
	f->init_ms = (__u32)(tcp_sk(sk)->tcp_mstamp / 1000);
	vegas_init(sk);
}

SEC("struct_ops")
void BPF_PROG(tv_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tv_vegas *v = ca(sk);
	struct tv_vegas_flow *f;
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = (__u32)sample->rtt_us + 1;	/* never a zero RTT */
	if (vrtt < v->base_rtt)
		v->base_rtt = vrtt;
	if (vrtt < v->min_rtt)
		v->min_rtt = vrtt;
	v->cnt_rtt++;
	f = flow_of(sk);
	f->base_rtt_us = v->base_rtt;
	f->samples++;
}

SEC("struct_ops")
void BPF_PROG(tv_vegas_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		ca(sk)->doing_vegas_now = 0;
}

SEC("struct_ops")
void BPF_PROG(tv_vegas_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tv_vegas_flow *f;

	if (ev != CA_EVENT_CWND_RESTART && ev != CA_EVENT_TX_START)
		return;
	f = flow_of(sk);
	if (ev == CA_EVENT_TX_START)
		f->tx_starts++;
	else
		f->cwnd_restarts++;
	if (ca(sk)->base_rtt != RTT_INF) {
		/* not the first send: the connection ran dry, Vegas starts over */
		f->reinit_ms = (__u32)(tcp_sk(sk)->tcp_mstamp / 1000);
		f->forgotten_base_rtt_us = ca(sk)->base_rtt;
	}
	vegas_init(sk);
}

/* Linux tcp_vegas_ssthresh (6.x): never raise ssthresh above the window. */
static __always_inline __u32 vegas_ssthresh(const struct tcp_sock *tp)
{
	return tp->snd_ssthresh < tp->snd_cwnd ? tp->snd_ssthresh : tp->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(tv_vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tv_vegas *v = ca(sk);
	struct tv_vegas_flow *f = flow_of(sk);
	__u32 rtt, base, cwnd, diff, target, keep;

	if (!v->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!seq_after(ack, v->beg_snd_nxt)) {
		/* inside a round: only slow start grows the window */
		if (in_slow_start(tp))
			tcp_slow_start(tp, acked);
		return;
	}
	/* round end */
	v->beg_snd_nxt = tp->snd_nxt;
	if (v->cnt_rtt <= 2) {
		/* one ACK per RTT or so: delayed ACKs only, no trustworthy minimum -> Reno */
		tcp_reno_cong_avoid(sk, ack, acked);
		f->reno_rounds++;
	} else {
		rtt = v->min_rtt;
		base = v->base_rtt;
		cwnd = tp->snd_cwnd;
		target = (__u32)(((__u64)cwnd * base) / rtt);
		diff = cwnd * (rtt - base) / base;
		f->vegas_rounds++;
		f->last_diff = diff;
		if (diff > gamma && in_slow_start(tp)) {
			/* going too fast: the rate actually achieved, plus one for the truncation */
			tp->snd_cwnd = cwnd < target + 1 ? cwnd : target + 1;
			tp->snd_ssthresh = vegas_ssthresh(tp);
			f->ss_exit_cwnd = tp->snd_cwnd;
			f->ss_exit_min_rtt_us = rtt;
			f->ss_exit_base_rtt_us = base;
			f->ss_exit_ms = (__u32)(tp->tcp_mstamp / 1000);
		} else if (in_slow_start(tp)) {
			tcp_slow_start(tp, acked);
		} else if (diff > beta) {
			tp->snd_cwnd = cwnd - 1;
			tp->snd_ssthresh = vegas_ssthresh(tp);
			f->dec++;
		} else if (diff < alpha) {
			tp->snd_cwnd = cwnd + 1;
			f->inc++;
		}
		if (tp->snd_cwnd < 2)
			tp->snd_cwnd = 2;
		else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
		/* tcp_current_ssthresh in TCP_CA_Open (Vegas only runs there) */
		keep = (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2);
		if (tp->snd_ssthresh < keep)
			tp->snd_ssthresh = keep;
	}
	v->cnt_rtt = 0;
	v->min_rtt = RTT_INF;
}

SEC("struct_ops")
__u32 BPF_PROG(tv_vegas_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(tv_vegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops tv_vegas = {
	.init = (void *)tv_vegas_init,
	.ssthresh = (void *)tv_vegas_ssthresh,
	.undo_cwnd = (void *)tv_vegas_undo_cwnd,
	.cong_avoid = (void *)tv_vegas_cong_avoid,
	.pkts_acked = (void *)tv_vegas_pkts_acked,
	.set_state = (void *)tv_vegas_state,
	.cwnd_event = (void *)tv_vegas_cwnd_event,
	.name = "tv_vegas",
};
