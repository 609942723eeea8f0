#!/usr/bin/env bash
# Install everything tcpvideo's tests need on a fresh Debian 12 machine, then run every test:
# the Rust unit and integration tests of each crate, then the Python tests (which drive the
# compiled extension, tshark and, where they need it, network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

# System tools the tests drive: tshark (pcap cross-checks), ethtool/iproute2 (namespaces), clang,
# bpftool and the libbpf headers (the BPF congestion-control ports of bpf/).
need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v bpftool >/dev/null 2>&1 || need+=(bpftool)
[ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
# tcpvideo edge demo (tests/test_edge_demo.py): the live source, the browser and its driver.
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing ${need[*]} and not root: the tests that need them will be skipped" >&2
  fi
fi

python3 -m pip install -q -e '.[test]'
# hls.js and playwright-core for the edge demo's player, versions pinned by its package-lock.json
# (playwright-core downloads no browser; the demo launches Debian's /usr/bin/chromium).
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix python/tcpvideo/edge_demo/player --no-audit --no-fund >/dev/null
fi
# Style gates: rustfmt.toml's format and clippy with warnings as errors, every crate and target.
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets --release -- -D warnings
cargo test --workspace --exclude tcpvideo-py --release
python3 -m pytest -q tests
