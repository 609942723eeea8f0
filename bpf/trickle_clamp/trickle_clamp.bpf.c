// SPDX-License-Identifier: GPL-2.0
/*
 * Trickle's cwnd clamp on a real socket (Ghobadi et al., USENIX ATC 2012, §3): a sock_ops
 * program that sets a connection's send-cwnd clamp (Linux tp->snd_cwnd_clamp, via
 * bpf_setsockopt(TCP_BPF_SNDCWND_CLAMP)) to the value the origin server wants for it.
 *
 * The server (crates/origin/src/cwnd_clamp.rs) computes the clamp per Algorithm 1 from TCP_INFO
 * (tcpvideo_model::delivery::trickle) and writes it into `clamps`, keyed by the socket's cookie
 * (SO_COOKIE in user space, bpf_get_socket_cookie here: the same sock_gen_cookie value). A
 * clamp cannot be set from user space at all, so the program applies it from the socket's own
 * callbacks: on ESTABLISHED it asks for the RTT callback (called on every ACK that carries an RTT
 * sample), and there it applies a wanted value that differs from the one it applied last.
 *
 * Why "only when changed": the kernel's TCP_BPF_SNDCWND_CLAMP also sets ssthresh to the clamp;
 * re-applying it on every ACK would undo each loss response of the congestion control. Applied
 * once per change, it acts like Trickle's setsockopt in the paper's modified ustreamer.
 * "No clamp" (Algorithm 1's ∞, while the connection is behind) is 0x7fffffff, Linux's
 * TCP_INFINITE_SSTHRESH and the largest value the option accepts.
 *
 * Built by the origin at start (clang -O2 -target bpf) and loaded with bpftool; see
 * crates/origin/src/cwnd_clamp.rs for why bpftool rather than a loader crate.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SOL_TCP 6

struct clamp_entry {
	__u32 wanted;  /* packets, written by the server; 0x7fffffff = no clamp */
	__u32 applied; /* last value set on the socket; the server writes 0 = "apply again" */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* >= the origin's connection cap */
	__type(key, __u64);         /* socket cookie */
	__type(value, struct clamp_entry);
} clamps SEC(".maps");

SEC("sockops")
int trickle_clamp(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_RTT_CB:
		break;
	default:
		return 1;
	}
	__u64 cookie = bpf_get_socket_cookie(skops);
	struct clamp_entry *e = bpf_map_lookup_elem(&clamps, &cookie);
	if (!e || e->wanted == 0 || e->wanted == e->applied)
		return 1;
	int value = (int)e->wanted;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, &value, sizeof(value)) == 0)
		e->applied = e->wanted;
	return 1;
}

char _license[] SEC("license") = "GPL";
