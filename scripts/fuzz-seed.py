#!/usr/bin/env python3
"""Seed a fresh SyncAPI server for scripts/fuzz: wait for /health, sign up, create one item of every kind.

Usage: fuzz-seed.py ORIGIN API_BASE ID...   (e.g. http://127.0.0.1:41234 /api/v1 fz1 fz2)

Prints shell assignments on stdout (FUZZ_TOKEN, FUZZ_DATE, FUZZ_ETAG) for `eval`. Every id given is used in every
collection (a contact `fz1`, an event `fz1`, a thread `fz1` with a message `fz1`, a wall post `fz1` with a
comment `fz1`, ...), so a fuzzer that draws ids from the same list hits real items whatever the path.
Exits non-zero, with the reason on stderr, when the server does not come up or a seed call fails.
"""
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request


def call(method, url, body=None, token=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return response.status, dict(response.headers), (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, dict(error.headers), raw.decode(errors="replace")


def sample(field):
    """A valid value of a model field (protocol §12)."""
    kind = field["type"]
    if kind == "string":
        if "enum" in field:
            return field["enum"][0]
        return {"date": "2026-01-01", "date-time": "2026-01-01T10:00:00Z", "uri": "https://example.org/fuzz",
                "reference": "fz1"}.get(field.get("format"), "Fuzz")
    if kind in ("integer", "number"):
        low, high = field.get("minimum", -1e9), field.get("maximum", 1e9)
        return max(low, min(high, 1))
    if kind == "boolean":
        return True
    return []


def seed_model(model, api, base, token, ids):
    """One item of every collection of a model file under each id; returns an ETag and a date of sync."""
    collections = model["collections"]
    etag, date = None, None
    for name, spec in collections.items():
        fields = spec.get("fields", {})
        body = {f: sample(d) for f, d in fields.items() if d.get("required")}
        for rule in spec.get("rules", []):
            if "requireOneOf" in rule:
                first = rule["requireOneOf"][0]
                body[first] = sample(fields[first])
        if spec["kind"] == "singleton":
            continue
        for i in ids:
            path = f"/{spec['parent']}/{i}/{name}/{i}" if spec["kind"] == "child" else f"/{name}/{i}"
            status, headers, answer = call("PUT", api + path, body, token)
            if status != 200:
                sys.exit(f"fuzz-seed: PUT {base}{path} answered {status}: {answer}")
            etag = headers.get("ETag", etag)
    for name, spec in collections.items():
        if "sync" in spec:
            status, _, answer = call("GET", api + "/" + spec["sync"], token=token)
            if status != 200:
                sys.exit(f"fuzz-seed: GET {base}/{spec['sync']} answered {status}: {answer}")
            date = answer["date"]
            break
    return etag, date


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    origin, base, ids = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/"), sys.argv[3:]
    api = origin + base

    deadline = time.monotonic() + 90
    while True:
        try:
            status, _, _ = call("GET", origin + "/health", timeout=2)
            if status == 200:
                break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            sys.exit("fuzz-seed: the server did not answer GET /health within 90 s")
        time.sleep(0.2)

    username = "fuzz" + secrets.token_hex(4)
    status, _, grant = call("POST", api + "/signup",
                            {"family": "Fuzz", "username": username, "password": "fuzz-password-1"})
    if status != 201:
        sys.exit(f"fuzz-seed: POST /signup answered {status}: {grant}")
    token = grant["token"]

    model = os.environ.get("FUZZ_MODEL")
    if model:
        etag, date = seed_model(json.load(open(model)), api, base, token, ids)
        print(f"FUZZ_TOKEN='{token}'")
        print(f"FUZZ_DATE='{date}'")
        print(f"FUZZ_ETAG='{etag or chr(34) + '1' + chr(34)}'")
        print(f"seeded family of {username} for model {model}", file=sys.stderr)
        return

    etag = None
    for i in ids:
        seeds = [
            (f"/contacts/{i}", {"firstName": "Fuzz", "lastName": i, "emails": ["fuzz@example.org"]}),
            (f"/events/{i}", {"title": "Fuzz", "start": "2026-01-01T10:00:00Z", "end": "2026-01-01T11:00:00Z"}),
            (f"/places/{i}", {"name": "Fuzz", "latitude": 48.85, "longitude": 2.35}),
            (f"/members/{i}", {"name": "Fuzz", "role": "child"}),
            (f"/threads/{i}", {"title": "Fuzz"}),
            (f"/threads/{i}/messages/{i}", {"text": "hello"}),
            (f"/wall/{i}", {"type": "text", "text": "Fuzz"}),
            (f"/wall/{i}/comments/{i}", {"text": "nice"}),
        ]
        for path, body in seeds:
            status, headers, answer = call("PUT", api + path, body, token)
            if status != 200:
                sys.exit(f"fuzz-seed: PUT {base}{path} answered {status}: {answer}")
            etag = headers.get("ETag", etag)
    status, _, answer = call("PUT", api + "/settings", {"locale": "fr-FR", "timeZone": "Europe/Paris"}, token)
    if status != 200:
        sys.exit(f"fuzz-seed: PUT {base}/settings answered {status}: {answer}")

    status, _, answer = call("GET", api + "/ctcsync", token=token)
    if status != 200:
        sys.exit(f"fuzz-seed: GET {base}/ctcsync answered {status}: {answer}")
    date = answer["date"]

    print(f"FUZZ_TOKEN='{token}'")
    print(f"FUZZ_DATE='{date}'")
    print(f"FUZZ_ETAG='{etag or chr(34) + '1' + chr(34)}'")
    print(f"seeded family of {username}: {len(ids)} item(s) of every kind, date {date}", file=sys.stderr)


if __name__ == "__main__":
    main()
