#!/usr/bin/env bash
# Install tcpvideo the way a newcomer does, N times in a row, and count how many worked.
#
# Each attempt: a fresh `git clone` of this repository's HEAD into a new temporary folder, a new
# virtualenv with the pip that ships with this Python (no upgrade), no shared Cargo target
# directory (each clone compiles the Rust from scratch, as a user's first install does), then
# README.md's first set-up command exactly as written (install + `tcpvideo demo`) on the
# pristine clone; then `pip wheel` rebuilds the wheel (reusing that clone's target/) so every
# member, not only the dist-info pip reads, gets a CRC check. An attempt passes when the command
# exits 0, the demo printed its summary line, and the wheel's members all pass. Why: issue 8, an intermittent "Bad CRC-32" on a wheel member
# (docs/dev/install.md).
#
#   bash scripts/fresh_installs.sh [N]      # default N = 5; prints "N passed, M failed"
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
attempts=${1:-5}
python=${PYTHON:-python3}
readme_cmd=$(bash scripts/readme_command.sh demo) || exit 2
work=$(mktemp -d /tmp/tcpvideo-fresh.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
start=$(date +%s)
for i in $(seq 1 "$attempts"); do
  dir="$work/$i"
  t0=$(date +%s)
  git clone -q "$repo" "$dir/src"
  "$python" -m venv "$dir/venv"
  log="$dir/log.txt"
  # A fresh shell with only the venv activated; CARGO_TARGET_DIR unset so nothing is shared.
  (cd "$dir/src" && env -u CARGO_TARGET_DIR -u VIRTUAL_ENV bash -c \
     ". '$dir/venv/bin/activate' && $readme_cmd && pip wheel -q --no-deps . -w '$dir/wheel'") \
     >"$log" 2>&1
  rc=$?
  why=""
  [ $rc -eq 0 ] || why="exit $rc"
  [ -n "$why" ] || grep -q "^demo seed" "$log" || why="no demo summary line"
  if [ -z "$why" ]; then
    "$dir/venv/bin/python" - "$dir/wheel" <<'PY' >>"$log" 2>&1 || why="bad wheel member"
import glob, sys, zipfile
for w in glob.glob(sys.argv[1] + "/*.whl"):
    bad = zipfile.ZipFile(w).testzip()
    if bad:
        sys.exit(f"{w}: bad CRC in {bad}")
PY
  fi
  t1=$(date +%s)
  if [ -z "$why" ]; then
    passed=$((passed + 1)); echo "attempt $i: passed ($((t1 - t0)) s)"
  else
    failed=$((failed + 1)); echo "attempt $i: FAILED ($why, $((t1 - t0)) s); last lines:"
    tail -n 15 "$log" | sed 's/^/    /'
  fi
  rm -rf "$dir"
done
echo "$passed passed, $failed failed ($(( $(date +%s) - start )) s in all)"
[ $failed -eq 0 ]
