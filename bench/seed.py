#!/usr/bin/env python3
"""Loads the benchmark data into a running server and prints `TOKEN=… DATE=…` for the shell.

One family: 1,000 contacts, 200 threads of 5 messages each, 3 members. Uses one POST /group per 20 writes.
"""
import json, sys, urllib.request

base = sys.argv[1]

def call(method, path, body=None, token=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")

token = call("POST", "/api/v1/signup", {"family": "Bench", "username": "bench", "password": "bench-password"})["token"]
writes = [("PUT", f"/api/v1/contacts/c{i:04d}", {"firstName": f"First{i}", "lastName": "Last", "emails": [f"p{i}@example.org"],
           "phones": ["+33 1 23 45 67 89"], "notes": "A contact for the benchmark."}) for i in range(1000)]
for t in range(200):
    writes.append(("PUT", f"/api/v1/threads/t{t:03d}", {"title": f"Thread {t}", "participants": ["a", "b"]}))
    writes += [("PUT", f"/api/v1/threads/t{t:03d}/messages/m{m}", {"text": f"Message {m} of thread {t}"}) for m in range(5)]
writes += [("PUT", f"/api/v1/members/m{i}", {"name": f"Member {i}", "role": "parent"}) for i in range(3)]
for start in range(0, len(writes), 20):
    chunk = writes[start:start + 20]
    answer = call("POST", "/api/v1/group", {"requests": [{"id": str(n), "method": m, "url": u, "body": b}
                                                         for n, (m, u, b) in enumerate(chunk)]}, token)
    bad = [r for r in answer["responses"] if r["status"] != 200]
    if bad:
        sys.exit(f"seed failed: {bad[0]}")
date = call("GET", "/api/v1/ctcsync", token=token)["date"]
print(f"TOKEN={token} DATE={date}")
