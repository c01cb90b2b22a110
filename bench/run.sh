#!/usr/bin/env bash
# Throughput of the main endpoints, as ratios to GET /health (the plaintext route) of the same release build, measured
# in one run with wrk on loopback. Data: one family with 1,000 contacts and 200 threads of 5 messages (bench/seed.py).
# Usage: bench/run.sh [sqlite|postgres]   (postgres starts a throw-away server with initdb/pg_ctl)
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-sqlite}
duration=${DURATION:-10s}
command -v wrk >/dev/null || { echo "bench: wrk is needed (apt-get install -y wrk)" >&2; exit 1; }
swift build -c release --product syncapi >/dev/null 2>&1
dir=$(mktemp -d /tmp/syncapi-bench-XXXX)
port=$((30000 + RANDOM % 20000))
cleanup() { kill "${server:-0}" 2>/dev/null || true; if [ -n "${pg:-}" ]; then "${as_pg[@]}" pg_ctl -D "$dir/pg" -m immediate stop >/dev/null; fi; rm -rf "$dir"; }
trap cleanup EXIT
if [ "$backend" = postgres ]; then
    as_pg=()
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; as_pg=(runuser -u postgres --); fi
    pgport=$((port + 1))
    "${as_pg[@]}" initdb -D "$dir/pg" -U postgres -A trust --no-sync >/dev/null
    "${as_pg[@]}" pg_ctl -D "$dir/pg" -l "$dir/pg.log" -o "-c listen_addresses=127.0.0.1 -p $pgport -k $dir" -w start >/dev/null
    pg=1
    database="postgres://postgres@127.0.0.1:$pgport/postgres"
else
    database="sqlite:$dir/bench.sqlite"
fi
LOG_LEVEL=warning .build/release/syncapi serve --port "$port" --database "$database" --bcrypt-cost 4 >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
eval "$(python3 bench/seed.py "http://127.0.0.1:$port")"   # sets TOKEN and DATE
run() { # name path
    local rps
    rps=$(wrk -t2 -c32 -d"$duration" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port$2" | awk '/Requests\/sec/ {print $2}')
    echo "$1 $rps"
}
results=$(
    run health /health
    run ctcsync-unchanged "/api/v1/ctcsync?date=$DATE"
    run ctcsync-full-1000 /api/v1/ctcsync
    run msgsyncthread-nb20 "/api/v1/msgsyncthread?nb=20&maxmessages=5"
    run familysync "/api/v1/familysync?date=$DATE"
)
echo "backend=$backend duration=$duration (requests/s, and ratio to /health of the same run)"
base=$(echo "$results" | awk '$1 == "health" {print $2}')
echo "$results" | awk -v base="$base" '{printf "%-22s %10.0f  %6.3f\n", $1, $2, $2 / base}'
