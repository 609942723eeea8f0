#!/usr/bin/env bash
# Install everything tcpvideo's tests need on a fresh Debian 12 machine, then run every test:
# the Rust unit and integration tests of each crate, then the Python tests (which drive the
# compiled extension, tshark and, where they need it, network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tshark >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark ethtool iproute2 >/dev/null
  else
    echo "tshark missing and not root: the tshark cross-checks will be skipped" >&2
  fi
fi

python3 -m pip install -q -e '.[test]'
cargo test --workspace --exclude tcpvideo-py --release
python3 -m pytest -q tests
