#!/usr/bin/env python3
"""Loads generated benchmark data into a running SyncAPI server, through its HTTP API (the contract), and writes what
the load generators need.

Why: every benchmark case picks a random family per request, so the data must be many families of realistic sizes,
plus the big lists the full-sync cases read. Writing through `POST /group` (20 PUTs per group, the server's default
limit read from `GET /api/v1/`) with parallel workers keeps the server's own write path the only writer.

    bench/seed.py URL OUTDIR [--families N] [--big 1000,100000] [--workers W] [--seed S]

Per family: signup, then contacts, events, places, members, threads with messages, wall posts with comments (sizes
drawn from ranges below). Then the family's date D0 is read, 15 more writes land (10 contacts, 2 events, a place, a
message, a comment) and the date D1 after them is read: a sync with D0 has changes, a sync with D1 has none.
The big families (`--big`) hold only contacts.

Writes OUTDIR/families.txt (one line per family: token D0 D1 familyId), OUTDIR/big-<n>.txt (token D0 familyId) and
OUTDIR/seed.json (counts, timings, the server's limits).
"""
import argparse, http.client, json, os, random, sys, threading, time, urllib.parse
from concurrent.futures import ThreadPoolExecutor

ap = argparse.ArgumentParser()
ap.add_argument("url")
ap.add_argument("outdir")
ap.add_argument("--families", type=int, default=1000)
ap.add_argument("--big", default="1000,100000", help="comma list of contact counts of the big families ('' for none)")
ap.add_argument("--workers", type=int, default=6)
ap.add_argument("--seed", type=int, default=42)
ap.add_argument("--small", action="store_true", help="tiny families (smoke runs)")
args = ap.parse_args()

target = urllib.parse.urlsplit(args.url)
local = threading.local()
run_tag = f"{int(time.time()) % 100000:05d}"


def call(method, path, body=None, token=None, attempts=5):
    """One request on this thread's keep-alive connection; retries a dropped connection and 503."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    for attempt in range(attempts):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            local.conn = None
            time.sleep(0.2 * (attempt + 1))
            continue
        if r.status == 503 and attempt + 1 < attempts:
            time.sleep(float(r.getheader("Retry-After") or 1))
            continue
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {raw[:300]!r}")
        return json.loads(raw or b"null")
    raise RuntimeError(f"{method} {path}: no answer after {attempts} attempts")


limits = call("GET", "/api/v1/")["limits"]
group_max = int(limits["groupMaxRequests"])


def group(token, writes):
    """Sends writes (method, url, body) in groups of at most group_max; every sub-request must succeed."""
    for start in range(0, len(writes), group_max):
        chunk = writes[start:start + group_max]
        answer = call("POST", "/api/v1/group", {"requests": [
            {"id": str(n), "method": m, "url": u, "body": b} for n, (m, u, b) in enumerate(chunk)]}, token)
        bad = [r for r in answer["responses"] if r["status"] >= 300]
        if bad:
            raise RuntimeError(f"seed write failed: {bad[0]}")


def contact(rng, i, rev=0):
    return {"firstName": f"First{i}", "lastName": rng.choice(["Martin", "Bernard", "Dubois", "Smith", "Garcia", "Müller"]),
            "emails": [f"person{i}.{rev}@example.org"], "phones": [f"+33 6 {rng.randrange(10**7, 10**8)}"],
            "notes": "Met at the school fair; likes hiking. " * rng.randrange(1, 4)}


def event(rng, i):
    day = rng.randrange(1, 28)
    return {"title": f"Event {i}", "start": f"2026-{rng.randrange(1, 13):02d}-{day:02d}T{rng.randrange(8, 20):02d}:00:00.000Z",
            "allDay": rng.random() < 0.2, "location": "Community hall", "contactIds": [f"c{rng.randrange(20)}"]}


def place(rng, i):
    return {"name": f"Place {i}", "address": f"{i} rue de la Paix, Paris",
            "latitude": round(rng.uniform(-80, 80), 5), "longitude": round(rng.uniform(-170, 170), 5)}


def signup(name):
    return call("POST", "/api/v1/signup", {"family": name, "username": name, "password": "bench-password"})


def date_of(token, since=None):
    return call("GET", "/api/v1/ctcsync" + (f"?date={since}" if since else ""), token=token)["date"]


def small_family(n):
    rng = random.Random(args.seed * 1_000_003 + n)
    acc = signup(f"bench{run_tag}f{n}")
    token, account = acc["token"], acc["accountId"]
    if args.small:
        sizes = dict(contacts=rng.randrange(5, 15), events=3, places=2, members=2, threads=3, messages=(2, 4), wall=3, comments=(0, 3))
    else:
        sizes = dict(contacts=rng.randrange(20, 61), events=rng.randrange(10, 41), places=rng.randrange(3, 16),
                     members=rng.randrange(3, 7), threads=rng.randrange(3, 13), messages=(3, 11), wall=rng.randrange(5, 21),
                     comments=(0, 6))
    w = [("PUT", f"/api/v1/contacts/c{i}", contact(rng, i)) for i in range(sizes["contacts"])]
    w += [("PUT", f"/api/v1/events/e{i}", event(rng, i)) for i in range(sizes["events"])]
    w += [("PUT", f"/api/v1/places/p{i}", place(rng, i)) for i in range(sizes["places"])]
    w += [("PUT", f"/api/v1/members/m{i}", {"name": f"Member {i}", "role": rng.choice(["parent", "child", "other"])})
          for i in range(sizes["members"])]
    for t in range(sizes["threads"]):
        w.append(("PUT", f"/api/v1/threads/t{t}", {"title": f"Thread {t}", "participants": [account], "read": False}))
        w += [("PUT", f"/api/v1/threads/t{t}/messages/m{m}", {"text": f"Message {m} of thread {t}: see you at six?"})
              for m in range(rng.randrange(*sizes["messages"]))]
    for p in range(sizes["wall"]):
        w.append(("PUT", f"/api/v1/wall/w{p}", {"type": "text", "text": f"Post {p}: what a day at the beach!"}))
        w += [("PUT", f"/api/v1/wall/w{p}/comments/k{k}", {"text": f"Comment {k}"}) for k in range(rng.randrange(*sizes["comments"]))]
    group(token, w)
    d0 = date_of(token)
    later = [("PUT", f"/api/v1/contacts/c{i}", contact(rng, i, rev=1)) for i in range(min(10, sizes["contacts"]))]
    later += [("PUT", f"/api/v1/events/e{i}", {**event(rng, i), "title": f"Event {i} (moved)"}) for i in range(2)]
    later += [("PUT", "/api/v1/places/p0", {**place(rng, 0), "name": "Place 0 (renamed)"}),
              ("PUT", "/api/v1/threads/t0/messages/new", {"text": "A new message"}),
              ("PUT", "/api/v1/wall/w0/comments/new", {"text": "A new comment"})]
    group(token, later)
    d1 = date_of(token, d0)
    return token, d0, d1, acc["familyId"], len(w) + len(later)


def big_family(count, pool):
    acc = signup(f"bench{run_tag}big{count}")
    token = acc["token"]
    rng = random.Random(count)
    writes = [("PUT", f"/api/v1/contacts/c{i:06d}", contact(rng, i)) for i in range(count)]
    step = group_max * 10
    list(pool.map(lambda s: group(token, writes[s:s + step]), range(0, count, step)))
    return token, date_of(token), acc["familyId"]


os.makedirs(args.outdir, exist_ok=True)
started = time.time()
with ThreadPoolExecutor(args.workers) as pool:
    families = []
    done = 0
    for result in pool.map(small_family, range(args.families)):
        families.append(result)
        done += 1
        if done % 100 == 0:
            print(f"seed: {done}/{args.families} families, {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    small_writes = sum(f[4] for f in families)
    small_time = time.time() - started
    with open(os.path.join(args.outdir, "families.txt"), "w") as f:
        f.writelines(f"{t} {d0} {d1} {fam}\n" for t, d0, d1, fam, _ in families)
    big = {}
    for count in [int(c) for c in args.big.split(",") if c]:
        t0 = time.time()
        token, d0, fam = big_family(count, pool)
        big[count] = {"familyId": fam, "seconds": round(time.time() - t0, 1)}
        with open(os.path.join(args.outdir, f"big-{count}.txt"), "w") as f:
            f.write(f"{token} {d0} {fam}\n")
        print(f"seed: big family of {count} contacts in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)

summary = {"families": args.families, "smallWrites": small_writes, "smallSeconds": round(small_time, 1), "big": big,
           "limits": limits, "seconds": round(time.time() - started, 1)}
with open(os.path.join(args.outdir, "seed.json"), "w") as f:
    json.dump(summary, f, indent=1)
print(json.dumps(summary))
