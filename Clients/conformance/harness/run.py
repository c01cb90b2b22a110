#!/usr/bin/env python3
"""The conformance suite of the SyncAPI client SDKs: every scenario of ../scenarios, run by every SDK's adapter against
the real server on every backend (a fresh server and database per scenario and backend). Exits 1 when a scenario
fails for any SDK, or when the SDKs' traces of a scenario differ (a divergence). See ../README.md."""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scenario import Failure, ScenarioRun  # noqa: E402
from servers import IdentityProvider, Postgres, Proxy, Server  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def arguments():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default=os.environ.get("SYNCAPI_BIN", "/work/bin/syncapi"), help="the syncapi binary")
    parser.add_argument("--swift-adapter", help="the Swift SDK's adapter executable (SyncClientConformance)")
    parser.add_argument("--ts-adapter", help="the TypeScript client's compiled adapter (conformance-adapter.js)")
    parser.add_argument("--node", default="node", help="Node 22 for the TypeScript adapter")
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgres"], help="default: both")
    parser.add_argument("--scenarios", default=os.path.join(HERE, "scenarios"), help="a folder of scenario files, or one file")
    parser.add_argument("--only", action="append", help="run only these scenarios (by name)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, replicas)")
    return parser.parse_args()


def load(path, only):
    files = [path] if os.path.isfile(path) else [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".json")]
    scenarios = []
    for file in files:
        with open(file) as handle:
            scenario = json.load(handle)
        scenario.setdefault("name", os.path.basename(file)[:-5])
        missing = [key for key in ("replica", "pending", "failed") if key not in scenario.get("expect", {})]
        if missing:
            sys.exit(f"conformance: {file}: its expect names no {', '.join(missing)} (every scenario names all three)")
        if not only or scenario["name"] in only:
            scenarios.append(scenario)
    return scenarios


def main():
    options = arguments()
    sdks = {}
    if options.swift_adapter:
        sdks["swift"] = [options.swift_adapter]
    if options.ts_adapter:
        sdks["ts"] = [options.node, "--experimental-sqlite", "--disable-warning=ExperimentalWarning", options.ts_adapter]
    if not sdks:
        sys.exit("conformance: name at least one adapter (--swift-adapter, --ts-adapter)")
    scenarios = load(options.scenarios, options.only)
    root = tempfile.mkdtemp(prefix="syncapi-conformance-")
    postgres = None
    results = []  # (backend, scenario, sdk, outcome, detail)
    divergences = []
    try:
        for backend in options.backend or ["sqlite", "postgres"]:
            if backend == "postgres" and postgres is None:
                postgres = Postgres(root)
            for scenario in scenarios:
                folder = os.path.join(root, backend, scenario["name"])
                os.makedirs(folder)
                traces = {}
                for sdk in sdks:
                    # A server and a database of its own for each run: a scenario may restart the server with another model.
                    started = time.monotonic()
                    database = postgres.new_database() if backend == "postgres" else f"sqlite:{folder}/{sdk}-server.sqlite"
                    os.makedirs(os.path.join(folder, sdk))
                    identity = IdentityProvider(os.path.join(folder, sdk)) if scenario.get("identity") else None
                    flags = scenario.get("serverArguments", []) + (["--identity", identity.file] if identity else [])
                    server = Server(options.server, database, os.path.join(folder, sdk), flags)
                    model = scenario.get("model")
                    server.start(os.path.join(HERE, "models", model) if model else None)
                    proxy = Proxy(lambda: server.port)
                    try:
                        run = ScenarioRun(scenario, sdk, sdks, server, proxy, os.path.join(folder, sdk), os.path.join(HERE, "models"), identity)
                        proxy.set_up(True)
                        try:
                            run.run()
                            outcome, detail = "pass", ""
                        except Exception as error:  # noqa: BLE001 — any failure of a run is reported, the others go on
                            outcome, detail = "FAIL", f"{type(error).__name__ if not isinstance(error, Failure) else ''} {error}".strip()
                        known = scenario.get("knownDivergence", {}).get(sdk)
                        if known and outcome == "FAIL":
                            outcome, detail = "known", f"{known} ({detail[:200]})"
                        elif known:
                            outcome, detail = "FAIL", f"passes, but is recorded as a known divergence: {known}"
                        traces[sdk] = run.trace
                        results.append((backend, scenario["name"], sdk, outcome, detail, time.monotonic() - started))
                        print(f"{outcome:5} {backend:8} {sdk:5} {scenario['name']} ({time.monotonic() - started:.1f} s) {detail}", flush=True)
                    finally:
                        proxy.close()
                        server.stop()
                outcomes = {r[2]: r[3] for r in results if r[0] == backend and r[1] == scenario["name"]}
                if len(traces) == 2 and set(outcomes.values()) == {"pass"} and traces["swift"] != traces["ts"]:
                    divergences.append((backend, scenario["name"], first_difference(traces["swift"], traces["ts"])))
                    print(f"DIVERGENCE {backend} {scenario['name']}: {divergences[-1][2]}", flush=True)
                elif "pass" in outcomes.values() and "FAIL" in outcomes.values():
                    divergences.append((backend, scenario["name"], "one SDK passes and the other fails"))
    finally:
        if postgres:
            postgres.stop()
        if options.keep or any(r[3] == "FAIL" for r in results) or divergences:
            print(f"conformance: logs and replicas in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    failed = [r for r in results if r[3] == "FAIL"]
    print(f"conformance: {len(scenarios)} scenarios, {len(results)} runs: {len(results) - len(failed)} passed or known, {len(failed)} failed, "
          f"{len(divergences)} divergences")
    for backend, name, why in divergences:
        print(f"  divergence {backend} {name}: {why}")
    sys.exit(1 if failed or divergences else 0)


def first_difference(swift, ts):
    for index, (a, b) in enumerate(zip(swift, ts)):
        if a != b:
            return f"answer {index + 1} ({a.get('op') or a.get('check')}): swift {json.dumps(a)[:300]} / ts {json.dumps(b)[:300]}"
    return f"swift answered {len(swift)} commands, ts {len(ts)}"


if __name__ == "__main__":
    main()
