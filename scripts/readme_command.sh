#!/usr/bin/env bash
# Print one of README.md's two set-up commands, exactly as written there, so CI and
# scripts/fresh_installs.sh run what a user reads rather than a copy that could drift.
#   bash scripts/readme_command.sh demo    # the install-and-demo command
#   bash scripts/readme_command.sh test    # the test command
# The commands are the indented lines of the "## Set up" section: the first is the demo, the
# second the tests. Anything else there is an error, so the README keeps exactly two.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t cmds < <(awk '/^## /{s=($0=="## Set up")} s && /^    [^ ]/{sub(/^    /,""); print}' README.md)
if [ ${#cmds[@]} -ne 2 ]; then
  echo "README.md's '## Set up' section must hold exactly two indented commands, found ${#cmds[@]}" >&2
  exit 2
fi
case "${1:-}" in
  demo) echo "${cmds[0]}" ;;
  test) echo "${cmds[1]}" ;;
  *) echo "usage: readme_command.sh demo|test" >&2; exit 2 ;;
esac
