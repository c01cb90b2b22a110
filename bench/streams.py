#!/usr/bin/env python3
"""Holds many open `GET /api/v1/changes` streams (server-sent events) against a SyncAPI server, for bench/run.

Why: an open app holds one stream; the benchmark measures what N open streams cost the server (RSS, database
transactions/s, write throughput) while writes land. wrk cannot hold idle streams, so this asyncio client does: one
coroutine per stream, no threads, no C extension.

    bench/streams.py URL FAMILIES_FILE COUNT STATE_DIR

Streams are spread round-robin over the families of FAMILIES_FILE (bench/seed.py's "token D0 D1 familyId" lines),
each starting from the family's current date (read once per family), so a stream only hears about later writes.
Writes STATE_DIR/ready (JSON) once every stream got its answer head, then holds them until SIGTERM or SIGINT, then
writes STATE_DIR/result.json: opened, refused (by status), failed, change events and pings received, streams the
server closed while held.
"""
import asyncio, json, os, resource, signal, sys, time, urllib.parse

url, families_file, count, state_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
target = urllib.parse.urlsplit(url)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 1024)), hard))

stats = {"wanted": count, "opened": 0, "refused": {}, "failed": 0, "changes": 0, "pings": 0, "closedByServer": 0}
families = [line.split() for line in open(families_file) if line.strip()]


async def current_date(token, d1):
    """The family's date now: a delta from D1 answers it (one request per family)."""
    reader, writer = await asyncio.open_connection(target.hostname, target.port)
    writer.write(f"GET /api/v1/ctcsync?date={d1} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
                 f"Connection: close\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])["date"] if b" 200 " in raw.split(b"\r\n", 1)[0] else d1


async def stream(token, date, opened_event, stop):
    try:
        reader, writer = await asyncio.open_connection(target.hostname, target.port)
        writer.write(f"GET /api/v1/changes?date={date} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
                     f"Accept: text/event-stream\r\n\r\n".encode())
        status = (await reader.readline()).split(b" ")
        code = status[1].decode() if len(status) > 1 else "none"
    except OSError:
        stats["failed"] += 1
        opened_event()
        return
    if code != "200":
        stats["refused"][code] = stats["refused"].get(code, 0) + 1
        opened_event()
        writer.close()
        return
    stats["opened"] += 1
    opened_event()
    try:
        while not stop.is_set():
            line = await reader.readline()
            if not line:
                stats["closedByServer"] += 1
                break
            if line.startswith(b"event: change"):
                stats["changes"] += 1
            elif line.startswith(b": ping"):
                stats["pings"] += 1
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    started = time.time()
    sem = asyncio.Semaphore(64)

    async def date_of(f):
        async with sem:
            return await current_date(f[0], f[2])

    dates = await asyncio.gather(*[date_of(f) for f in families[:count]])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    pending = count
    all_opened = asyncio.Event()
    opening = asyncio.Semaphore(200)

    def opened_one():
        nonlocal pending
        pending -= 1
        opening.release()
        if pending == 0:
            all_opened.set()

    tasks = []
    for n in range(count):
        await opening.acquire()
        f = families[n % len(families)]
        tasks.append(asyncio.create_task(stream(f[0], dates[n % len(dates)], opened_one, stop)))
    await all_opened.wait()
    stats["openSeconds"] = round(time.time() - started, 1)
    with open(os.path.join(state_dir, "ready"), "w") as fh:
        json.dump(stats, fh)
    await stop.wait()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    with open(os.path.join(state_dir, "result.json"), "w") as fh:
        json.dump(stats, fh)


asyncio.run(main())
