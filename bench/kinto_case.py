"""The anchor of issue 19: Kinto (a JSON sync server with delta reads, `_since`) on the same PostgreSQL, measured in
the same run as SyncAPI, so that every "× Kinto" figure is a ratio of one run. Optional: skipped unless Kinto is
installed (KINTO_BIN, `kinto` on PATH, or /opt/kinto/bin, e.g. `python3 -m venv /opt/kinto &&
/opt/kinto/bin/pip install 'kinto[postgresql]' gunicorn`); CI does not install it.

Kinto runs as the issue measured it: 2 gunicorn workers, PostgreSQL storage, permission and cache backends, basic
auth. Its data matches SyncAPI's one-family case: a collection of 1,000 contacts of which 10 change after the date
D0 (the 10 contact writes of a SyncAPI family's 15), plus events, places and family collections of a few records
with one change each. Cases (bench/wrk/case.lua, a Basic auth header):
  kinto-delta       GET records?_since=D0 of the contacts (10 records)
  kinto-full-1000   GET all 1,000 contacts
  kinto-batch-4     POST /v1/batch of 4 such `_since` reads (contacts, events, places, family)
Used by bench/harness.py (--kinto); the SyncAPI cases they compare with are delta-one-family, full-1000 and
group-4-deltas.
"""
import base64, http.client, json, os, shutil, signal, socket, subprocess, sys, time

AUTH = "Basic " + base64.b64encode(b"bench:bench-secret").decode()
COUNTERPARTS = {"kinto-delta": "delta-one-family", "kinto-full-1000": "full-1000", "kinto-batch-4": "group-4-deltas"}


def kinto_bin():
    """The folder of the kinto and gunicorn commands, or None when Kinto is not installed."""
    for folder in [os.environ.get("KINTO_BIN"), os.path.dirname(shutil.which("kinto") or ""), "/opt/kinto/bin"]:
        if folder and os.access(os.path.join(folder, "kinto"), os.X_OK) and os.access(os.path.join(folder, "gunicorn"), os.X_OK):
            return folder
    return None


class Kinto:
    """Kinto under gunicorn (2 workers) on database `kinto` of the bench's PostgreSQL; the same interface as
    harness.Server for run_wrk (url, proc, status, reset_peak, cpu, alive, stop)."""

    def __init__(self, folder, pg, work, port):
        pg.sql("DROP DATABASE IF EXISTS kinto")
        pg.sql("CREATE DATABASE kinto")
        db = f"postgresql://postgres@127.0.0.1:{pg.port}/kinto"
        ini = os.path.join(work, "kinto.ini")
        with open(ini, "w") as f:
            f.write(f"""[app:main]
use = egg:kinto
kinto.storage_backend = kinto.core.storage.postgresql
kinto.storage_url = {db}
kinto.permission_backend = kinto.core.permission.postgresql
kinto.permission_url = {db}
kinto.cache_backend = kinto.core.cache.postgresql
kinto.cache_url = {db}
kinto.userid_hmac_secret = bench-hmac-secret
kinto.bucket_create_principals = system.Authenticated
kinto.batch_max_requests = 100
multiauth.policies = basicauth

[loggers]
keys = root
[handlers]
keys = console
[formatters]
keys = generic
[logger_root]
level = WARNING
handlers = console
[handler_console]
class = StreamHandler
args = (sys.stderr,)
level = WARNING
formatter = generic
[formatter_generic]
format = %(message)s
""")
        self.log = open(os.path.join(work, "kinto.log"), "w")
        subprocess.run([os.path.join(folder, "kinto"), "migrate", "--ini", ini], check=True, stdout=self.log,
                       stderr=subprocess.STDOUT)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([os.path.join(folder, "gunicorn"), "--paste", ini, "-w", "2", "-b", f"127.0.0.1:{port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if self.proc.poll() is not None:
                raise RuntimeError(f"kinto exited at start (log: {self.log.name})")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)

    def pids(self):
        """The master and its workers."""
        out = [self.proc.pid]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                        out.append(int(entry))
                except (OSError, IndexError, ValueError):
                    pass
        return out

    def status(self, field):
        total = 0.0
        for pid in self.pids():
            try:
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith(field + ":"):
                        total += int(line.split()[1]) / 1024
            except OSError:
                pass
        return total

    def reset_peak(self):
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass

    def cpu(self):
        """utime + stime of the master and its workers, in seconds."""
        total = 0
        for pid in self.pids():
            try:
                f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                total += int(f[11]) + int(f[12])
            except OSError:
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def call(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": AUTH, "Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    if r.status >= 300:
        raise RuntimeError(f"kinto {method} {path}: {r.status} {raw[:300]!r}")
    return r, raw


def batch(port, requests):
    for start in range(0, len(requests), 100):
        call(port, "POST", "/v1/batch", {"requests": requests[start:start + 100]})


def seed(kinto, work):
    """The bucket, its collections and records; returns the families file for case.lua ("token D0 D1" lines)."""
    port = kinto.port
    call(port, "PUT", "/v1/buckets/bench", {})
    for name in ("contacts", "events", "places", "family"):
        call(port, "PUT", f"/v1/buckets/bench/collections/{name}", {})
    contact = lambda i, n: {"firstName": f"First{i}", "lastName": f"Last{i}", "emails": [f"c{i}@example.org"],
                            "phones": ["+33 6 12345678"], "company": "Bench", "note": f"contact {i} v{n}"}
    records = [{"method": "PUT", "path": f"/buckets/bench/collections/contacts/records/c{i}", "body": {"data": contact(i, 0)}}
               for i in range(1000)]
    for name, count in (("events", 20), ("places", 5), ("family", 3)):
        records += [{"method": "PUT", "path": f"/buckets/bench/collections/{name}/records/{name[0]}{i}",
                     "body": {"data": {"title": f"{name} {i}"}}} for i in range(count)]
    batch(port, records)
    since = max(int(call(port, "GET", f"/v1/buckets/bench/collections/{name}/records?_limit=1")[0].getheader("ETag").strip('"'))
                for name in ("contacts", "events", "places", "family"))
    changes = [{"method": "PATCH", "path": f"/buckets/bench/collections/contacts/records/c{i * 97}",
                "body": {"data": contact(i * 97, 1)}} for i in range(10)]
    changes += [{"method": "PATCH", "path": f"/buckets/bench/collections/{name}/records/{name[0]}0",
                 "body": {"data": {"title": f"{name} 0 changed"}}} for name in ("events", "places", "family")]
    batch(port, changes)
    families = os.path.join(work, "kinto-families.txt")
    with open(families, "w") as f:
        f.write(f"{AUTH.split(' ', 1)[1]} {since} {since}\n")
    return families


BATCH_BODY = json.dumps({"requests": [{"method": "GET", "path": f"/buckets/bench/collections/{n}/records?_since={{d0}}"}
                                      for n in ("contacts", "events", "places", "family")]})


def run(pg, work, port, conns, run_wrk, log):
    """Starts Kinto, seeds it, runs its three cases with run_wrk; returns the rows (backend "kinto"), or [] when
    Kinto is not installed."""
    folder = kinto_bin()
    if not folder:
        log("kinto: not installed (KINTO_BIN, or /opt/kinto/bin): its cases are skipped")
        return []
    kinto = Kinto(folder, pg, work, port)
    rows = []
    try:
        t0 = time.time()
        families = seed(kinto, work)
        log(f"kinto: seeded 1,000 contacts and 10 changes in {time.time() - t0:.0f} s")
        os.environ["BENCH_AUTH"] = "Basic"
        try:
            for name, case, path, body in (
                    ("kinto-delta", "get", "/v1/buckets/bench/collections/contacts/records?_since={d0}", None),
                    ("kinto-full-1000", "get", "/v1/buckets/bench/collections/contacts/records", None),
                    ("kinto-batch-4", "post", "/v1/batch", BATCH_BODY)):
                if body:
                    os.environ["BENCH_BODY"] = body
                rows.append(run_wrk(kinto, None, name, case, path, families, conns, work))
                os.environ.pop("BENCH_BODY", None)
        finally:
            os.environ.pop("BENCH_AUTH", None)
    finally:
        kinto.stop()
    return rows


def ratios(runs):
    """× Kinto of each SyncAPI PostgreSQL case that has a Kinto counterpart, on the PostgreSQL run's rows."""
    kinto = {r["case"]: r for run in runs if run["backend"] == "kinto" for r in run["results"]}
    for run in runs:
        if not run["backend"].startswith("postgres"):
            continue
        for r in run["results"]:
            for kcase, counterpart in COUNTERPARTS.items():
                if r["case"] == counterpart and kinto.get(kcase, {}).get("rps") and r.get("rps"):
                    r["ratio_kinto"] = r["rps"] / kinto[kcase]["rps"]
