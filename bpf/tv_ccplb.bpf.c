// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_ccplb: CCPLB (CCP with Large Buffer; seed 001 §V Eq. 5) as a BPF struct_ops congestion
 * control, the kernel twin of tcpvideo's crates/model/src/cc/ccplb.rs:
 *     cwnd_k = [Kp (B - x_k) - in_flight_k] / 2 + POB / POBRate
 * CCP's core (tv_ccp_core.h) plus a share of the client's playout buffer. POB and POBRate come
 * per socket from the server through the tv_app_info socket storage (tv_app_info.h) — the
 * kernel's AppInfo — and otherwise from the load-time defaults below (the model's
 * `pob_segments` 448 and `pob_rate` 1). POB is the buffer's size, not its fill level, as the
 * seed has it (the model's default, pob_from_app = 0).
 * Deviation: POB/POBRate is computed in 1/1000 segments (the model: f64); a POBRate of 0 adds
 * nothing, as the model's `term()`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 default_pob_segments = 448;	/* POB, segments */
const volatile __u32 default_pob_rate_milli = 1000;	/* POBRate x 1000 */

#include "tv_app_info.h"

#include "tv_ccp_core.h"

static __always_inline __s64 variant_window(struct sock *sk, const struct tv_ccp *c, __s64 law_milli)
{
	struct tv_app_info *ai = app_info_of(sk);
	__u64 pob = default_pob_segments, rate = default_pob_rate_milli;

	if (ai && ai->pob_segments)
		pob = ai->pob_segments;
	if (ai && ai->pob_rate_milli)
		rate = ai->pob_rate_milli;
	if (rate == 0)
		return law_milli;
	return law_milli + (__s64)(pob * 1000 * 1000 / rate);
}

SEC(".struct_ops")
struct tcp_congestion_ops tv_ccplb = {
	.init = (void *)ccp_init,
	.ssthresh = (void *)ccp_ssthresh,
	.undo_cwnd = (void *)ccp_undo_cwnd,
	.cong_control = (void *)ccp_cong_control,
	.cwnd_event = (void *)ccp_cwnd_event,
	.name = "tv_ccplb",
};
