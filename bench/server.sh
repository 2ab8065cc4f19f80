# Sourced by the bench scripts: a work directory removed on exit with the server in it stopped,
# and a `keelson up` waited for and reached. Expects `here` (the bench directory).

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -INT "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Waits until the `keelson up` started as `server_pid` on data directory `data` serves /readyz,
# then sets `server`, `token` and `url` (where Agents are created); exits showing `log` if it
# never does.
wait_ready() { # binary data log
  server=
  for _ in $(seq 600); do
    server=$(awk '/server:/ {print $2}' "$2/kubeconfig" 2>/dev/null || true)
    [ -n "$server" ] && curl -skf --max-time 5 "$server/readyz" >/dev/null 2>&1 && break
    server=
    sleep 0.5
  done
  [ -n "$server" ] || { echo "$1 did not become ready; its log: $3" >&2; cat "$3" >&2; exit 1; }
  token=$(awk '/token:/ {print $2}' "$2/kubeconfig")
  url="$server/apis/workflows.keelson.dev/v1alpha1/namespaces/default/agents"
}

# Starts `<command> up --no-controllers` on a fresh data directory `$work/<run>` (`data`), with
# its log in `$work/<run>.log`, waits until it serves, then warms it up with 3 s of creates.
# `command` is the keelson binary, or a launcher and its arguments followed by it.
start_server() { # run command...
  local run=$1
  shift
  data="$work/$run"
  mkdir -p "$data"
  "$@" up --no-controllers --bind 127.0.0.1:0 --data-dir "$data" >"$work/$run.log" 2>&1 &
  server_pid=$!
  wait_ready "${*: -1}" "$data" "$work/$run.log"
  create 3 warm >/dev/null
}

# Exits showing wrk's `report` if any of its creates failed.
check_created() { # report
  if grep -q Non-2xx <<<"$1"; then
    echo "some creates failed: $1" >&2
    exit 1
  fi
}

# Creates Agents from 16 connections for `seconds`, named after `prefix`; prints wrk's report
# with its latency distribution.
create() { # seconds prefix
  wrk -t2 -c16 -d"$1s" --latency -H "Authorization: Bearer $token" -s "$here/create-agents.lua" "$url" -- "$2"
}

# Stops the server started as `server_pid`.
stop_server() {
  kill -INT "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
