#!/usr/bin/env bash
# Shows where the CPU of a create goes, for one or more `keelson` binaries alternated in one
# run: each round starts every binary in turn on a fresh data directory (`keelson up
# --no-controllers`), warms it up, has wrk (Debian package `wrk`) create Agents from 16
# connections (`bench/create-agents.lua`), and reads around the measured run
#
# - the CPU time of the store's writer thread and of the server's other threads, per create,
#   from /proc/<pid>/task/*/stat;
# - wrk's CPU time per create (from its /proc/<pid>/stat just before it exits);
# - how busy the cores were: all of that CPU time over the cores times the run's length;
# - the writes the store committed per SQLite transaction (`keelson_store_writes_total` over
#   `keelson_store_transactions_total` from /metrics);
# - wrk's 99th percentile and longest create latency.
#
#   bench/create-cpu.sh BINARY...    (ROUNDS, default 3; SECONDS_PER_RUN, default 10)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
binaries=("$@")
[ ${#binaries[@]} -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_RUN:-10}
ticks=$(getconf CLK_TCK)
cores=$(nproc)

for tool in wrk curl bc pgrep; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian packages wrk, curl, bc, procps)" >&2; exit 1; }
done

# shellcheck source=server.sh
. "$here/server.sh"

# Clock ticks of user + system time of a /proc stat file (fields 14 and 15, counted from the
# first after the parenthesised command name so that a name with spaces cannot shift them).
stat_ticks() { # stat-file
  sed 's/.*) //' "$1" | awk '{print $12 + $13}'
}

# Prints "<writer ticks> <other ticks>" of the server's threads.
server_ticks() {
  local writer=0 other=0 task t
  for task in /proc/"$server_pid"/task/*; do
    t=$(stat_ticks "$task/stat" 2>/dev/null) || continue
    if [ "$(cat "$task/comm" 2>/dev/null)" = keelson-store-w ]; then
      writer=$((writer + t))
    else
      other=$((other + t))
    fi
  done
  echo "$writer $other"
}

# Prints one store counter from /metrics.
counter() { # series
  curl -sk -H "Authorization: Bearer $token" "$server/metrics" | awk -v s="$1" '$1 == s {print $2}'
}

# Measures one binary and prints its line.
measure() { # binary run-name round
  local binary=$1
  start_server "$2" "$binary"

  local writes0 txns0 before started report wrk_pid wrk_ticks=0 after elapsed
  writes0=$(counter keelson_store_writes_total)
  txns0=$(counter keelson_store_transactions_total)
  before=$(server_ticks)
  started=$(date +%s.%N)
  create "$seconds" measured >"$work/$2.wrk" &
  local shell_pid=$!
  until wrk_pid=$(pgrep -P "$shell_pid" -x wrk); do sleep 0.01; done
  # wrk's own CPU time, read just before it exits (a waited-for child's is gone).
  while kill -0 "$wrk_pid" 2>/dev/null; do
    wrk_ticks=$(stat_ticks /proc/"$wrk_pid"/stat 2>/dev/null || echo "$wrk_ticks")
    sleep 0.05
  done
  wait "$shell_pid"
  after=$(server_ticks)
  elapsed=$(echo "$(date +%s.%N) - $started" | bc -l)
  report=$(cat "$work/$2.wrk")
  check_created "$report"
  local writes txns rate
  writes=$(($(counter keelson_store_writes_total) - writes0))
  txns=$(($(counter keelson_store_transactions_total) - txns0))
  rate=$(awk '/Requests\/sec/ {print $2}' <<<"$report")
  local p99 max
  p99=$(awk '$1 == "99%" {print $2}' <<<"$report")
  max=$(awk '$1 == "Latency" {print $4}' <<<"$report")
  stop_server
  rm -rf "$data"
  awk -v round="$3" -v bin="$binary" -v rate="$rate" -v b="$before" -v a="$after" \
    -v wrk="$wrk_ticks" -v writes="$writes" -v txns="$txns" -v hz="$ticks" \
    -v cores="$cores" -v elapsed="$elapsed" -v p99="$p99" -v max="$max" 'BEGIN {
      split(b, b0, " "); split(a, a1, " ")
      us = 1e6 / hz / writes
      writer = (a1[1] - b0[1]) * us; other = (a1[2] - b0[2]) * us; client = wrk * us
      busy = (a1[1] - b0[1] + a1[2] - b0[2] + wrk) / hz / (cores * elapsed)
      printf "round %d  %-40s %7.0f creates/s  writer %5.1f µs  other threads %5.1f µs  wrk %5.1f µs per create  cores %3.0f%% busy  %4.1f writes per transaction  p99 %s  max %s\n",
        round, bin, rate, writer, other, client, 100 * busy, writes / txns, p99, max
    }'
}

for round in $(seq "$rounds"); do
  for i in "${!binaries[@]}"; do
    measure "${binaries[$i]}" "round$round-$i" "$round"
  done
done
