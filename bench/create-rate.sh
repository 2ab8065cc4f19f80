#!/usr/bin/env bash
# Compares the create rate of two or more `keelson` binaries, alternated in one run so that the
# machine's drift falls on each of them alike: each round starts every binary in turn on a fresh
# data directory (`keelson up --no-controllers`), warms it up, then has wrk (Debian package
# `wrk`) create Agents from 16 connections (`bench/create-agents.lua`), and prints the rate of
# each and its ratio to the first binary's in the same round.
#
#   bench/create-rate.sh BINARY BINARY...    (ROUNDS, default 3; SECONDS_PER_RUN, default 10)
#
# CPU time per create moves by ±20 % from one run to the next on the 2-core build machine, so
# a difference of a few percent needs more rounds than the default, or
# bench/create-instructions.sh, which counts instructions instead.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
binaries=("$@")
[ ${#binaries[@]} -ge 2 ] || { echo "usage: $0 BINARY BINARY..." >&2; exit 2; }
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_RUN:-10}

for tool in wrk curl bc; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian packages wrk, curl, bc)" >&2; exit 1; }
done

# shellcheck source=server.sh
. "$here/server.sh"

# Prints the creates per second of one binary.
creates_per_second() { # binary run-name
  start_server "$2" "$1"
  local report
  report=$(create "$seconds" measured)
  check_created "$report"
  stop_server
  rm -rf "$data"
  awk '/Requests\/sec/ {print $2}' <<<"$report"
}

for round in $(seq "$rounds"); do
  first=
  for i in "${!binaries[@]}"; do
    rate=$(creates_per_second "${binaries[$i]}" "round$round-$i")
    if [ -z "$first" ]; then
      first=$rate
      printf 'round %d  %-50s %9.0f creates/s\n' "$round" "${binaries[$i]}" "$rate"
    else
      printf 'round %d  %-50s %9.0f creates/s, ratio to the first %.2f\n' "$round" \
        "${binaries[$i]}" "$rate" "$(echo "$rate / $first" | bc -l)"
    fi
  done
done
