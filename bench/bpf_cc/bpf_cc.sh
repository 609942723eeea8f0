#!/bin/sh
# Build, register and unregister tcpvideo's BPF struct_ops ports of Linux congestion controls
# (tv_vegas, tv_bic; see README.md here). Needs root, clang, bpftool and libbpf headers
# (Debian: apt-get install -y clang libbpf-dev bpftool) and a kernel with BTF
# (/sys/kernel/btf/vmlinux) and BPF struct_ops congestion control.
#
#   bench/bpf_cc/bpf_cc.sh build               # vmlinux.h from the running kernel, then *.bpf.o
#   bench/bpf_cc/bpf_cc.sh register [NAME...]  # build if needed; register (default: all)
#   bench/bpf_cc/bpf_cc.sh unregister [NAME...]
#   bench/bpf_cc/bpf_cc.sh status              # registered struct_ops, available CCs
#
# The objects and the generated vmlinux.h go to $BPF_CC_BUILD (default: bench/bpf_cc/build,
# ignored by git): vmlinux.h describes the running kernel and is never committed.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BPF_CC_BUILD:-$HERE/build}
ALL="tv_vegas tv_bic"

build() {
    mkdir -p "$BUILD"
    if [ ! -s "$BUILD/vmlinux.h" ] || [ /sys/kernel/btf/vmlinux -nt "$BUILD/vmlinux.h" ]; then
        bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$BUILD/vmlinux.h.tmp"
        mv "$BUILD/vmlinux.h.tmp" "$BUILD/vmlinux.h"
    fi
    for n in $ALL; do
        src="$HERE/$n.bpf.c"
        obj="$BUILD/$n.bpf.o"
        if [ ! -s "$obj" ] || [ "$src" -nt "$obj" ] || [ "$BUILD/vmlinux.h" -nt "$obj" ]; then
            clang -O2 -g -Wall -Werror -target bpf -I"$BUILD" -c "$src" -o "$obj"
        fi
    done
}

registered() {  # NAME -> 0 if a congestion control of that name is registered
    grep -qw "$1" /proc/sys/net/ipv4/tcp_available_congestion_control
}

unregister() {
    for n in "$@"; do
        registered "$n" || continue
        # Every struct_ops map of that name is deleted; an earlier, already unregistered one that
        # sockets still hold (being freed) answers EINPROGRESS, which is not a failure.
        bpftool struct_ops unregister name "$n" >/dev/null 2>&1 || true
        if registered "$n"; then
            echo "$n: still registered after bpftool struct_ops unregister" >&2
            exit 1
        fi
    done
}

register() {
    build
    for n in "$@"; do
        unregister "$n"
        bpftool struct_ops register "$BUILD/$n.bpf.o" >/dev/null
        registered "$n" || {
            echo "$n: registered but not in tcp_available_congestion_control" >&2
            exit 1
        }
    done
}

cmd=${1:-status}
[ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- $ALL
case "$cmd" in
    build) build ;;
    register) register "$@" ;;
    unregister) unregister "$@" ;;
    status)
        bpftool struct_ops list
        echo "available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
        ;;
    *) echo "usage: $0 build|register|unregister|status [NAME...]" >&2; exit 2 ;;
esac
