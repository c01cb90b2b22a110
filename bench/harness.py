#!/usr/bin/env python3
"""The benchmark driver behind bench/run and bench/smoke (issue 9, item 1). Run those, not this.

Why: one place that, per backend, starts a throw-away database and the server, seeds generated data (bench/seed.py),
runs every case with wrk (bench/wrk/case.lua: a random family per request), runs pgbench on exactly the SQL each case
runs (bench/pgbench/*.sql, PostgreSQL only), holds N open /changes streams (bench/streams.py) while writes land,
and reports every case as requests/s, p50, p99, bytes per answer, the server's peak RSS and ratios measured in the
same run: to GET /health of the same build and to pgbench. Writes OUTDIR/results.json, results.csv, table.md and
performance.png; prints the table. With --smoke, asserts every case got 2xx answers and no 5xx or socket error.
"""
import argparse, csv, glob, json, math, os, re, resource, shlex, shutil, signal, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--bin", default=os.environ.get("BIN", ".build/release/syncapi"))
ap.add_argument("--backends", default="sqlite,postgres")
ap.add_argument("--duration", type=float, default=10, help="seconds per case (wrk and pgbench)")
ap.add_argument("--connections", type=int, default=32)
ap.add_argument("--threads", type=int, default=2, help="wrk threads and pgbench jobs")
ap.add_argument("--families", type=int, default=1000)
ap.add_argument("--big", default="1000,100000", help="contact counts of the big families")
ap.add_argument("--streams", type=int, default=10000)
ap.add_argument("--bulk-items", type=int, default=1_000_000,
                help="rows added (other families, straight into the database) before the delta-changes+bulk case, "
                     "which compares the delta with the table that much larger (0: skip the case)")
ap.add_argument("--seed-workers", type=int, default=6)
ap.add_argument("--cases", default="", help="comma list: run only these cases (health is always run)")
ap.add_argument("--out", default=os.path.join(HERE, "out"))
ap.add_argument("--smoke", action="store_true", help="tiny data, short cases, assert no errors")
ap.add_argument("--idle-seconds", type=float, default=None,
                help="how long the open streams are watched at rest (default: the case duration, at most 10 s; streams "
                     "re-check every 30 s, so use 40 to see that)")
ap.add_argument("--compare", action="append", default=[], metavar="LABEL=BIN",
                help="also run every case (but the streams) with this other build on the same data, right after the "
                     "main build's pass of each group of cases, as backend@LABEL rows: a before/after in one run. The "
                     "other build must read the schema the main build migrated")
ap.add_argument("--interleave", type=int, default=0, metavar="R",
                help="with --compare: run each case R times per build, each run on a freshly started server, the builds' "
                     "order alternating by round (A B, B A, …); the rows carry each build's median run and the log each "
                     "round's ratio and their geometric mean. A shared machine drifts for minutes (seen: /health at 0.65 "
                     "of its rate for a whole pass); a pass per build puts the drift into the before/after, rounds cancel it")
ap.add_argument("--callgrind", type=int, default=0, metavar="N",
                help="instead of wrk: run each build under valgrind's callgrind and count the server's instructions per "
                     "request of each case over N requests sent one after another (bench/callgrind_case.py): a "
                     "before/after with --compare that the machine's load does not move. Writes OUT/callgrind.md")
ap.add_argument("--kinto", choices=["auto", "no"], default="auto",
                help="auto: with PostgreSQL, also run Kinto's cases (bench/kinto_case.py) when Kinto is installed")
ap.add_argument("--standbys", type=int, default=0, metavar="N",
                help="PostgreSQL: after the cases, start N hot standbys of the bench database (pg_basebackup -R), restart "
                     "the server with --read-database for each and run the read cases again (backend postgres+Nstandbys): "
                     "database CPU per request on the primary and on the standbys, and the share of reads the standbys served")
ap.add_argument("--report", metavar="RESULTS_JSON", help="only render the table and the plot of a saved results.json")
ap.add_argument("--perf", action="store_true",
                help="profile the server during each case (perf record -e cpu-clock -g); writes OUT/perf-<backend>-<case>.txt, "
                     "the top symbols by self time, and the profile. Sampling costs throughput: use with --cases, not for figures")
ap.add_argument("--perf-all", action="store_true",
                help="profile the whole machine during each case (perf record -a): writes OUT/perf-all-<backend>-<case>.txt, "
                     "the share of each process (server, PostgreSQL, wrk, kernel) and PostgreSQL's top symbols")
ap.add_argument("--floor", metavar="BIN",
                help="PostgreSQL: after the cases, run the delta cases against the stack's floor (bench/floor: Hummingbird "
                     "and PostgresNIO answering the delta's prepared statement, nothing else; bench/floor/build prints its "
                     "path) on the same data: floor-* rows, their ratio to pgbench, and each delta's ÷ floor")
args = ap.parse_args()
if args.perf and args.perf_all:
    sys.exit("bench: --perf and --perf-all each profile a case; give one")
if args.smoke:
    args.families, args.big, args.streams = min(args.families, 20), "200,1000", min(args.streams, 200)

if args.report:
    args.backends = ""
BIN = os.path.abspath(os.path.join(ROOT, args.bin) if not os.path.isabs(args.bin) else args.bin)
COMPARE = [(c.split("=", 1)[0], os.path.abspath(c.split("=", 1)[1])) for c in args.compare]
for label, binary in COMPARE:
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench: no server binary at {binary} (--compare {label}=…)")
if not os.access(BIN, os.X_OK) and not args.report:
    sys.exit(f"bench: no server binary at {BIN}")
for tool in ([] if args.report else ["wrk"]) + (["pgbench", "psql"] if "postgres" in args.backends else []):
    if not shutil.which(tool):
        sys.exit(f"bench: {tool} is needed (apt-get install -y wrk postgresql-client postgresql-contrib)")
BIG = [int(c) for c in args.big.split(",") if c]
BIG_SMALL, BIG_LARGE = BIG[0], BIG[-1]
DUR = args.duration
os.makedirs(args.out, exist_ok=True)

# Many streams need many descriptors, in this process, the server and the stream holder (children inherit).
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, 65536), max(hard, 65536)))
except (ValueError, OSError):
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def cpu_of(pid, children_done=False):
    """utime + stime of a process in seconds (and of its waited-for children)."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children_done else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"bench [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(os.listdir("/usr/lib/postgresql"), reverse=True):
        p = f"/usr/lib/postgresql/{d}/bin/{name}"
        if os.access(p, os.X_OK):
            return p
    sys.exit(f"bench: {name} not found (apt-get install -y postgresql)")


class Postgres:
    """A throw-away PostgreSQL in a temporary folder (initdb/pg_ctl; as user postgres when run as root)."""

    def __init__(self, work):
        self.dir, self.port = os.path.join(work, "pg"), free_port()
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if os.getuid() == 0:
            shutil.chown(work, "postgres")
        subprocess.run(self.as_pg + [pg_bin("initdb"), "-D", self.dir, "-U", "postgres", "-A", "trust", "--no-sync"],
                       check=True, stdout=subprocess.DEVNULL)
        self.start(work, "pg.log")

    def start(self, work, log_name):
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {work} -c max_connections=200"
        # Extra server settings for an investigation (e.g. BENCH_PG_OPTS="-c log_min_duration_statement=50"; with
        # BENCH_KEEP=1 the log stays in the working folder).
        opts += " " + os.environ.get("BENCH_PG_OPTS", "")
        subprocess.run(self.as_pg + [pg_bin("pg_ctl"), "-D", self.dir, "-l", os.path.join(work, log_name), "-o", opts, "-w", "start"],
                       check=True, stdout=subprocess.DEVNULL)
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def sql(self, statement, stdin=None):
        return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-qAtX",
                               "-v", "ON_ERROR_STOP=1", "-c", statement], input=stdin, check=True, capture_output=True,
                              text=True).stdout.strip()

    def cpu_seconds(self):
        """CPU time of the whole cluster: the postmaster, its live children, and its exited children (cutime)."""
        try:
            master = int(open(os.path.join(self.dir, "postmaster.pid")).readline())
        except (OSError, ValueError):
            return 0.0
        total = cpu_of(master, children_done=True)
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == master:
                        total += cpu_of(int(entry))
                except (OSError, IndexError, ValueError):
                    pass
        return total

    def transactions(self):
        return int(self.sql("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'postgres'"))

    def stop(self):
        subprocess.run(self.as_pg + [pg_bin("pg_ctl"), "-D", self.dir, "-m", "immediate", "stop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


class Standby(Postgres):
    """A hot standby of `primary`: pg_basebackup -R -X stream into the working folder, then started (hot_standby is
    on by default), streaming from the primary."""

    def __init__(self, primary, work, k):
        self.dir, self.port, self.as_pg = os.path.join(work, f"standby{k}"), free_port(), primary.as_pg
        subprocess.run(self.as_pg + [pg_bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                                     "-D", self.dir, "-R", "-X", "stream", "-c", "fast"], check=True, stdout=subprocess.DEVNULL)
        self.start(work, f"standby{k}.log")


class Server:
    def __init__(self, database, work, binary=None, label="", extra=(), command=None, prefix=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(work, f"server{'-' + label if label else ''}.log"), "a")  # a restart appends
        cap = str(max(30000, args.streams * 2))
        self.proc = subprocess.Popen(
            command(self.port) if command else
            list(prefix) + [binary or BIN, "serve", "--port", str(self.port), "--database", database, "--bcrypt-cost", "4", "--max-connections", cap,
             "--max-streams-per-instance", cap, "--max-streams-per-account", "1000", "--max-connections-per-address", cap,
             "--signup-rate", "1000000", "--login-rate", "1000000",
             # One account drives every connection of a case: its snapshot budget raised (production: 4 per account).
             # The instance's budget (and its PostgreSQL pool of snapshot answers) keeps its default, 8.
             "--max-snapshot-answers-per-account", "1000"]
            # Extra flags for an experiment (a later flag wins), e.g. BENCH_SERVE_ARGS="--database-connections 6".
            + list(extra) + shlex.split(os.environ.get("BENCH_SERVE_ARGS", "")),
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "LOG_LEVEL": os.environ.get("LOG_LEVEL", "warning")})
        for _ in range(3000 if prefix else 300):  # under valgrind, a start takes tens of seconds
            if self.proc.poll() is not None:
                sys.exit(f"bench: the server exited at start (log: {self.log.name})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)

    def status(self, field):
        """A /proc/PID/status field in MiB (VmRSS, VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def reset_peak(self):
        """Resets VmHWM to the current RSS (Linux ≥ 4.0), so each case reports its own peak."""
        try:
            with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass

    def cpu(self):
        return cpu_of(self.proc.pid)

    def switches(self):
        """Context switches of all the server's threads so far (voluntary: a thread parked; involuntary: preempted):
        each hop of a request from one thread to another costs two, so per request they count the hops."""
        total = 0
        for task in glob.glob(f"/proc/{self.proc.pid}/task/*/status"):
            try:
                for line in open(task):
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total

    def read_routes(self):
        """syncapi_read_transactions_total by served_by (standby, primary, fallback), from GET /metrics."""
        import urllib.request
        text = urllib.request.urlopen(self.url + "/metrics", timeout=10).read().decode()
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r'^syncapi_read_transactions_total\{served_by="(\w+)"\} ([\d.e+]+)$', text, re.M)}

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# name, wrk case, path, families file key (small | big-N), connections
def cases():
    c = args.connections
    out = [
        ("health", "get", "/health", "small", c),
        ("delta-changes", "get", "/api/v1/ctcsync?date={d0}", "small", c),
        ("delta-changes-c64", "get", "/api/v1/ctcsync?date={d0}", "small", 64),
        # Every connection on one family (issue 19's tail case): the same rows, the same counter, the same lock.
        ("delta-one-family", "get", "/api/v1/ctcsync?date={d0}", "one", c),
        ("delta-unchanged", "get", "/api/v1/ctcsync?date={d1}", "small", c),
        (f"full-{BIG_SMALL}", "get", "/api/v1/ctcsync", f"big-{BIG_SMALL}", c),
        (f"full-{BIG_LARGE}", "get", "/api/v1/ctcsync", f"big-{BIG_LARGE}", 8),
        ("msgsync-first", "get", "/api/v1/msgsyncthread?nb=20&maxmessages=10", "small", c),
        ("msgsync-delta", "get", "/api/v1/msgsyncthread?date={d0}&nb=20&maxmessages=10", "small", c),
        ("group-appstart", "group-appstart", "", "small", c),
        # Four deltas in one POST /group on one family (Kinto's kinto-batch-4 counterpart).
        ("group-4-deltas", "post", "/api/v1/group", "one", c),
        # The same delta once the items table holds --bulk-items more rows (other families): the delta's cost must
        # not grow with the table (issue 9's target compares p50 at 1M rows with p50 at 10k).
        ("delta-changes+bulk", "get", "/api/v1/ctcsync?date={d0}", "small", c),
        ("put-writes", "put-contact", "", "small", c),
    ]
    if args.cases:
        keep = set(args.cases.split(",")) | {"health"}
        out = [x for x in out if x[0] in keep]
    return out


GROUP_4_DELTAS = json.dumps({"requests": [{"id": n, "method": "GET", "url": f"/api/v1/{n}?date={{d0}}"}
                                          for n in ("ctcsync", "evtsync", "plcsync", "familysync")]})

# The pgbench script of each case (bench/pgbench/<name>.sql); cases not listed have none.
PGBENCH = {"delta-changes": "delta-changes", "delta-changes-c64": "delta-changes", "delta-one-family": "delta-one-family", "delta-changes+bulk": "delta-changes", "delta-unchanged": "delta-unchanged",
           f"full-{BIG_SMALL}": "full-small", f"full-{BIG_LARGE}": "full-large", "msgsync-first": "msgsync-first",
           "msgsync-delta": "msgsync-delta", "group-appstart": "group-appstart", "group-4-deltas": "group-4-deltas",
           "put-writes": "put-writes"}


def switches_of(server):
    """The server's context switches so far; 0 for a server that does not count them (Kinto)."""
    return server.switches() if hasattr(server, "switches") else 0


def run_wrk(server, pg, name, case, path, families, conns, work, duration=None):
    out = os.path.join(work, f"wrk-{name}.json")
    env = {**os.environ, "BENCH_FAMILIES": families, "BENCH_CASE": case, "BENCH_PATH": path, "BENCH_OUT": out}
    if args.smoke:
        env["BENCH_STATUS"] = "1"
    rss0 = server.status("VmRSS")
    server.reset_peak()
    tx0, t0 = (pg.transactions() if pg else 0), time.time()
    cpu0, db_cpu0, switches0 = server.cpu(), (pg.cpu_seconds() if pg else 0), switches_of(server)
    threads = min(args.threads, conns)
    perf = None
    if args.perf or args.perf_all:
        perf_data = os.path.join(args.out, f"perf-{'all-' if args.perf_all else ''}{BACKEND}-{name}.data")
        target = ["-a"] if args.perf_all else ["-p", str(server.proc.pid)]
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", *target, "-o", perf_data],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    wrk = subprocess.run(["wrk", f"-t{threads}", f"-c{conns}", f"-d{max(1, round(duration or DUR))}s", "--timeout", "30s", "-s",
                          os.path.join(HERE, "wrk", "case.lua"), server.url], env=env, capture_output=True, text=True)
    elapsed = time.time() - t0
    cpu1, db_cpu1, switches1 = server.cpu(), (pg.cpu_seconds() if pg else 0), switches_of(server)
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
        (perf_all_report if args.perf_all else perf_report)(perf_data)
    time.sleep(0.6 if pg else 0)  # PostgreSQL publishes its counters at most once a second per backend
    tx1 = pg.transactions() if pg else 0
    if wrk.returncode != 0 or not os.path.exists(out):
        log(f"{name}: wrk failed: {(wrk.stderr + wrk.stdout).strip()[:500]}")
        return {"case": name, "failed": True}
    r = json.load(open(out))
    secs = r["duration_us"] / 1e6
    e = r["errors"]
    row = {"case": name, "connections": conns, "requests": r["requests"], "rps": r["requests"] / secs,
           "p50_ms": r["latency_us"]["p50"] / 1000, "p90_ms": r["latency_us"]["p90"] / 1000,
           "p99_ms": r["latency_us"]["p99"] / 1000, "max_ms": r["latency_us"]["max"] / 1000,
           "tail": r["latency_us"]["p99"] / max(1, r["latency_us"]["p50"]),
           "bytes_per_answer": r["bytes"] / max(1, r["requests"]), "rss_before_mb": rss0, "rss_peak_mb": server.status("VmHWM"),
           "rss_after_mb": server.status("VmRSS"), "socket_errors": e["connect"] + e["read"] + e["write"] + e["timeout"],
           "status_errors": e["status"], "status": r["status"] if r["status_counted"] else None,
           "db_xact_per_s": (tx1 - tx0) / elapsed if pg else None,
           "server_cpu_ms_per_req": 1000 * (cpu1 - cpu0) / max(1, r["requests"]),
           "server_switches_per_req": (switches1 - switches0) / max(1, r["requests"]),
           "db_cpu_ms_per_req": 1000 * (db_cpu1 - db_cpu0) / max(1, r["requests"]) if pg else None,
           "server_cpu_share": (cpu1 - cpu0) / elapsed / (os.cpu_count() or 1)}
    log(f"{name}: {row['rps']:.0f} req/s, p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms (×{row['tail']:.1f}), "
        f"max {row['max_ms']:.0f} ms, "
        f"{row['bytes_per_answer']:.0f} B/answer, peak RSS {row['rss_peak_mb']:.0f} MiB, errors {row['socket_errors']}+{row['status_errors']}")
    return row


def perf_lines(data, sort, limit, *extra):
    """The rows of `perf report` of a profile by self time, sorted by `sort`, above `limit` percent."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "-g", "none", "--sort", sort, "--stdio",
                          "--percent-limit", limit, *extra], capture_output=True, text=True).stdout
    return "\n".join(re.sub(r"[\s-]+$", "", l) for l in out.splitlines() if re.match(r"\s+\d+\.\d+%", l))


def perf_all_report(data):
    """Where the machine's CPU time went during a case: by process, then PostgreSQL's top symbols."""
    text = ("by process:\n" + perf_lines(data, "comm", "0.5")
            + "\n\nby process and library:\n" + perf_lines(data, "comm,dso", "0.5")
            + "\n\nPostgreSQL's top symbols (share of all samples):\n"
            + perf_lines(data, "symbol", "0.3", "--comms", "postgres") + "\n")
    with open(data.replace(".data", ".txt"), "w") as f:
        f.write(text)


def perf_report(data):
    """Where the server's CPU time went during a case: self time by library, then the top symbols (demangled with
    swift demangle), next to the profile (open it with perf report -i FILE for call graphs)."""
    text = ("by library:\n" + perf_lines(data, "dso", "1") + "\n\ntop symbols:\n" + perf_lines(data, "dso,symbol", "0.8")
            + "\n\ntop symbols of the syncapi binary (share of all samples):\n"
            + perf_lines(data, "symbol", "0.3", "--dsos", "syncapi") + "\n")
    if shutil.which("swift"):
        text = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True, text=True).stdout or text
    with open(data.replace(".data", ".txt"), "w") as f:
        f.write(text)


def run_pgbench(pg, script, conns, now_ms, nfam, work):
    """pgbench on the case's SQL: prepared mode, the case's client count and duration; transactions/s, and PostgreSQL's
    CPU per transaction (to set beside the server's db_cpu_ms_per_req: what the same SQL costs the database alone)."""
    db_cpu0 = pg.cpu_seconds()
    res = subprocess.run(["pgbench", "-n", "-M", "prepared", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres",
                          "-c", str(conns), "-j", str(min(args.threads, conns)), "-T", str(max(1, int(round(DUR)))),
                          "-D", f"now={now_ms}", "-D", f"nfam={nfam}", "-D", f"big_small=-{BIG_SMALL}", "-D", f"big_large=-{BIG_LARGE}",
                          "-f", os.path.join(HERE, "pgbench", script + ".sql"), "postgres"], capture_output=True, text=True)
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", res.stdout)
    lat = re.search(r"latency average = ([\d.]+) ms", res.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", res.stdout)
    done = re.search(r"number of transactions actually processed: (\d+)", res.stdout)
    db_cpu = pg.cpu_seconds() - db_cpu0
    if res.returncode != 0 or not m:
        log(f"pgbench {script} failed: {(res.stderr or res.stdout).strip()[-600:]}")
        return None
    return {"tps": float(m.group(1)), "latency_avg_ms": float(lat.group(1)) if lat else None,
            "failed": int(failed.group(1)) if failed else 0,
            "db_cpu_ms_per_tx": 1000 * db_cpu / int(done.group(1)) if done and int(done.group(1)) else None}


def load_keys(pg, outdir):
    """bench_keys: family n (1..N, big families -count) → token hash, family id, account id, versions of D0 and D1;
    the pgbench scripts draw a family the way the wrk script does and read its keys inside their statements."""
    rows = []
    for n, line in enumerate(open(os.path.join(outdir, "families.txt")), 1):
        _, d0, d1, fam = line.split()
        rows.append(f"{n}\t{fam}\t{d0.rsplit('.', 1)[1]}\t{d1.rsplit('.', 1)[1]}")
    for count in BIG:
        _, d0, fam = open(os.path.join(outdir, f"big-{count}.txt")).read().split()
        v = d0.rsplit(".", 1)[1]
        rows.append(f"-{count}\t{fam}\t{v}\t{v}")
    pg.sql("DROP TABLE IF EXISTS bench_keys; CREATE TABLE bench_keys (n INT PRIMARY KEY, family_id TEXT NOT NULL, "
           "d0 BIGINT NOT NULL, d1 BIGINT NOT NULL, hash TEXT, account_id TEXT)")
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-d", "postgres", "-qX", "-v", "ON_ERROR_STOP=1",
                    "-c", "COPY bench_keys (n, family_id, d0, d1) FROM STDIN"], input="\n".join(rows) + "\n", text=True, check=True)
    pg.sql("UPDATE bench_keys k SET hash = t.hash, account_id = t.account_id FROM tokens t WHERE t.family_id = k.family_id; "
           "ANALYZE")
    missing = pg.sql("SELECT count(*) FROM bench_keys WHERE hash IS NULL")
    if missing != "0":
        sys.exit(f"bench: {missing} families without a token in bench_keys")


def streams_case(server, pg, work, families, results):
    """N open /changes streams: idle (what they cost at rest), then while PUT writes land."""
    state = os.path.join(work, "streams")
    os.makedirs(state, exist_ok=True)
    rss0 = server.status("VmRSS")
    holder = subprocess.Popen([sys.executable, os.path.join(HERE, "streams.py"), server.url, families, str(args.streams), state],
                              stderr=open(os.path.join(work, "streams.log"), "w"))
    for _ in range(int(120 + args.streams / 20)):
        if os.path.exists(os.path.join(state, "ready")) or holder.poll() is not None:
            break
        time.sleep(0.5)
    ready = json.load(open(os.path.join(state, "ready"))) if os.path.exists(os.path.join(state, "ready")) else {}
    log(f"streams: {ready.get('opened', 0)}/{args.streams} open in {ready.get('openSeconds')} s, refused {ready.get('refused')}")
    # At rest: database transactions/s and RSS with the streams idle.
    tx0, t0, cpu0 = (pg.transactions() if pg else 0), time.time(), cpu_of(server.proc.pid)
    time.sleep(args.idle_seconds or min(DUR, 10))
    cpu_share = (cpu_of(server.proc.pid) - cpu0) / (time.time() - t0) / (os.cpu_count() or 1)
    idle = {"case": f"streams-idle-{args.streams}", "connections": ready.get("opened", 0), "requests": 0, "rps": None,
            "rss_before_mb": rss0, "rss_after_mb": server.status("VmRSS"), "rss_peak_mb": server.status("VmHWM"),
            "db_xact_per_s": ((pg.transactions() - tx0) / (time.time() - t0)) if pg else None,
            "streams_opened": ready.get("opened", 0), "streams_refused": ready.get("refused", {}),
            "streams_failed": ready.get("failed", 0), "socket_errors": ready.get("failed", 0), "status_errors": 0,
            "server_cpu_share": cpu_share}
    results.append(idle)
    log(f"streams idle: RSS {rss0:.0f} → {idle['rss_after_mb']:.0f} MiB, DB {idle['db_xact_per_s'] or 0:.1f} xact/s")
    row = run_wrk(server, pg, f"put-writes+{args.streams}-streams", "put-contact", "", families, args.connections, work)
    holder.send_signal(signal.SIGTERM)
    try:
        holder.wait(60)
    except subprocess.TimeoutExpired:
        holder.kill()
    result_file = os.path.join(state, "result.json")
    held = json.load(open(result_file)) if os.path.exists(result_file) else {}
    row.update({"streams_opened": held.get("opened"), "stream_changes": held.get("changes"),
                "streams_closed_by_server": held.get("closedByServer")})
    log(f"streams during writes: {held.get('changes')} change events received, {held.get('closedByServer')} closed by the server")
    results.append(row)


def add_bulk_items(pg, work, n):
    """Adds n contacts to 1,000-item families of their own (`bulk-<k>`), straight into the database (seeding a million
    rows through the API would take hours); returns the row count before. The server's families are untouched."""
    t0 = time.time()
    if pg:
        before = int(pg.sql("SELECT count(*) FROM items"))
        pg.sql("INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms) "
               f"SELECT 'bulk-' || (g / 1000), 'contacts', '', 'c' || g, g % 1000 + 1, false, "
               f"'{{\"id\":\"c' || g || '\",\"firstName\":\"Bulk\"}}', 0 FROM generate_series(1, {n}) g")
        pg.sql("ANALYZE items")
    else:
        import sqlite3
        db = sqlite3.connect(os.path.join(work, "bench.sqlite"), timeout=60)
        before = db.execute("SELECT count(*) FROM items").fetchone()[0]
        db.executemany("INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms) "
                       "VALUES (?, 'contacts', '', ?, ?, 0, ?, 0)",
                       ((f"bulk-{g // 1000}", f"c{g}", g % 1000 + 1, f'{{"id":"c{g}","firstName":"Bulk"}}')
                        for g in range(1, n + 1)))
        db.commit()
        db.close()
    log(f"{BACKEND}: added {n} items in {time.time() - t0:.0f} s ({before} → {before + n} rows)")
    return before


# The cases whose reads may go to a standby (protocol §13: a delta, a page sync), run again with --read-database.
STANDBY_CASES = ("delta-changes", "delta-one-family", "delta-unchanged", "msgsync-delta")


def standby_phase(pg, server, database, work, files, rows):
    """Issue 19 item 4's measured run: the read cases again with N hot standbys behind --read-database, as rows of
    backend postgres+Nstandbys. db_cpu_ms_per_req stays the primary's; standby_db_cpu_ms_per_req is all standbys' together;
    standby_share is the share of sync reads the standbys answered (GET /metrics). Returns the server to go on with."""
    label = f"{args.standbys}standbys"
    # The baseline on the same data: the cases before ran writes, so the deltas now carry more changes than in the
    # main pass. Each read case runs once more on the primary alone, right before the standbys start.
    alone = {}
    for name, case, path, fam, conns in cases():
        if name in STANDBY_CASES and server.alive():
            alone[name] = run_wrk(server, pg, f"{name}-alone", case, path, files[fam], conns, work)
            rows.append(alone[name])
    standbys = []
    try:
        for k in range(args.standbys):
            standbys.append(Standby(pg, work, k + 1))
        # Both standbys replay everything the seed wrote before the first case.
        target = pg.sql("SELECT pg_current_wal_lsn()")
        for sb in standbys:
            for _ in range(600):
                if sb.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") == "t":
                    break
                time.sleep(0.1)
        server.stop()
        extra = [a for sb in standbys for a in ("--read-database", sb.url)]
        server = Server(database, work, label=label, extra=extra)
        time.sleep(2)  # the health checker's first round marks the standbys healthy
        log(f"postgres: {args.standbys} hot standbys streaming, server restarted with {' '.join(extra)}")
        for name, case, path, fam, conns in cases():
            if name not in STANDBY_CASES:
                continue
            routes0, sb_cpu0 = server.read_routes(), sum(sb.cpu_seconds() for sb in standbys)
            sb_tx0 = sum(sb.transactions() for sb in standbys)
            row = run_wrk(server, pg, name, case, path, files[fam], conns, work)
            routes1, sb_cpu1 = server.read_routes(), sum(sb.cpu_seconds() for sb in standbys)
            sb_tx1 = sum(sb.transactions() for sb in standbys)
            if row.get("requests"):
                served = {k: routes1.get(k, 0) - routes0.get(k, 0) for k in ("standby", "primary", "fallback")}
                base = alone.get(name) or {}
                row.update({"standby_db_cpu_ms_per_req": 1000 * (sb_cpu1 - sb_cpu0) / row["requests"],
                            "standby_xact": sb_tx1 - sb_tx0, "read_routes": served,
                            "standby_share": served["standby"] / max(1, sum(served.values())),
                            "alone_rps": base.get("rps"), "alone_db_cpu_ms_per_req": base.get("db_cpu_ms_per_req"),
                            "alone_p99_ms": base.get("p99_ms")})
                log(f"{name} with {label}: primary DB CPU {row['db_cpu_ms_per_req']:.3f} ms/req, standbys "
                    f"{row['standby_db_cpu_ms_per_req']:.3f} ms/req, reads served {served}")
            rows.append(row)
    finally:
        server.stop()
        for sb in standbys:
            sb.stop()
    return Server(database, work)


# The floor's pool: the server's default (PoolSize.defaultConnections), which its deltas use.
FLOOR_CONNECTIONS = max(4, 2 * (os.cpu_count() or 1) + 2)
# The floor's cases: (name, the SyncAPI case it is the floor of, families file key, route). The libpq rows run the
# same statement through pgbench's client library on blocking threads (bench/floor's LibPQDelta); the ÷ floor of the
# SyncAPI rows is against the PostgresNIO floor, the server's own driver.
FLOOR_CASES = [("floor-delta-changes", "delta-changes", "small", "/floor/delta"),
               ("floor-delta-one-family", "delta-one-family", "one", "/floor/delta"),
               ("floor-libpq-delta-changes", "delta-changes", "small", "/floor/delta-libpq"),
               ("floor-libpq-delta-one-family", "delta-one-family", "one", "/floor/delta-libpq")]


def floor_phase(pg, database, work, files, results):
    """The stack's floor (--floor) on the bench's data: its /health and the delta cases, each with the pgbench rate of
    its SyncAPI counterpart; sets ratio_floor (req/s ÷ the floor's) on the counterparts. Rows of backend "floor"."""
    floor = Server(database, work, label="floor", command=lambda port: [
        os.path.abspath(args.floor), "--port", str(port), "--db-port", str(pg.port), "--db-user", "postgres",
        "--db-name", "postgres", "--connections", str(FLOOR_CONNECTIONS)])
    rows = []
    try:
        rows.append(run_wrk(floor, pg, "health", "get", "/health", files["small"], args.connections, work))
        mine = {r["case"]: r for r in results}
        for name, counterpart, fam, route in FLOOR_CASES:
            if counterpart not in mine or mine[counterpart].get("failed"):
                continue
            row = run_wrk(floor, pg, name, "get", route + "?family={fam}&since={d0}", files[fam], args.connections, work)
            tps = mine[counterpart].get("pgbench_tps")
            if tps and row.get("rps"):
                row.update({"pgbench_tps": tps, "ratio_pgbench": row["rps"] / tps})
                if route == "/floor/delta":
                    mine[counterpart]["ratio_floor"] = mine[counterpart]["rps"] / row["rps"]
            rows.append(row)
    finally:
        floor.stop()
    return rows


def interleaved(server, pg, group, database, work, files, seed, now_ms, results, compared):
    """--interleave: each case run R times per build, alternating the builds' order by round, each run on a fresh
    server; the main build's and every compared build's median run go to results and compared. Returns a running
    server of the main build."""
    server.stop()
    builds = [("", None)] + COMPARE
    for name, case, path, fam, conns in group:
        if name == "delta-changes+bulk" and not bulk_step(pg, work, seed):
            continue
        runs = {label: [] for label, _ in builds}
        for round_ in range(args.interleave):
            for label, binary in (builds if round_ % 2 == 0 else builds[::-1]):
                if case == "post":
                    os.environ["BENCH_BODY"] = GROUP_4_DELTAS
                one = Server(database, work, binary, label)
                try:
                    runs[label].append(run_wrk(one, pg, name, case, path, files[fam], conns, work))
                finally:
                    one.stop()
        main = median_run(runs[""])
        add_pgbench(main, pg, name, conns, now_ms, work)
        results.append(main)
        for label, _ in COMPARE:
            row = median_run(runs[label])
            ratios = [m["rps"] / o["rps"] for m, o in zip(runs[""], runs[label]) if m.get("rps") and o.get("rps")]
            if ratios:
                mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
                row["main_over_this_by_round"] = [round(r, 3) for r in ratios]
                row["main_over_this_geomean"] = round(mean, 3)
                log(f"{name}: main ÷ {label}, round by round: {', '.join(f'{r:.2f}' for r in ratios)}; geometric mean {mean:.3f}")
            if main.get("pgbench_tps") and row.get("rps"):
                row.update({"pgbench_tps": main["pgbench_tps"], "ratio_pgbench": row["rps"] / main["pgbench_tps"]})
            compared.setdefault(label, []).append(row)
    return Server(database, work)


def callgrind_group(server, pg, group, database, work, files, seed, results, compared):
    """--callgrind: each build in turn under callgrind, every case of the group counted on it (instructions per request;
    the order of the builds does not matter to a count). Returns a running server of the main build."""
    sys.path.insert(0, HERE)
    import callgrind_case
    if not group:
        return server
    server.stop()
    if any(name == "delta-changes+bulk" for name, *_ in group) and not bulk_step(pg, work, seed):
        group = [c for c in group if c[0] != "delta-changes+bulk"]
    # The reads of every build first, then the writes: no build reads the rows another build's writes added.
    reads = [c for c in group if c[1] != "put-contact"]
    for phase in (reads, [c for c in group if c[1] == "put-contact"]):
        for label, binary in ([("", BIN)] + COMPARE) if phase else []:
            prefix, stripped, pattern = callgrind_case.tools(work, binary, label)
            one = Server(database, work, stripped, label, prefix=prefix)
            try:
                for name, case, path, fam, conns in phase:
                    per_request, raw, idle, errors = callgrind_case.count(
                        one, pattern, case, path, files[fam], GROUP_4_DELTAS, args.callgrind, salt=label)
                    row = {"case": name, "connections": 1, "requests": args.callgrind, "ir_per_req": per_request,
                           "ir_raw_per_req": raw, "idle_ir_per_s": idle, "status_errors": errors}
                    (results if not label else compared.setdefault(label, [])).append(row)
                    log(f"{name}{' @' + label if label else ''}: {per_request:,.0f} instructions per request "
                        f"(idle: {idle:,.0f} per second, subtracted), {errors} non-2xx")
            finally:
                one.stop()
    log("\n" + callgrind_case.report(results, compared, os.path.join(args.out, "callgrind.md")))
    return Server(database, work)


def bulk_step(pg, work, seed):
    """Before the case delta-changes+bulk: adds --bulk-items rows of other families; False when the case is skipped."""
    if not args.bulk_items or args.smoke:
        return False
    seed["items_before_bulk"] = add_bulk_items(pg, work, args.bulk_items)
    seed["items_after_bulk"] = seed["items_before_bulk"] + args.bulk_items
    return True


def add_pgbench(row, pg, name, conns, now_ms, work):
    """Runs the case's pgbench script (PostgreSQL, a case that has one and did not fail) and puts its rate and the
    case's ratio to it into `row`."""
    if not pg or name not in PGBENCH or row.get("failed"):
        return
    pb = run_pgbench(pg, PGBENCH[name], conns, now_ms, args.families, work)
    if pb:
        row.update({"pgbench_tps": pb["tps"], "pgbench_latency_ms": pb["latency_avg_ms"], "pgbench_failed": pb["failed"],
                    "pgbench_db_cpu_ms_per_tx": pb["db_cpu_ms_per_tx"],
                    "ratio_pgbench": row["rps"] / pb["tps"] if pb["tps"] else None})


def median_run(runs):
    """The run of median req/s (the lower one of an even count), whole: its latencies and CPU belong to it."""
    ok = sorted((r for r in runs if r.get("rps")), key=lambda r: r["rps"])
    return dict(ok[(len(ok) - 1) // 2]) if ok else dict(runs[0])


def bench_backend(backend, work):
    global BACKEND
    BACKEND = backend
    pg = Postgres(work) if backend == "postgres" else None
    server = Server(pg.url if pg else f"sqlite:{os.path.join(work, 'bench.sqlite')}", work)
    results, seed, compared, kinto_rows, standby_rows, floor_rows = [], {}, {}, [], [], []
    try:
        data = os.path.join(work, "data")
        t0 = time.time()
        seed_cmd = [sys.executable, os.path.join(HERE, "seed.py"), server.url, data, "--families", str(args.families),
                    "--big", args.big, "--workers", str(args.seed_workers)] + (["--small"] if args.smoke else [])
        seed = json.loads(subprocess.run(seed_cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        log(f"{backend}: seeded {args.families} families ({seed['smallWrites']} writes) and {args.big} contacts "
            f"in {time.time() - t0:.0f} s")
        if pg:
            load_keys(pg, data)
            # Sets the seeded rows' hint bits and visibility once, here: else the first case to read a table pays for
            # it (msgsync-first cost PostgreSQL 0.55-0.60 ms per request run first, 0.46 run second, same build).
            pg.sql("VACUUM (ANALYZE)")
            seed["items"] = int(pg.sql("SELECT count(*) FROM items"))
        files = {"small": os.path.join(data, "families.txt"), "one": os.path.join(data, "one-family.txt"),
                 **{f"big-{n}": os.path.join(data, f"big-{n}.txt") for n in BIG}}
        with open(files["small"]) as f, open(files["one"], "w") as one:
            one.write(f.readline())
        now_ms = int(time.time() * 1000)
        database = pg.url if pg else f"sqlite:{os.path.join(work, 'bench.sqlite')}"
        # Groups of cases: those before the bulk rows are added, then the rest; each compared build runs a group
        # right after the main build, on the same data.
        all_cases = cases()
        split = next((i for i, c in enumerate(all_cases) if c[0] == "delta-changes+bulk"), len(all_cases))
        for group in (all_cases[:split], all_cases[split:]):
            if args.callgrind:
                server = callgrind_group(server, pg, group, database, work, files, seed, results, compared)
                continue
            if args.interleave and COMPARE:
                server = interleaved(server, pg, group, database, work, files, seed, now_ms, results, compared)
                continue
            main_rows = {}
            for name, case, path, fam, conns in group:
                if name == "delta-changes+bulk" and not bulk_step(pg, work, seed):
                    continue
                if case == "post":
                    os.environ["BENCH_BODY"] = GROUP_4_DELTAS
                row = run_wrk(server, pg, name, case, path, files[fam], conns, work)
                add_pgbench(row, pg, name, conns, now_ms, work)
                results.append(row)
                main_rows[name] = row
                if not server.alive():
                    log(f"{backend}: THE SERVER EXITED during {name} (see {server.log.name})")
                    break
            for label, binary in COMPARE:
                server.stop()
                other = Server(database, work, binary, label)
                try:
                    for name, case, path, fam, conns in group:
                        if name not in main_rows:
                            continue
                        if case == "post":
                            os.environ["BENCH_BODY"] = GROUP_4_DELTAS
                        row = run_wrk(other, pg, name, case, path, files[fam], conns, work)
                        tps = main_rows[name].get("pgbench_tps")
                        if tps and row.get("rps"):
                            row.update({"pgbench_tps": tps, "ratio_pgbench": row["rps"] / tps})
                        compared.setdefault(label, []).append(row)
                finally:
                    other.stop()
                server = Server(database, work)
        if pg and args.standbys > 0:
            server = standby_phase(pg, server, database, work, files, standby_rows)
        if args.streams and server.alive() and (not args.cases or "streams" in args.cases):
            streams_case(server, pg, work, files["small"], results)
        if pg and args.floor:
            floor_rows = floor_phase(pg, database, work, files, results)
        if pg and args.kinto == "auto" and not args.smoke:
            sys.path.insert(0, HERE)
            import kinto_case
            kinto_rows = kinto_case.run(pg, work, free_port(), args.connections, run_wrk, log)
    finally:
        alive = server.alive()
        server.stop()
        if pg:
            pg.stop()
    with open(server.log.name) as f:
        server_log = f.read()
    runs = [{"backend": backend, "seed": seed, "results": results, "server_alive_at_end": alive,
             "server_log_errors": [l for l in server_log.splitlines() if re.search(r"error|critical|fatal", l, re.I)][:20]}]
    runs += [{"backend": f"{backend}@{label}", "seed": seed, "results": rows, "server_alive_at_end": True,
              "server_log_errors": []} for label, rows in compared.items()]
    if standby_rows:
        runs.append({"backend": f"{backend}+{args.standbys}standbys", "seed": seed, "results": standby_rows,
                     "server_alive_at_end": True, "server_log_errors": []})
    if floor_rows:
        runs.append({"backend": "floor", "seed": seed, "results": floor_rows, "server_alive_at_end": True, "server_log_errors": []})
    if kinto_rows:
        runs.append({"backend": "kinto", "seed": {}, "results": kinto_rows, "server_alive_at_end": True, "server_log_errors": []})
    for run in runs:
        health = next((r["rps"] for r in run["results"] if r["case"] == "health" and r.get("rps")), None)
        for r in run["results"]:
            r["backend"] = run["backend"]
            r["ratio_health"] = (r["rps"] / health) if (health and r.get("rps")) else None
    return runs


def fmt(v, spec):
    if v is None:
        return ""
    if spec in (",.0f", ".3f", ".2f") and 0 < abs(v) < (10 if spec == ",.0f" else 0.01):
        return format(v, ".2g")  # small values keep two significant digits
    return format(v, spec)


def table(runs):
    lines = ["| backend | case | conns | req/s | p50 ms | p90 ms | p99 ms | max ms | p99 ÷ p50 | bytes/answer | "
             "server RSS MiB before → peak | ÷ /health | pgbench tps | ÷ pgbench | DB xact/s | server CPU ms/req | "
             "server switches/req | DB CPU ms/req | × Kinto | ÷ floor | errors |", "|" + "---|" * 21]
    for run in runs:
        for r in run["results"]:
            if r.get("failed"):
                lines.append(f"| {run['backend']} | {r['case']} | failed |" + " |" * 18)
                continue
            errors = (r.get("socket_errors") or 0) + (r.get("status_errors") or 0)
            lines.append("| " + " | ".join([
                run["backend"], r["case"], str(r.get("connections", "")), fmt(r.get("rps"), ",.0f"), fmt(r.get("p50_ms"), ".1f"),
                fmt(r.get("p90_ms"), ".1f"), fmt(r.get("p99_ms"), ".1f"), fmt(r.get("max_ms"), ",.0f"), fmt(r.get("tail"), ".1f"),
                fmt(r.get("bytes_per_answer"), ",.0f"), f"{fmt(r.get('rss_before_mb'), ',.0f')} → {fmt(r.get('rss_peak_mb'), ',.0f')}",
                fmt(r.get("ratio_health"), ".3f"), fmt(r.get("pgbench_tps"), ",.0f"), fmt(r.get("ratio_pgbench"), ".2f"),
                fmt(r.get("db_xact_per_s"), ",.0f"), fmt(r.get("server_cpu_ms_per_req"), ".2f"),
                fmt(r.get("server_switches_per_req"), ".1f"), fmt(r.get("db_cpu_ms_per_req"), ".2f"), fmt(r.get("ratio_kinto"), ".1f"), fmt(r.get("ratio_floor"), ".2f"), str(errors)]) + " |")
    standby_rows = [(run, r) for run in runs for r in run["results"] if r.get("standby_share") is not None]
    if standby_rows:
        # Without standbys: the same case on the same data right before the standbys started (alone_*); a results.json
        # from before that baseline existed falls back to the main pass's row (on data with fewer writes).
        main = {(run["backend"].split("+")[0], r["case"]): r for run in runs for r in run["results"] if "+" not in run["backend"]}
        lines += ["", "| backend | case | req/s | p99 ms | share read on standbys | primary DB CPU ms/req | "
                  "standbys DB CPU ms/req | primary DB CPU ÷ without standbys | req/s ÷ without standbys | "
                  "p99 ÷ without standbys |", "|" + "---|" * 10]
        for run, r in standby_rows:
            old = main.get((run["backend"].split("+")[0], r["case"])) or {}
            base = {k: r.get(f"alone_{k}", old.get(k)) for k in ("rps", "db_cpu_ms_per_req", "p99_ms")}
            ratio = lambda k: r[k] / base[k] if base.get(k) and r.get(k) is not None else None
            lines.append("| " + " | ".join([
                run["backend"], r["case"], fmt(r.get("rps"), ",.0f"), fmt(r.get("p99_ms"), ".1f"),
                fmt(r["standby_share"], ".2f"), fmt(r.get("db_cpu_ms_per_req"), ".3f"),
                fmt(r.get("standby_db_cpu_ms_per_req"), ".3f"), fmt(ratio("db_cpu_ms_per_req"), ".3f"),
                fmt(ratio("rps"), ".2f"), fmt(ratio("p99_ms"), ".2f")]) + " |")
    return "\n".join(lines)


def plot(runs, path, when=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib (pip install matplotlib): no plot")
        return
    fig, axes = plt.subplots(1, 3, figsize=(22, 5.5))
    names = []
    for run in runs:
        for r in run["results"]:
            if r.get("ratio_health") and r["case"] != "health" and r["case"] not in names:  # health is 1 by definition
                names.append(r["case"])
    width = 0.8 / max(1, len(runs))
    for k, run in enumerate(runs):
        by = {r["case"]: r for r in run["results"]}
        xs = [i + k * width for i in range(len(names))]
        axes[0].bar(xs, [(by.get(n) or {}).get("ratio_health") or 0 for n in names], width, label=run["backend"])
    axes[0].set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(names))], names, rotation=40, ha="right")
    axes[0].set_yscale("log")
    axes[0].set_title("requests/s ÷ GET /health requests/s (same run)")
    axes[0].legend()
    axes[0].grid(axis="y", alpha=0.3)
    pg_rows = [r for run in runs if run["backend"].startswith("postgres") for r in run["results"] if r.get("ratio_pgbench")]
    axes[1].bar(range(len(pg_rows)), [r["ratio_pgbench"] for r in pg_rows], color="tab:orange")
    axes[1].axhline(0.5, color="grey", linestyle="--", linewidth=1, label="target 0.5 (reads, group)")
    axes[1].axhline(0.3, color="grey", linestyle=":", linewidth=1, label="target 0.3 (writes)")
    axes[1].set_xticks(range(len(pg_rows)), [r["case"] + r["backend"][len("postgres"):] for r in pg_rows], rotation=40, ha="right")
    axes[1].set_title("PostgreSQL: requests/s ÷ pgbench tps of the same SQL")
    axes[1].legend()
    axes[1].grid(axis="y", alpha=0.3)
    # The tail: p99 as bars, p50 as a dot and max as a tick on each, per case and backend (log scale).
    lat_names = []
    for run in runs:
        for r in run["results"]:
            if r.get("p99_ms") and r["case"] not in lat_names:
                lat_names.append(r["case"])
    for k, run in enumerate(runs):
        by = {r["case"]: r for r in run["results"]}
        xs = [i + k * width for i in range(len(lat_names))]
        rows = [by.get(n) or {} for n in lat_names]
        bars = axes[2].bar(xs, [r.get("p99_ms") or 0 for r in rows], width, label=f"{run['backend']} p99", alpha=0.8)
        colour = bars.patches[0].get_facecolor() if bars.patches else None
        axes[2].plot(xs, [r.get("p50_ms") or float("nan") for r in rows], "o", color="black", markersize=3,
                     label="p50" if k == 0 else None)
        axes[2].plot(xs, [r.get("max_ms") or float("nan") for r in rows], "_", color=colour, markersize=9,
                     label=f"{run['backend']} max")
    axes[2].axhline(25, color="grey", linestyle="--", linewidth=1, label="target p99 25 ms")
    axes[2].set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(lat_names))], lat_names, rotation=40, ha="right")
    axes[2].set_yscale("log")
    axes[2].set_title("latency ms: p99 (bar), p50 (dot), max (tick)")
    axes[2].legend(fontsize=7)
    axes[2].grid(axis="y", alpha=0.3)
    fig.suptitle(f"SyncAPI bench, {when or time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, {args.duration:g} s per case, "
                 f"wrk -c{args.connections}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def smoke_check(runs):
    problems = []
    for run in runs:
        if not run["server_alive_at_end"]:
            problems.append(f"{run['backend']}: the server exited")
        for r in run["results"]:
            name = f"{run['backend']}/{r['case']}"
            if r.get("failed"):
                problems.append(f"{name}: wrk failed")
                continue
            if r["case"].startswith("streams-idle"):
                if r.get("streams_opened", 0) < args.streams:
                    problems.append(f"{name}: {r.get('streams_opened')} of {args.streams} streams opened ({r.get('streams_refused')})")
                continue
            s = r.get("status") or [0] * 5
            if s[1] == 0:
                problems.append(f"{name}: no 2xx answer")
            if s[4] or s[3]:
                problems.append(f"{name}: {s[3]} 4xx and {s[4]} 5xx answers")
            if r.get("socket_errors"):
                problems.append(f"{name}: {r['socket_errors']} socket errors")
            if r.get("pgbench_failed"):
                problems.append(f"{name}: pgbench had {r['pgbench_failed']} failed transactions")
            if r["case"] in PGBENCH and run["backend"] == "postgres" and not r.get("pgbench_tps"):
                problems.append(f"{name}: pgbench did not run")
            if r.get("stream_changes") == 0:
                problems.append(f"{name}: the streams received no change event")
    return problems


def main():
    if args.report:
        saved = json.load(open(args.report))
        for k in ("duration_s", "connections"):
            setattr(args, {"duration_s": "duration"}.get(k, k), saved["meta"][k])
        print(table(saved["runs"]))
        plot(saved["runs"], os.path.join(os.path.dirname(os.path.abspath(args.report)), "performance.png"),
             when=saved["meta"]["date"][:16].replace("T", " "))
        return
    started = time.time()
    runs = []
    for backend in args.backends.split(","):
        work = tempfile.mkdtemp(prefix=f"syncapi-bench-{backend}-")
        log(f"{backend}: working in {work}")
        try:
            runs += bench_backend(backend, work)
        finally:
            if not os.environ.get("BENCH_KEEP"):
                shutil.rmtree(work, ignore_errors=True)
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "binary": BIN, "cores": os.cpu_count(), "duration_s": DUR,
            "connections": args.connections, "families": args.families, "big": BIG, "streams": args.streams, "smoke": args.smoke,
            "seconds": round(time.time() - started), "load_average_at_end": os.getloadavg(),
            "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()}
    if any(run["backend"] == "kinto" for run in runs):
        sys.path.insert(0, HERE)
        import kinto_case
        kinto_case.ratios(runs)
    md = table(runs)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(md + "\n")
    keys = ["backend", "case", "connections", "requests", "rps", "p50_ms", "p90_ms", "p99_ms", "max_ms", "tail", "bytes_per_answer", "rss_before_mb", "rss_peak_mb",
            "rss_after_mb", "ratio_health", "pgbench_tps", "pgbench_latency_ms", "ratio_pgbench", "db_xact_per_s", "socket_errors",
            "status_errors", "streams_opened", "stream_changes", "server_cpu_ms_per_req", "server_switches_per_req", "db_cpu_ms_per_req", "server_cpu_share", "ratio_kinto", "ratio_floor"]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore")
        w.writeheader()
        for run in runs:
            w.writerows(run["results"])
    if not args.smoke:
        plot(runs, os.path.join(args.out, "performance.png"))
    print(md)
    print(f"\n{meta['cores']} cores, {DUR:g} s per case, wrk -t{args.threads}, {args.families} families + {args.big} contacts, "
          f"{args.streams} streams; {meta['seconds']} s in all; results in {args.out}")
    for run in runs:
        if run["server_log_errors"]:
            print(f"{run['backend']} server log errors (first lines):\n  " + "\n  ".join(run["server_log_errors"][:5]))
    if args.smoke:
        problems = smoke_check(runs)
        if problems:
            print("smoke: FAILED\n  " + "\n  ".join(problems))
            sys.exit(1)
        print("smoke: ok")


main()
