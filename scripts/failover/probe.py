#!/usr/bin/env python3
"""What the two syncapi servers of a failover topology answer while its primary goes away (issue 56).

Used by scripts/failover/kill-leader and switchover; standard library only.

  probe.py run DIR LABEL      until DIR/probe-LABEL.stop exists (at most 300 s): on each server, one thread PUTs
                              contacts (ids LABEL-sN-I) and one reads the delta (GET /ctcsync?date=) one after the
                              other, every 50 ms; every answer is a line of DIR/probe-LABEL.jsonl
  probe.py report DIR LABEL T each server's write outage around T (epoch seconds: the kill or the switchover), what
                              it answered within it (status codes, Retry-After), any 5xx but 503 or lost connection
  probe.py verify DIR LABEL   every write answered 200 is in the family's list (read once the cluster is back)
  probe.py recovered DIR LABEL T      exit 0 once each server has answered 200 to a write started after T
  probe.py psql-report LOG T OLDPORT  the psql INSERT loop's log (lines "start end ok PORT" or "start end err MSG"):
                              the time from T to the first INSERT committed on another node than OLDPORT (or on
                              it after a failed one: a primary restarted in place), the
                              longest gap between two committed INSERTs, and the errors seen in between

The account is made once per topology (DIR/probe-account.json), by signup on server 1.
"""
import collections
import http.client
import json
import os
import shlex
import sys
import threading
import time

MAX_SECONDS = 300


def load_env(folder):
    env = {}
    with open(os.path.join(folder, "env")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                env[key] = (shlex.split(value) or [""])[0]
    return env


def request(port, method, path, token=None, body=None, timeout=20.0):
    """One request; returns (status or None, headers dict, body text, error text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = "Bearer " + token
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text, None
    except Exception as e:  # a refused or reset connection is an answer too: record it
        return None, {}, "", f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def account(folder, env):
    path = os.path.join(folder, "probe-account.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)["token"]
    port = int(env["SYNCAPI1_PORT"])
    deadline = time.time() + 60
    while True:
        status, _, text, err = request(port, "POST", "/api/v1/signup",
                                       body={"family": "Failover", "username": "probe", "password": "correct horse"})
        if status == 201:
            with open(path, "w") as f:
                f.write(text)
            return json.loads(text)["token"]
        if time.time() > deadline:
            sys.exit(f"probe: signup failed: {status} {text or err}")
        time.sleep(0.5)


def run(folder, label):
    env = load_env(folder)
    token = account(folder, env)
    out_path = os.path.join(folder, f"probe-{label}.jsonl")
    stop_path = os.path.join(folder, f"probe-{label}.stop")
    lock = threading.Lock()
    out = open(out_path, "a", buffering=1)
    started = time.time()

    def record(entry):
        with lock:
            out.write(json.dumps(entry) + "\n")

    def should_stop():
        return os.path.exists(stop_path) or time.time() - started > MAX_SECONDS

    def entry(server, kind, path, t0, status, headers, text, err):
        e = {"server": server, "kind": kind, "path": path, "t0": round(t0, 3), "t1": round(time.time(), 3),
             "status": status}
        if headers.get("retry-after"):
            e["retry_after"] = headers["retry-after"]
        if status != 200:
            e["body"] = text[:300]
        if err:
            e["error"] = err
        return e

    def writer(server, port):
        i = 0
        while not should_stop():
            i += 1
            item = f"{label}-s{server}-{i}"
            path = f"/api/v1/contacts/{item}"
            t0 = time.time()
            status, headers, text, err = request(port, "PUT", path, token,
                                                 {"firstName": "probe", "lastName": f"{label} {server} {i}"})
            e = entry(server, "write", path, t0, status, headers, text, err)
            e["id"] = item
            record(e)
            time.sleep(0.05)

    def reader(server, port):
        date = None
        while not should_stop():
            path = "/api/v1/ctcsync" + (f"?date={date}" if date else "")
            t0 = time.time()
            status, headers, text, err = request(port, "GET", path, token)
            record(entry(server, "read", path, t0, status, headers, text, err))
            if status == 200:
                date = json.loads(text)["date"]
            time.sleep(0.05)

    threads = []
    for server in (1, 2):
        port = int(env[f"SYNCAPI{server}_PORT"])
        for fn in (writer, reader):
            t = threading.Thread(target=fn, args=(server, port), daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join()


def read_log(folder, label):
    with open(os.path.join(folder, f"probe-{label}.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def report(folder, label, event):
    """A server's write outage is the longest gap between two of its writes answered 200 (the probe runs a short
    while around the event, writing every 50 ms or so: outside an outage the gaps are tens of milliseconds)."""
    entries = read_log(folder, label)
    worst = 0
    for server in (1, 2):
        mine = [e for e in entries if e["server"] == server]
        oks = sorted((e for e in mine if e["kind"] == "write" and e["status"] == 200), key=lambda e: e["t1"])
        if not any(e["t0"] >= event for e in oks):
            print(f"server {server}: FINDING: no write answered 200 after the event")
            worst = 1
            continue
        gap, start, end = 0.0, event, event
        for a, b in zip(oks, oks[1:]):
            if b["t1"] - a["t1"] > gap:
                gap, start, end = b["t1"] - a["t1"], a["t1"], b["t1"]
        window = [e for e in mine if e["t1"] > start and e["t0"] < end]
        counts = collections.Counter((e["kind"], e["status"] if e["status"] is not None else e.get("error", "?")[:40])
                                     for e in window)
        retry_after = sorted({e["retry_after"] for e in window if "retry_after" in e})
        slowest = max((e["t1"] - e["t0"] for e in window), default=0)
        print(f"server {server}: write outage {gap:.2f} s (longest gap between two writes answered 200: from"
              f" {start - event:+.2f} s to {end - event:+.2f} s after the event)")
        print(f"server {server}: answers within it: " +
              ", ".join(f"{k[0]} {k[1]}: {n}" for k, n in sorted(counts.items(), key=lambda kv: str(kv[0]))) +
              f"; Retry-After seen: {', '.join(retry_after) or 'none'}; slowest answer {slowest:.2f} s")
        bad = [e for e in mine if e["status"] is None or (e["status"] >= 500 and e["status"] != 503)
               or (e["status"] == 503 and "retry_after" not in e)]
        for e in bad[:10]:
            worst = 1
            print(f"server {server}: FINDING: {e['kind']} {e['path']} at {time.strftime('%H:%M:%S', time.gmtime(e['t0']))}"
                  f".{int(e['t0'] * 1000) % 1000:03d}: {e['status']} {e.get('error', '')} {e.get('body', '')[:200]}")
        if len(bad) > 10:
            print(f"server {server}: ... {len(bad) - 10} more such answers")
    return worst


def verify(folder, label):
    env = load_env(folder)
    token = account(folder, env)
    entries = read_log(folder, label)
    acknowledged = {e["id"] for e in entries if e["kind"] == "write" and e["status"] == 200}
    unanswered = {e["id"] for e in entries if e["kind"] == "write" and e["status"] != 200}
    deadline = time.time() + 60
    while True:
        status, _, text, err = request(int(env["SYNCAPI1_PORT"]), "GET", "/api/v1/ctcsync", token, timeout=30)
        if status == 200:
            break
        if time.time() > deadline:
            sys.exit(f"probe: cannot read the list back: {status} {text or err}")
        time.sleep(0.5)
    present = {item["id"] for item in json.loads(text)["updated"]}
    missing = sorted(acknowledged - present)
    committed_anyway = len(unanswered & present)
    print(f"verify: {len(acknowledged)} writes answered 200, {len(acknowledged) - len(missing)} of them in the list"
          f" after the failover; {len(unanswered)} writes not answered 200, {committed_anyway} of which committed anyway")
    if missing:
        print(f"verify: FINDING: {len(missing)} acknowledged writes lost: {', '.join(missing[:20])}")
        return 1
    return 0


def recovered(folder, label, event):
    entries = read_log(folder, label)
    for server in (1, 2):
        if not any(e["server"] == server and e["kind"] == "write" and e["t0"] >= event and e["status"] == 200
                   for e in entries):
            return 1
    return 0


def psql_report(log, event, old_port):
    rows = []
    with open(log) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if len(parts) >= 3:
                rows.append((float(parts[0]), float(parts[1]), parts[2], parts[3] if len(parts) > 3 else ""))
    oks = [r for r in rows if r[2] == "ok"]
    first_err = next((r[0] for r in rows if r[2] == "err" and r[0] >= event), None)
    first_new = next((r for r in oks if r[0] >= event and (r[3].strip() != old_port
                                                         or (first_err is not None and r[0] > first_err))), None)
    if not first_new:
        print("psql: FINDING: no INSERT committed on a new leader through HAProxy's primary port")
        return 1
    last_before = max((r[1] for r in oks if r[1] <= event), default=event)
    gap, gap_end = 0.0, None
    for a, b in zip(oks, oks[1:]):
        if b[1] - a[1] > gap:
            gap, gap_end = b[1] - a[1], b
    errors = collections.Counter(r[3][:120] for r in rows if r[2] == "err" and event <= r[0] <= first_new[1])
    where = "the new leader" if first_new[3].strip() != old_port else "the same node, restarted"
    print(f"psql: first INSERT committed through HAProxy's primary port on {where} (port {first_new[3].strip()})"
          f" {first_new[1] - event:.2f} s after the event; last one before the event {event - last_before:.2f} s"
          f" before it; longest gap between two committed INSERTs {gap:.2f} s")
    print(f"psql: {len(oks)} INSERTs committed, {sum(1 for r in rows if r[2] == 'err')} failed; errors: " +
          ("; ".join(f"{n}× {msg}" for msg, n in errors.most_common(5)) or "none"))
    return 0


def main(argv):
    if len(argv) >= 4 and argv[0] == "psql-report":
        return psql_report(argv[1], float(argv[2]), argv[3])
    if len(argv) < 3 or argv[0] not in ("run", "report", "verify", "recovered"):
        sys.exit(__doc__)
    cmd, folder, label = argv[0], argv[1], argv[2]
    if cmd == "recovered":
        return recovered(folder, label, float(argv[3]))
    if cmd == "run":
        run(folder, label)
        return 0
    if cmd == "report":
        return report(folder, label, float(argv[3]))
    return verify(folder, label)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
