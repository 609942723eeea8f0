// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_ccp: CCP (Capacity and Congestion Probing; seed 001 §IV.C Eq. 4) as a BPF struct_ops
 * congestion control, the kernel twin of tcpvideo's crates/model/src/cc/ccp.rs:
 *     cwnd_k = [Kp (B - x_k) - in_flight_k] / 2
 * The estimators, phases, parameters and deviations are in tv_ccp_core.h; this file only says
 * that plain CCP takes Eq. 4 as is (the model's `Plain` variant).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* GPL-compatible license string: the kernel requires it for tcp_congestion_ops and kfuncs. */
char _license[] SEC("license") = "Dual MIT/GPL";

#include "tv_ccp_core.h"

static __always_inline __s64 variant_window(struct sock *sk, const struct tv_ccp *c, __s64 law_milli)
{
	return law_milli;
}

SEC(".struct_ops")
struct tcp_congestion_ops tv_ccp = {
	.init = (void *)ccp_init,
	.ssthresh = (void *)ccp_ssthresh,
	.undo_cwnd = (void *)ccp_undo_cwnd,
	.cong_control = (void *)ccp_cong_control,
	.cwnd_event = (void *)ccp_cwnd_event,
	.name = "tv_ccp",
};
