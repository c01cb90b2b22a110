#!/usr/bin/env python3
"""The SDK ingest case (issue 18, item 7): a first sync of a big family through the Swift SDK, next to the raw
download of the same list, measured in the same run.

    bench/sdk_ingest.py [--bin .build/release/syncapi] [--contacts 100000] [--runs 3] [--sdk Clients/SyncClient]
                        [--work DIR] [--no-build]

Starts the release server on a throw-away SQLite file, seeds one family of N contacts through the HTTP API
(bench/seed.py --families 0 --big N), then, alternately, `--runs` times each:
- raw: `curl --compressed` of `GET /api/v1/ctcsync` (gzip, the same token), the whole list downloaded and decoded;
- sdk: bench/sdk_ingest/main.swift, a release executable built from a temporary package that depends on the SDK by
  path (`--sdk`, the repository's by default): a fresh replica, `sync()` timed, its peak RSS (VmHWM) read at the end
  of the sync and again after `all(Contact.self)`, and the peak RSS of the whole process from /usr/bin/time -v.
Prints a table with rows/s, seconds, peak RSS and the ratio SDK/raw (medians), then each run's first sync against the
same run's raw download (the ratio per run: a goal "in every run" is read there), and one JSON line.
The executable is built with its own scratch path, ROOT/.build-sdk-ingest (git-ignored) unless --scratch says where.
"""
import argparse, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--bin", default=os.environ.get("BIN", ".build/release/syncapi"), help="the release server binary")
ap.add_argument("--contacts", type=int, default=100_000)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--sdk", default=os.path.join(ROOT, "Clients/SyncClient"), help="the SDK package the executable uses")
ap.add_argument("--work", help="work folder (default: a temporary one, removed at the end); a folder a run with the "
                "same --contacts seeded is used again as it is (seeding 1,000,000 contacts takes minutes)")
ap.add_argument("--no-build", action="store_true", help="use the executable already built")
ap.add_argument("--scratch", default=os.path.join(ROOT, ".build-sdk-ingest"),
                help="where the executable's package and build go (default: ROOT/.build-sdk-ingest)")
ap.add_argument("--exe", action="append", default=[], metavar="LABEL=PATH",
                help="also run this prebuilt sdk-ingest executable (e.g. one built against an older SDK), in the same run")
args = ap.parse_args()

BIN = os.path.abspath(os.path.join(ROOT, args.bin) if not os.path.isabs(args.bin) else args.bin)
if not os.access(BIN, os.X_OK):
    sys.exit(f"sdk_ingest: no server binary at {BIN}")
SCRATCH = os.path.abspath(args.scratch)


def log(message):
    print(f"sdk_ingest: {message}", file=sys.stderr, flush=True)


def build():
    """Writes the temporary package (the executable's source is bench/sdk_ingest/main.swift) and builds it in release."""
    package = os.path.join(SCRATCH, "package")
    os.makedirs(os.path.join(package, "Sources", "sdk-ingest"), exist_ok=True)
    shutil.copy(os.path.join(HERE, "sdk_ingest", "main.swift"), os.path.join(package, "Sources", "sdk-ingest", "main.swift"))
    with open(os.path.join(package, "Package.swift"), "w") as f:
        f.write(f"""// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "sdk-ingest",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SyncClient", path: {json.dumps(os.path.abspath(args.sdk))}),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "sdk-ingest",
            dependencies: [.product(name: "SyncClient", package: "SyncClient"), .product(name: "Logging", package: "swift-log")])
    ],
    swiftLanguageModes: [.v6]
)
""")
    scratch = os.path.join(SCRATCH, "scratch")
    if not args.no_build:
        log(f"building the SDK executable (release) against {args.sdk}")
        subprocess.run(["swift", "build", "-c", "release", "--package-path", package, "--scratch-path", scratch],
                       check=True, stdout=sys.stderr)
    return os.path.join(scratch, "release", "sdk-ingest")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, token):
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def raw_download(url, token):
    """curl of the whole list with gzip; its time, bytes on the wire, and the rows of the decoded answer."""
    body = os.path.join(work, "raw.json")
    out = subprocess.run(
        ["curl", "-s", "--compressed", "-o", body, "-H", "Authorization: Bearer " + token,
         "-w", "%{http_code} %{time_total} %{size_download}", url + "/api/v1/ctcsync"],
        check=True, capture_output=True, text=True).stdout.split()
    if out[0] != "200":
        sys.exit(f"sdk_ingest: the raw download answered {out[0]}")
    with open(body, "rb") as f:
        rows = len(json.load(f)["updated"])
    return {"seconds": float(out[1]), "wireBytes": int(out[2]), "rows": rows}


def sdk_sync(exe, url, token, account, family):
    replica = os.path.join(work, "replica.sqlite")
    timed = subprocess.run(["/usr/bin/time", "-v", exe, url, token, account, family, replica], capture_output=True, text=True)
    if timed.returncode != 0:
        sys.exit(f"sdk_ingest: the SDK run failed:\n{timed.stdout}\n{timed.stderr}")
    report = json.loads(timed.stdout.strip().splitlines()[-1])
    for line in timed.stderr.splitlines():
        if "Maximum resident set size" in line:
            report["processPeakRSSMiB"] = int(line.split(":")[-1]) / 1024
    report["replicaMiB"] = os.path.getsize(replica) / 2**20
    return report


exes = {"sdk": build()}
for item in args.exe:
    label, _, path = item.partition("=")
    exes[label] = os.path.abspath(path)
work = args.work or tempfile.mkdtemp(prefix="sdk-ingest-")
os.makedirs(work, exist_ok=True)
port = free_port()
url = f"http://127.0.0.1:{port}"
server_log = open(os.path.join(work, "server.log"), "w")
server = subprocess.Popen(
    [BIN, "serve", "--port", str(port), "--database", f"sqlite:{os.path.join(work, 'bench.sqlite')}", "--bcrypt-cost", "4",
     "--signup-rate", "1000000", "--login-rate", "1000000",
     # Room for the list, the account's own items and the runs' remote changes (the default holds 1,000,000 items).
     "--max-items-per-family", str(max(1_000_000, args.contacts + 1000))],
    stdout=server_log, stderr=subprocess.STDOUT, env={**os.environ, "LOG_LEVEL": "warning"})
try:
    for _ in range(300):
        if server.poll() is not None:
            sys.exit(f"sdk_ingest: the server exited at start (log: {server_log.name})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    t0 = time.time()
    data = os.path.join(work, "data")
    seeded = os.path.join(data, f"big-{args.contacts}.txt")
    if os.path.exists(seeded):
        log(f"using the {args.contacts} contacts seeded in {work}")
    else:
        subprocess.run([sys.executable, os.path.join(HERE, "seed.py"), url, data, "--families", "0", "--big", str(args.contacts)],
                       check=True, stdout=subprocess.DEVNULL)
        log(f"seeded {args.contacts} contacts in {time.time() - t0:.0f} s")
    with open(seeded) as f:
        token, _, family = f.read().split()
    account = get(url + "/api/v1/familysync", token)["accounts"]["updated"][0]["id"]

    raws, runs = [], {label: [] for label in exes}
    raw_download(url, token)  # warm-up: the server's caches and the list's pages, as for every run after
    for run in range(args.runs):
        raws.append(raw_download(url, token))
        log(f"run {run + 1}: raw {raws[-1]['seconds']:.3f} s")
        for label, path in exes.items():
            runs[label].append(sdk_sync(path, url, token, account, family))
            log(f"run {run + 1}: {label} {runs[label][-1]['syncSeconds']:.3f} s "
                f"({runs[label][-1]['syncSeconds'] / raws[-1]['seconds']:.2f} x raw), "
                f"peak RSS {runs[label][-1].get('processPeakRSSMiB', 0):.0f} MiB")
finally:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()

raw_s = statistics.median(r["seconds"] for r in raws)
summary = {"contacts": args.contacts, "runs": args.runs, "rawRows": raws[0]["rows"], "rawSeconds": raw_s,
           "rawRowsPerSecond": raws[0]["rows"] / raw_s, "rawWireMiB": raws[0]["wireBytes"] / 2**20, "sdk": {}}
print(f"| case | rows | seconds (median of {args.runs}) | rows/s | ratio to raw | peak RSS after sync | after `all(Contact.self)` | one remote change, sync (median, max) | no change, sync (median) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
print(f"| raw `GET /api/v1/ctcsync` (curl, gzip, {summary['rawWireMiB']:.1f} MiB on the wire) | {raws[0]['rows']:,} | "
      f"{raw_s:.3f} | {summary['rawRowsPerSecond']:,.0f} | 1 | | | | |")
for label, reports in runs.items():
    sdk_s = statistics.median(s["syncSeconds"] for s in reports)
    rows = reports[0]["rows"]
    one = {
        "rows": rows, "seconds": sdk_s, "rowsPerSecond": rows / sdk_s, "ratioToRaw": sdk_s / raw_s,
        "peakRSSAfterSyncMiB": max(s["peakRSSAfterSyncMiB"] for s in reports),
        "peakRSSAfterReadMiB": max(s["peakRSSAfterReadMiB"] for s in reports),
        "processPeakRSSMiB": max(s.get("processPeakRSSMiB", 0) for s in reports),
        "readSeconds": statistics.median(s["readSeconds"] for s in reports), "replicaMiB": reports[0]["replicaMiB"],
        "applyMedianMs": statistics.median(s.get("applyMedianMs", 0) for s in reports),
        "applyMaxMs": max(s.get("applyMaxMs", 0) for s in reports),
        "idleMedianMs": statistics.median(s.get("idleMedianMs", 0) for s in reports),
        "applyOnlyMedianMs": statistics.median(s.get("applyOnlyMedianMs", 0) for s in reports),
        "applyOnlyMaxMs": max(s.get("applyOnlyMaxMs", 0) for s in reports),
        "firstDownloadSeconds": statistics.median(s.get("firstDownloadSeconds", 0) for s in reports),
        "firstApplySeconds": statistics.median(s.get("firstApplySeconds", 0) for s in reports),
        "firstStagedSeconds": statistics.median(s.get("firstStagedSeconds", s.get("firstDownloadSeconds", 0)) for s in reports),
        "perRun": [{"seconds": s["syncSeconds"], "rawSeconds": r["seconds"], "ratioToRaw": s["syncSeconds"] / r["seconds"],
                    "peakRSSAfterSyncMiB": s["peakRSSAfterSyncMiB"], "processPeakRSSMiB": s.get("processPeakRSSMiB", 0),
                    "downloadSeconds": s.get("firstDownloadSeconds", 0),
                    "stagedSeconds": s.get("firstStagedSeconds", s.get("firstDownloadSeconds", 0)),
                    "applySeconds": s.get("firstApplySeconds", 0)} for s, r in zip(reports, raws)],
    }
    summary["sdk"][label] = one
    print(f"| {label}: first `sync()` | {rows:,} | {sdk_s:.3f} | {one['rowsPerSecond']:,.0f} | {one['ratioToRaw']:.2f} | "
          f"{one['peakRSSAfterSyncMiB']:.0f} MiB | {one['peakRSSAfterReadMiB']:.0f} MiB (read {one['readSeconds']:.2f} s) | "
          f"{one['applyMedianMs']:.1f} ms, {one['applyMaxMs']:.1f} ms | {one['idleMedianMs']:.1f} ms |")
print()
print("| run | raw (curl) | " + " | ".join(f"{label}: first `sync()` (÷ raw, peak RSS after sync; download, staged, apply)"
                                      for label in summary["sdk"]) + " |")
print("|---:|---:|" + "---:|" * len(summary["sdk"]))
for run in range(args.runs):
    cells = []
    for label, one in summary["sdk"].items():
        r = one["perRun"][run]
        cells.append(f"{r['seconds']:.3f} s (**{r['ratioToRaw']:.2f}**, {r['peakRSSAfterSyncMiB']:.0f} MiB; "
                     f"{r['downloadSeconds']:.2f}, {r['stagedSeconds']:.2f}, {r['applySeconds']:.2f} s)")
    print(f"| {run + 1} | {raws[run]['seconds']:.3f} s | " + " | ".join(cells) + " |")
print()
for label, one in summary["sdk"].items():
    print(f"- {label}: first sync's download {one['firstDownloadSeconds']:.3f} s, staging done at {one['firstStagedSeconds']:.3f} s, "
          f"apply {one['firstApplySeconds']:.3f} s; "
          f"one remote change's apply alone (the write transaction) median {one['applyOnlyMedianMs']:.3f} ms, "
          f"max {one['applyOnlyMaxMs']:.3f} ms")
print(json.dumps(summary))
if not args.work:
    shutil.rmtree(work, ignore_errors=True)
