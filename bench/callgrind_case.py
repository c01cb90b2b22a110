"""bench/run --callgrind N: instructions per request, counted by valgrind's callgrind, for each case and each build.

Why: on these shared machines requests per second drift by more than the few per cent a before/after must show (rounds
of the same pair ranged 0.70-1.35); an instruction count does not depend on what else runs. Each build is run under
`valgrind --tool=callgrind` (a copy with its debug info stripped: valgrind 3.19 cannot read Swift's DWARF 5; and
bench/callgrind/sigsuspend.c preloaded: see there), on the same data. Per case: a few requests to warm its caches
and connections, the counters zeroed, then N requests one after another on one keep-alive connection, the same
sequence for every build (families drawn from a fixed seed), and a dump: the dump's total over N is the case's
instructions per request in the server process (PostgreSQL runs its queries in its own processes, not counted), less
the idle server's own work over the same wall time (its rate measured for 2 s right before the case).
"""
import glob, http.client, json, os, random, re, shutil, subprocess, time

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 10

APPSTART = json.dumps({"requests": [
    {"id": "c", "method": "GET", "url": "/api/v1/ctcsync?date={d0}"},
    {"id": "e", "method": "GET", "url": "/api/v1/evtsync?date={d0}"},
    {"id": "p", "method": "GET", "url": "/api/v1/plcsync?date={d0}"},
    {"id": "t", "method": "GET", "url": "/api/v1/msgsyncthread?date={d0}&nb=20"},
    {"id": "w", "method": "GET", "url": "/api/v1/wallsync?date={d0}&nb=20"},
    {"id": "f", "method": "GET", "url": "/api/v1/familysync?date={d0}"}]})


def tools(work, binary, label):
    """The valgrind prefix and the stripped copy of `binary` to run under it (the shim built once per work folder)."""
    shim = os.path.join(work, "sigsuspend.so")
    if not os.path.exists(shim):
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", shim, os.path.join(HERE, "callgrind", "sigsuspend.c")], check=True)
    stripped = os.path.join(work, f"syncapi-stripped{'-' + label if label else ''}")
    if not os.path.exists(stripped):  # once per build: the reads' phase and the writes' run the same copy
        subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
    out = os.path.join(work, f"callgrind{'-' + label if label else ''}.%p")
    return ["env", f"LD_PRELOAD={shim}", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"], stripped, out


def families_of(path):
    out = []
    for line in open(path):
        parts = line.split()
        if not parts:
            continue
        token, d0 = parts[0], parts[1] if len(parts) > 1 else ""
        out.append({"token": token, "d0": d0, "d1": parts[2] if len(parts) > 2 else d0, "fam": parts[3] if len(parts) > 3 else ""})
    return out


def requests_of(case, path, families, body, n, seed, salt=""):
    """The case's requests as (method, path, body), the way bench/wrk/case.lua forms them, families drawn from `seed`.
    Writes go to contacts named with `salt` (the build's label): each build creates and changes contacts of its own,
    never rewriting another's with the same body (an unchanged write stores nothing)."""
    rng = random.Random(seed)
    fill = lambda s, f: s.replace("{d0}", f["d0"]).replace("{d1}", f["d1"]).replace("{fam}", f["fam"])
    out = []
    for k in range(n):
        f = families[rng.randrange(len(families))]
        if case == "put-contact":
            contact = {"firstName": f"Writer {k}", "lastName": "Bench", "emails": [f"w{rng.randrange(1_000_000)}@example.org"],
                       "phones": ["+33 6 12345678"]}
            out.append((f["token"], "PUT", f"/api/v1/contacts/w{salt}{rng.randrange(1, 201)}", json.dumps(contact)))
        elif case == "post":
            out.append((f["token"], "POST", fill(path, f), fill(body, f)))
        elif case == "group-appstart":
            out.append((f["token"], "POST", "/api/v1/group", fill(APPSTART, f)))
        else:
            out.append((f["token"], "GET", fill(path, f), None))
    return out


def send(port, requests):
    """Sends the requests one after another on one keep-alive connection; returns the count of non-2xx answers."""
    errors = 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for token, method, path, body in requests:
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        answer.read()
        if not 200 <= answer.status < 300:
            errors += 1
    conn.close()
    return errors


def control(pid, *flags):
    subprocess.run(["callgrind_control", *flags, str(pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def dumped(server, pattern):
    """Dumps the counters and returns the instructions the dump holds (since the last zero)."""
    files = lambda: set(glob.glob(pattern.replace("%p", str(server.proc.pid)) + ".*"))
    before = files()
    control(server.proc.pid, "-d")
    for _ in range(600):
        for dump in files() - before:
            match = re.search(r"^(?:totals|summary): (\d+)", open(dump).read(), re.M)
            if match:
                return int(match.group(1))
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def count(server, pattern, case, path, families_file, body, n, salt="", idle_seconds=2.0):
    """Instructions per request of one case on a server running under callgrind: what the N requests cost, less what
    the server does meanwhile on its own (its rate idle, measured right before, times the requests' wall time; under
    valgrind a request takes milliseconds, and a timer that ticks per second would otherwise count per request in
    proportion to how slow the machine is). Returns (per request, per request with the idle work left in, idle
    instructions per second, non-2xx answers)."""
    families = families_of(families_file)
    send(server.port, requests_of(case, path, families, body, WARMUP, seed=7, salt=salt))
    control(server.proc.pid, "-z")
    started = time.monotonic()
    time.sleep(idle_seconds)
    idle_rate = dumped(server, pattern) / (time.monotonic() - started)
    requests = requests_of(case, path, families, body, n, seed=11, salt=salt)
    control(server.proc.pid, "-z")
    started = time.monotonic()
    errors = send(server.port, requests)
    elapsed = time.monotonic() - started
    total = dumped(server, pattern)
    return max(0.0, total - idle_rate * elapsed) / n, total / n, idle_rate, errors


def report(results, compared, path):
    """A markdown table: each case's instructions per request for each build, and each compared build's count over
    the main build's (above 1: the main build does less); then the same with each build's idle work left in (raw)."""
    labels = list(compared)
    lines = ["| case | main: instructions/request | " + " | ".join(f"{l} | {l} ÷ main" for l in labels) + " | raw: "
             + " | ".join(f"{l} ÷ main" for l in labels) + " |", "|---|---:|" + "---:|---:|" * len(labels) + "---:|" * len(labels)]
    for row in results:
        if "ir_per_req" not in row:
            continue
        cells = [row["case"], f"{row['ir_per_req']:,.0f}"]
        for label in labels:
            other = next((r for r in compared[label] if r["case"] == row["case"] and "ir_per_req" in r), None)
            cells += [f"{other['ir_per_req']:,.0f}", f"{other['ir_per_req'] / row['ir_per_req']:.3f}"] if other else ["", ""]
        raws = []
        for label in labels:
            other = next((r for r in compared[label] if r["case"] == row["case"] and "ir_raw_per_req" in r), None)
            raws.append(f"{other['ir_raw_per_req'] / row['ir_raw_per_req']:.3f}" if other and row.get("ir_raw_per_req") else "")
        lines.append("| " + " | ".join(cells + raws) + " |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)
