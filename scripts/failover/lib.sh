# shellcheck shell=bash
# Helpers shared by scripts/failover/*: sourced, not run. They keep every wait bounded and every failure explicit,
# so that a topology that does not come up says what it was waiting for and where its logs are.

# fail MESSAGE: print to stderr and exit 1.
fail() { echo "failover: error: $*" >&2; exit 1; }
say() { echo "failover: $*" >&2; }

# now: seconds since the epoch with milliseconds, for measuring outages.
now() { date +%s.%3N; }
# elapsed START [END]: END (or now) minus START, in seconds with 3 decimals.
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.3f", b - a }'; }

# wait_for SECONDS DESCRIPTION COMMAND...: run COMMAND every 0.2 s until it succeeds; after SECONDS fail, naming
# DESCRIPTION and the last output of COMMAND. This is the only way the scripts wait for an event. With WAIT_PID set,
# fail at once if that process has exited (a server that refused its flags is not worth waiting 90 s for).
wait_for() {
    local limit="$1" what="$2"; shift 2
    local deadline; deadline=$(( $(date +%s) + limit ))
    local out
    while true; do
        if out="$("$@" 2>&1)"; then return 0; fi
        if [ -n "${WAIT_PID:-}" ] && ! kill -0 "$WAIT_PID" 2>/dev/null; then
            fail "process $WAIT_PID exited while waiting for: $what"
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            fail "timed out after ${limit}s waiting for: $what (last output: ${out:0:400})"
        fi
        sleep 0.2
    done
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, one per line (all bound at once, then released).
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print("\n".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
}

# as_pg_prefix: the words that run a command as the PostgreSQL user (PostgreSQL refuses to run as root), by exec, so
# that the PID of `setsid "${prefix[@]}" CMD &` is CMD's own; empty when not root.
as_pg_prefix() {
    if [ "$(id -u)" = 0 ]; then
        echo setpriv "--reuid=$PG_USER" "--regid=$PG_USER" --init-groups env "HOME=$FAILOVER_DIR"
    fi
}

# start_patroni NAME: start node NAME's Patroni (which starts its PostgreSQL) in the background; prints its PID.
start_patroni() {
    local dir="$FAILOVER_DIR/$1"
    local prefix; read -r -a prefix <<< "$(as_pg_prefix)"
    setsid "${prefix[@]}" patroni "$dir/patroni.yml" >>"$dir/patroni.log" 2>&1 < /dev/null &
    echo $!
}

# load_topology DIR: source DIR/env, written by `up`.
load_topology() {
    local dir="${1:-}"
    [ -n "$dir" ] || fail "usage: $(basename "$0") DIR (the folder given to or printed by scripts/failover/up)"
    [ -f "$dir/env" ] || fail "$dir/env not found: is $dir a topology started by scripts/failover/up?"
    # shellcheck disable=SC1091
    . "$dir/env"
}

# patroni_get PATH: GET PATH from the first Patroni REST API that answers (any node's /cluster tells the whole
# cluster).
patroni_get() {
    local p
    for p in $PG1_REST_PORT $PG2_REST_PORT $PG3_REST_PORT; do
        if curl -fsS --max-time 2 "http://127.0.0.1:$p$1" 2>/dev/null; then return 0; fi
    done
    return 1
}

# cluster_leader: name of the member whose role is leader, with PostgreSQL running (fails if none).
cluster_leader() {
    patroni_get /cluster | jq -er '.members[] | select(.role == "leader" and .state == "running") | .name'
}
# cluster_sync_standby: name of the synchronous standby (fails if none).
cluster_sync_standby() {
    patroni_get /cluster | jq -er '.members[] | select(.role == "sync_standby") | .name' | head -1 | grep .
}

# node_port NAME / node_dir NAME: PostgreSQL port and folder of node pg1|pg2|pg3.
node_port() { local v="${1^^}_PORT"; echo "${!v}"; }
node_dir() { echo "$FAILOVER_DIR/$1"; }

# psql_at PORT SQL: run SQL as postgres on 127.0.0.1:PORT (database postgres), tuples only, failing fast.
psql_at() {
    PGCONNECT_TIMEOUT=2 PGOPTIONS="-c statement_timeout=3000" \
        psql "host=127.0.0.1 port=$1 user=postgres dbname=postgres" -XAtqc "$2"
}

# probe_write: one INSERT into the scratch table through HAProxy's primary port.
probe_write() {
    psql_at "$HAPROXY_PRIMARY_PORT" "INSERT INTO failover_probe (note) VALUES ('probe') RETURNING id"
}

# cluster_healthy: a leader, and two replicas streaming from it, one of them synchronous; HAProxy's both ports answer.
cluster_healthy() {
    local leader port
    leader="$(cluster_leader)" || return 1
    port="$(node_port "$leader")"
    [ "$(psql_at "$port" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 2 ] || return 1
    [ "$(psql_at "$port" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] || return 1
    cluster_sync_standby >/dev/null || return 1
    [ "$(psql_at "$HAPROXY_PRIMARY_PORT" "SELECT pg_is_in_recovery()")" = f ] || return 1
    [ "$(psql_at "$HAPROXY_REPLICA_PORT" "SELECT pg_is_in_recovery()")" = t ] || return 1
}

# psql_prober LOG STOPFILE: INSERT through HAProxy's primary port every 50 ms until STOPFILE exists (at most 300 s);
# each attempt is a line of LOG: "start end ok SERVER_PORT" or "start end err FIRST_LINE_OF_ERROR".
psql_prober() {
    local log="$1" stop="$2" deadline=$(( $(date +%s) + 300 )) a out
    while [ ! -e "$stop" ] && [ "$(date +%s)" -lt "$deadline" ]; do
        a="$(now)"
        if out="$(psql_at "$HAPROXY_PRIMARY_PORT" \
                "INSERT INTO failover_probe (note) VALUES ('probe') RETURNING inet_server_port()" 2>&1)"; then
            echo "$a $(now) ok $out"
        else
            echo "$a $(now) err $(echo "$out" | head -1 | tr -s ' \t' ' ' | cut -c1-150)"
        fi >> "$log"
        sleep 0.05
    done
}

# measure_event LABEL COMMAND...: the whole measurement around one event (a kill, a switchover). With the cluster
# healthy, it starts the write probes (psql INSERTs through HAProxy's primary port; PUTs and delta reads on both
# servers through probe.py), waits until both write, notes the time and runs COMMAND, then waits (bounded) for an
# INSERT committed on a new leader and for both servers to write again; it stops the probes, reports what was
# answered meanwhile and the servers' warnings and errors, waits for the old leader to rejoin as a streaming replica,
# and checks that every write the servers acknowledged is still there. Sets OLD_LEADER, NEW_LEADER.
measure_event() {
    local label="$1"; shift
    wait_for 120 "a healthy cluster before the event" cluster_healthy
    OLD_LEADER="$(cluster_leader)"
    local old_port; old_port="$(node_port "$OLD_LEADER")"
    local stop="$FAILOVER_DIR/probe-$label.stop" psql_log="$FAILOVER_DIR/psql-$label.log" rc=0
    rm -f "$stop"
    local lines1 lines2   # read through ${!lines} below
    # shellcheck disable=SC2034
    lines1=$(wc -l < "$FAILOVER_DIR/syncapi1.log")
    # shellcheck disable=SC2034
    lines2=$(wc -l < "$FAILOVER_DIR/syncapi2.log")
    psql_prober "$psql_log" "$stop" &
    local psql_pid=$!
    python3 "$HERE/probe.py" run "$FAILOVER_DIR" "$label" &
    local probe_pid=$!
    local t_start; t_start="$(now)"
    wait_for 60 "the probes writing through both servers and HAProxy's primary port" \
        sh -c "python3 '$HERE/probe.py' recovered '$FAILOVER_DIR' '$label' '$t_start' && grep -q ' ok ' '$psql_log'"

    say "event: $* (leader $OLD_LEADER)"
    T_EVENT="$(now)"
    "$@"
    say "waiting for a write committed on a new leader through HAProxy's primary port"
    # A write on a new leader: on another node, or on the same one after a failed INSERT (primary_start_timeout > 0
    # restarts a crashed primary in place).
    # shellcheck disable=SC2016  # an awk program
    local back='$1 >= t && $3 == "err" { e = 1 } $1 >= t && $3 == "ok" && ($4 != p || e) { print $2; exit }'
    wait_for 120 "an INSERT committed on a new leader through port $HAPROXY_PRIMARY_PORT (log: $psql_log)" \
        sh -c "awk -v t='$T_EVENT' -v p='$old_port' '$back' '$psql_log' | grep -q ."
    NEW_LEADER="$(cluster_leader || echo '?')"
    local t_new
    t_new="$(awk -v t="$T_EVENT" -v p="$old_port" "$back" "$psql_log")"
    wait_for 120 "both servers writing again (log: $FAILOVER_DIR/probe-$label.jsonl)" \
        python3 "$HERE/probe.py" recovered "$FAILOVER_DIR" "$label" "$t_new"
    touch "$stop"
    wait "$psql_pid" "$probe_pid" || true

    echo "== $label: $* ($OLD_LEADER -> $NEW_LEADER)"
    python3 "$HERE/probe.py" psql-report "$psql_log" "$T_EVENT" "$old_port" || rc=1
    python3 "$HERE/probe.py" report "$FAILOVER_DIR" "$label" "$T_EVENT" || rc=1
    local n
    for n in 1 2; do
        local lines="lines$n" new
        new="$(tail -n +"$(( ${!lines} + 1 ))" "$FAILOVER_DIR/syncapi$n.log" | grep -E '^[0-9-]+T[^ ]+ (warning|error|critical) ' || true)"
        if [ -n "$new" ]; then
            echo "server $n: $(echo "$new" | wc -l) warnings or errors logged meanwhile; the first ones:"
            echo "$new" | head -8 | cut -c1-300 | sed 's/^/    /'
        else
            echo "server $n: no warning or error logged meanwhile"
        fi
        kill -0 "$(v=SYNCAPI${n}_PID; echo "${!v}")" 2>/dev/null || { echo "server $n: FINDING: the process is gone"; rc=1; }
    done
    # A node whose host was "lost" comes back now (kill-leader --host).
    if [ -n "${AFTER_RECOVERY:-}" ]; then "$AFTER_RECOVERY"; fi
    say "waiting for $OLD_LEADER to rejoin as a streaming replica"
    wait_for 240 "the cluster healthy again, $OLD_LEADER streaming (log: $FAILOVER_DIR/$OLD_LEADER/patroni.log)" cluster_healthy
    echo "cluster: healthy again $(elapsed "$T_EVENT") s after the event (leader $(cluster_leader), synchronous standby $(cluster_sync_standby))"
    python3 "$HERE/probe.py" verify "$FAILOVER_DIR" "$label" || rc=1
    return "$rc"
}
