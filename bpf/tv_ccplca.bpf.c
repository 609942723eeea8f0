// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_ccplca: CCPLCA (CCP with Limited Congestion Avoidance; seed 001 §V) as a BPF struct_ops
 * congestion control, the kernel twin of tcpvideo's crates/model/src/cc/ccplca.rs:
 *     cwnd = max(cwnd_ccp, ceil(VR x rtt / MSS))
 * CCP's core (tv_ccp_core.h); the floor keeps the throughput at the current RTT at or above the
 * video rendering rate VR. VR comes per socket from the server through the tv_app_info socket
 * storage (tv_app_info.h), else the load-time default `default_video_rate_bps` (the model's
 * `video_rate_mbps`, 0 = none: then it is CCP). rtt is the core's latest explained sample.
 * Deviation: the floor is computed in 1/1000 segments from integer bits/s and microseconds.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual MIT/GPL";

const volatile __u64 default_video_rate_bps = 0;	/* VR when the server gives none; 0 = none */

#include "tv_ccp_core.h"

/* VR x rtt in 1/1000 segments, rounded up to whole segments (the model's vr.ceil()). */
static __always_inline __s64 variant_window(struct sock *sk, const struct tv_ccp *c, __s64 law_milli)
{
	struct tv_app_info *ai = app_info_of(sk);
	__u64 vr = default_video_rate_bps, mss = mss_of(tcp_sk(sk)), floor_milli;

	if (ai && ai->video_rate_bps)
		vr = ai->video_rate_bps;
	if (vr == 0 || c->rtt_us == TV_RTT_NONE)
		return law_milli;
	/* bytes in rtt = vr/8 * rtt_us/1e6; segments = that / mss */
	floor_milli = vr / 8 * c->rtt_us / mss / 1000;
	floor_milli = (floor_milli + 999) / 1000 * 1000;
	return law_milli > (__s64)floor_milli ? law_milli : (__s64)floor_milli;
}

SEC(".struct_ops")
struct tcp_congestion_ops tv_ccplca = {
	.init = (void *)ccp_init,
	.ssthresh = (void *)ccp_ssthresh,
	.undo_cwnd = (void *)ccp_undo_cwnd,
	.cong_control = (void *)ccp_cong_control,
	.cwnd_event = (void *)ccp_cwnd_event,
	.name = "tv_ccplca",
};
