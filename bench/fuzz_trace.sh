#!/usr/bin/env bash
# Fuzz the analyzer (crates/trace) for a bounded time and print how many inputs were tried.
#
#   bench/fuzz_trace.sh [SECONDS_PER_TARGET] [TARGET...]      (default 60 s; reader decode analyze)
#   make fuzz FUZZ_SECONDS=300
#
# Targets (crates/trace/fuzz/fuzz_targets/): `reader` = capture reader + decoder on every record,
# `decode` = link/IP/TCP decoder alone, `analyze` = the whole analyzer (analyze_bytes).
# Engine: cargo-fuzz + libFuzzer, with AddressSanitizer on nightly. Needs a nightly toolchain
# (`rustup toolchain list`); if none can be installed, the script falls back to the stable
# compiler with RUSTC_BOOTSTRAP=1 and no sanitizer (`-s none`): libFuzzer's coverage guidance
# still works (it uses stable -C flags), only ASan's extra checks are lost (verified: the
# `reader` target builds and runs that way with cargo-fuzz 0.13.2 on Rust 1.95).
#
# Seed corpus: the real-Linux-TCP scenario captures (python/tcpvideo/linux_scenarios.py, needs
# root and network namespaces), cut to their first 64 kB and converted to pcapng, nanosecond
# pcap and gzip so every reader path starts covered. Generated into bench/out/fuzz/ (git-ignored),
# never committed. Without root the fuzzer starts from a minimal pcap header.
# Crashes land in bench/out/fuzz/artifacts/TARGET/; reproduce one with
#   cargo +nightly fuzz run --fuzz-dir crates/trace/fuzz TARGET bench/out/fuzz/artifacts/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(reader decode analyze)
OUT=$ROOT/bench/out/fuzz
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/fuzz}
mkdir -p "$OUT"

# --- toolchain --------------------------------------------------------------------------------
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io)..." >&2
  cargo install cargo-fuzz --locked
fi
TOOLCHAIN=()
# AddressSanitizer by default: the reader and the sharded runner extend buffer lifetimes with
# `unsafe` (reader/mod.rs, shard.rs), exactly what ASan checks. FUZZ_SANITIZER=none runs ~10x
# more inputs per second (measured on `reader`: ~1300/s vs ~110/s on this machine).
SANITIZER=(-s "${FUZZ_SANITIZER:-address}")
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  TOOLCHAIN=(+nightly)
elif rustup toolchain install nightly --profile minimal >/dev/null 2>&1; then
  TOOLCHAIN=(+nightly)
else
  echo "no nightly toolchain: stable with RUSTC_BOOTSTRAP=1, no sanitizer" >&2
  export RUSTC_BOOTSTRAP=1
  SANITIZER=(-s none)
fi

# --- seed corpus ------------------------------------------------------------------------------
SEEDS=$OUT/seeds
if [ ! -d "$SEEDS" ] || [ -z "$(ls -A "$SEEDS" 2>/dev/null)" ]; then
  mkdir -p "$SEEDS" "$OUT/scenarios"
  if [ "$(id -u)" = 0 ] && command -v dumpcap >/dev/null; then
    python3 python/tcpvideo/linux_scenarios.py generate "$OUT/scenarios" >&2 || true
  fi
  python3 - "$OUT/scenarios" "$SEEDS" <<'EOF'
import gzip, pathlib, struct, subprocess, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
LIMIT = 64 * 1024
for p in sorted(src.glob("*.pcap")):
    b = p.read_bytes()
    sw = b[:4] == b"\xd4\xc3\xb2\xa1"
    end = 24
    while end + 16 <= len(b):                     # whole records up to LIMIT bytes
        incl = struct.unpack_from("<I" if sw else ">I", b, end + 8)[0]
        if end + 16 + incl > LIMIT:
            break
        end += 16 + incl
    cut = dst / f"{p.stem}.pcap"
    cut.write_bytes(b[:end])
    (dst / f"{p.stem}.pcap.gz").write_bytes(gzip.compress(b[:end]))
    (dst / f"{p.stem}.truncated.pcap").write_bytes(b[:end + 40])  # ends inside a record
    for fmt, ext in (("pcapng", "pcapng"), ("nsecpcap", "ns.pcap")):
        subprocess.run(["editcap", "-F", fmt, str(cut), str(dst / f"{p.stem}.{ext}")],
                       capture_output=True)
# Always: an empty Ethernet pcap (file header only), so the fuzzer has a valid start.
(dst / "header_only.pcap").write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
EOF
fi
echo "seed corpus: $(ls "$SEEDS" | wc -l) files, $(du -sh "$SEEDS" | cut -f1)" >&2

# --- run --------------------------------------------------------------------------------------
FUZZ_DIR=crates/trace/fuzz
total=0
for t in "${TARGETS[@]}"; do
  corpus=$OUT/corpus/$t
  mkdir -p "$corpus" "$OUT/artifacts/$t"
  log=$OUT/$t.log
  echo "fuzzing $t for ${SECS}s..." >&2
  set +e
  cargo "${TOOLCHAIN[@]}" fuzz run --fuzz-dir "$FUZZ_DIR" "${SANITIZER[@]}" -O "$t" \
    "$corpus" "$SEEDS" -- \
    -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t/" >"$log" 2>&1
  rc=$?
  set -e
  n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  n=${n:-0}
  total=$((total + n))
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "FAILED: $t (exit $rc) after $n inputs; see $log and $OUT/artifacts/$t/" >&2
    grep -m5 -E 'panicked|ERROR|SUMMARY' "$log" >&2 || true
    echo "inputs tried: $total"
    exit 1
  fi
  echo "$t: $n inputs tried, $cov, corpus $(ls "$corpus" | wc -l) files"
done
echo "inputs tried: $total"
