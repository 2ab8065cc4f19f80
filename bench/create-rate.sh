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

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -INT "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Prints the creates per second of one binary.
creates_per_second() { # binary run-name
  local binary=$1 data="$work/$2"
  mkdir -p "$data"
  "$binary" up --no-controllers --bind 127.0.0.1:0 --data-dir "$data" >"$work/$2.log" 2>&1 &
  server_pid=$!
  local server=
  for _ in $(seq 300); do
    server=$(awk '/server:/ {print $2}' "$data/kubeconfig" 2>/dev/null || true)
    [ -n "$server" ] && curl -skf --max-time 2 "$server/readyz" >/dev/null 2>&1 && break
    server=
    sleep 0.2
  done
  [ -n "$server" ] || { echo "$binary did not become ready; its log:" >&2; cat "$work/$2.log" >&2; exit 1; }
  local token url report
  token=$(awk '/token:/ {print $2}' "$data/kubeconfig")
  url="$server/apis/workflows.keelson.dev/v1alpha1/namespaces/default/agents"
  create() { # seconds name-prefix
    wrk -t2 -c16 -d"$1s" -H "Authorization: Bearer $token" -s "$here/create-agents.lua" "$url" -- "$2"
  }
  create 3 warm >/dev/null
  report=$(create "$seconds" measured)
  if grep -q Non-2xx <<<"$report"; then
    echo "some creates failed: $report" >&2
    exit 1
  fi
  kill -INT "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
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
