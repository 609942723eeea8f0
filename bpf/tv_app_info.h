// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * tv_app_info: what a video server tells the kernel congestion control about the stream on one
 * socket — the client's playout buffer size POB and POBRate (seed 001 Eq. 5, for tv_ccplb) and
 * the video rendering rate VR (seed 001 §V LimitedCongestionAvoidance, for tv_ccplca). The
 * kernel twin of tcpvideo's `AppInfo` (crates/model/src/cc/mod.rs), which carries the same facts
 * to the simulator's congestion controls.
 *
 * Transport: a BPF socket-storage map (BPF_MAP_TYPE_SK_STORAGE), pinned by name at
 * /sys/fs/bpf/tv_app_info so every tcpvideo CC object shares one map. The server writes it from
 * user space with BPF_MAP_UPDATE_ELEM keyed by the socket's file descriptor
 * (python/tcpvideo/bpf.py `set_app_info`). BPF_F_CLONE: an accepted socket inherits the
 * listening socket's entry, so a server may write once on its listener, or per connection.
 *
 * A socket without an entry (or with a zero field) runs on the CC's load-time defaults.
 * Values are checked in user space (POB > 0, rates >= 0); the CCs also ignore zeros.
 */
#ifndef TV_APP_INFO_H
#define TV_APP_INFO_H

struct tv_app_info {
	__u32 pob_segments;	/* playout buffer size POB, segments (seed 001: 448/897/1345 of 1600 B) */
	__u32 pob_rate_milli;	/* POBRate x 1000: the window adds POB / POBRate (0 = CC default) */
	__u64 video_rate_bps;	/* video rendering rate VR, bits per second (0 = none) */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, struct tv_app_info);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} tv_app_info SEC(".maps");

/* This socket's entry, or NULL. Never creates one (only the server writes). */
static __always_inline struct tv_app_info *app_info_of(struct sock *sk)
{
	return bpf_sk_storage_get(&tv_app_info, sk, 0, 0);
}

#endif
