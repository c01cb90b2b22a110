#!/usr/bin/env python3
"""Holds COUNT open `GET /api/v1/changes` streams of one family and measures how long one write takes to reach all of
them (protocol §9), and what the held streams cost the server (RSS, database transactions per second at rest).

Why: an instance's ceiling for live streams is set by what one write fanned out to every stream of a family costs, and
by what an idle stream holds in memory. bench/streams.py spreads streams over many families while wrk writes; this
client puts every stream on one family so that one write wakes all of them at once.

    bench/fanout.py URL TOKEN COUNT [--addresses 200] [--rounds 3] [--pid SERVER_PID] [--psql CONNINFO] [--idle 10]

Streams are opened from 127.0.0.2 upwards (COUNT / --addresses per source address: one address has ~28,000 ephemeral
ports), with an asyncio Protocol per stream (no StreamReader, no per-line coroutine) so that the client's own cost per
event stays small. Each round: PUT one contact, note the time the PUT was sent, and for each stream the time its
`event: change` arrived; the round's latencies are those differences, client overhead included (an upper bound).
With --psql, transactions per second of the database (pg_stat_database.xact_commit) are sampled over --idle seconds
with the streams at rest, --settle seconds (11) after the last one opened. Prints one JSON object.
"""
import argparse, asyncio, json, resource, subprocess, time, urllib.parse, uuid

ap = argparse.ArgumentParser()
ap.add_argument("url")
ap.add_argument("token")
ap.add_argument("count", type=int)
ap.add_argument("--addresses", type=int, default=200)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--pid", type=int)
ap.add_argument("--psql", help="conninfo of the server's database, to sample its transactions per second")
ap.add_argument("--idle", type=float, default=10)
ap.add_argument("--settle", type=float, default=11, help="seconds between the last stream opened and the idle sample")
ap.add_argument("--open-concurrency", type=int, default=500)
args = ap.parse_args()
target = urllib.parse.urlsplit(args.url)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
auth = f"Authorization: Bearer {args.token}\r\n"


class Stream(asyncio.Protocol):
    """One held stream: its status, and the arrival time of the first change event since it was armed."""

    def __init__(self, opened):
        self.opened, self.status, self.armed, self.arrived, self.transport = opened, None, False, None, None
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self.status is None:
            self.status = data[9:12].decode(errors="replace")
            if not self.opened.done():
                self.opened.set_result(self.status)
        if self.armed and self.arrived is None and b"event: change" in data:
            self.arrived = time.monotonic()

    def connection_lost(self, exc):
        self.closed = True
        if not self.opened.done():
            self.opened.set_result("closed")


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def xact_commit():
    out = subprocess.run(["psql", args.psql, "-Atc", "SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


async def request(method, path, body=None):
    reader, writer = await asyncio.open_connection(target.hostname, target.port)
    data = json.dumps(body).encode() if body is not None else b""
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: bench\r\n{auth}Content-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    raw = await reader.read()
    writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = b""
        while payload:
            size, _, rest = payload.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if n == 0:
                break
            body, payload = body + rest[:n], rest[n + 2:]
        payload = body
    return int(head.split(b" ")[1]), payload


async def main():
    loop = asyncio.get_running_loop()
    status, payload = await request("GET", "/api/v1/ctcsync")
    assert status == 200, (status, payload[:200])
    date = json.loads(payload)["date"]
    streams, refused = [], {}
    gate = asyncio.Semaphore(args.open_concurrency)
    started = time.monotonic()

    async def open_one(n):
        async with gate:
            opened = loop.create_future()
            source = f"127.0.{2 + (n % args.addresses) // 250}.{(n % args.addresses) % 250 + 2}"
            try:
                _, proto = await loop.create_connection(lambda: Stream(opened), target.hostname, target.port,
                                                        local_addr=(source, 0))
            except OSError as e:
                refused[type(e).__name__] = refused.get(type(e).__name__, 0) + 1
                return
            proto.transport.write(f"GET /api/v1/changes?date={date} HTTP/1.1\r\nHost: bench\r\n{auth}"
                                  f"Accept: text/event-stream\r\n\r\n".encode())
            code = await opened
            if code == "200":
                streams.append(proto)
            else:
                refused[code] = refused.get(code, 0) + 1
                proto.transport.close()

    await asyncio.gather(*[open_one(n) for n in range(args.count)])
    result = {"wanted": args.count, "opened": len(streams), "refused": refused,
              "open_seconds": round(time.monotonic() - started, 1)}
    if args.pid:
        result["server_rss_mib"] = round(rss_mib(args.pid), 1)
    if args.psql:
        # PostgreSQL (15 and later) adds a backend's counts to pg_stat_database up to 10 s after its last transaction
        # when it goes idle: sampled at once, the streams' opening reads were counted as traffic at rest.
        await asyncio.sleep(args.settle)  # waiting out that flush interval, not for an event of the server
        before = xact_commit()
        await asyncio.sleep(args.idle)  # a rate is counted over a span of time: nothing is awaited here
        result["db_xact_per_s_idle"] = round((xact_commit() - before - 1) / args.idle, 2)
    rounds = []
    for r in range(args.rounds):
        for s in streams:
            s.armed, s.arrived = True, None
        sent = time.monotonic()
        status, payload = await request("PUT", f"/api/v1/contacts/fanout-{uuid.uuid4()}",
                                        {"firstName": "Fan", "lastName": f"Out {r}"})
        assert status in (200, 201), (status, payload[:200])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(s.arrived is None and not s.closed for s in streams):
            await asyncio.sleep(0.01)  # polls the streams' own records; the 30 s bound only ends a lost round
        got = sorted(s.arrived - sent for s in streams if s.arrived is not None)
        missed = sum(1 for s in streams if s.arrived is None)

        def pct(p):
            return round(got[min(len(got) - 1, int(p * len(got)))], 3) if got else None

        rounds.append({"received": len(got), "missed": missed, "p50_s": pct(0.50), "p99_s": pct(0.99),
                       "max_s": round(got[-1], 3) if got else None})
    result["rounds"] = rounds
    result["closed_by_server"] = sum(1 for s in streams if s.closed)
    if args.pid:
        result["server_rss_mib_after"] = round(rss_mib(args.pid), 1)
    for s in streams:
        s.transport.close()
    print(json.dumps(result))


asyncio.run(main())
