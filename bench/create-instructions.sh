#!/usr/bin/env bash
# Counts the instructions the API server executes per create, under valgrind's callgrind, for
# one or more `keelson` binaries in the same run (the first is the baseline the others are
# compared with). Instruction counts do not move with the machine's load the way CPU time
# does (±20 % from one run to the next on the 2-core build machine), so two builds can be
# compared with a few thousand creates instead of many alternated timed runs.
#
#   bench/create-instructions.sh [BINARY...]    (default: the release build)
#
# Each binary runs `keelson up --no-controllers` on a fresh data directory and a free port;
# after a warm-up, wrk (Debian package `wrk`) creates Agents from 16 connections for a short
# and for a long run, and the difference of the server's instructions in the two runs is
# divided by the difference of the creates that got a 201. The count covers every thread of
# the server (handlers, store writer), user space only: system calls are not counted.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
target=${CARGO_TARGET_DIR:-$here/../target}
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$target/release/keelson")
seconds=${SECONDS_PER_RUN:-20}

for tool in valgrind callgrind_control callgrind_annotate wrk curl; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian packages valgrind, wrk, curl)" >&2; exit 1; }
done

# shellcheck source=server.sh
. "$here/server.sh"

# Prints the instructions per create of one binary.
instructions_per_create() { # binary run-name
  local binary=$1 run=$2
  start_server "$run" valgrind --tool=callgrind --callgrind-out-file="$work/$run.out" "$binary"
  # Two measured runs, a short and a long one: the difference of their counts leaves out what
  # every run costs whatever its length (16 TLS handshakes, about 5 M instructions each).
  local dumps=0 totals=() counts=()
  for length in $((seconds / 4)) "$seconds"; do
    callgrind_control --zero "$server_pid" >/dev/null 2>&1
    local report
    report=$(create "$length" "run$length")
    callgrind_control --dump "$server_pid" >/dev/null 2>&1
    dumps=$((dumps + 1))
    check_created "$report"
    counts+=("$(awk '/requests in/ {print $1}' <<<"$report")")
    totals+=("$(callgrind_annotate "$work/$run.out.$dumps" 2>/dev/null |
      awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')")
  done
  stop_server
  echo $(((totals[1] - totals[0]) / (counts[1] - counts[0]))) "$((counts[1] - counts[0]))"
}

baseline=
for i in "${!binaries[@]}"; do
  read -r per_create creates < <(instructions_per_create "${binaries[$i]}" "run$i")
  if [ -z "$baseline" ]; then
    baseline=$per_create
    printf '%-60s %9d instructions per create (%d creates)\n' "${binaries[$i]}" "$per_create" "$creates"
  else
    printf '%-60s %9d instructions per create (%d creates), ratio to the first %.3f\n' \
      "${binaries[$i]}" "$per_create" "$creates" "$(echo "$per_create / $baseline" | bc -l)"
  fi
done
