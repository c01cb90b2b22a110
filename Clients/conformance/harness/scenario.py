"""One scenario run by one SDK's adapter against one server: its steps, its checks, and the trace compared across SDKs."""

import hashlib
import json
import os
import re
import secrets
import sqlite3
import urllib.parse

from adapter import Adapter, AdapterError
from servers import http

EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()
# Members that differ between two runs of the same scenario (server clocks, dates of sync, messages' wording).
VOLATILE = {"date", "modified", "created", "lastMessageAt", "message", "expiresAt"}
TEMPLATE = re.compile(r"\{([A-Za-z][A-Za-z0-9_.]*)(?::([^{}]*))?\}")


class Failure(Exception):
    """A scenario's expectation did not hold."""


def match(expected, actual, path="$"):
    """Where `actual` differs from `expected`: objects are matched on the members `expected` names (null: absent or
    null), lists element by element with the same length, anything else by equality."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {json.dumps(actual)}"]
        return [error for key, value in expected.items() for error in match(value, actual.get(key), f"{path}.{key}")]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]
        return [error for index, value in enumerate(expected) for error in match(value, actual[index], f"{path}[{index}]")]
    return [] if expected == actual else [f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]


def digest(entries):
    """`GET /verify`'s count and digest of (id, modified) pairs: SHA-256 over them sorted by id, `id NUL modified LF`."""
    hasher = hashlib.sha256()
    for identifier, modified in sorted((i.encode(), m.encode()) for i, m in entries):
        hasher.update(identifier + b"\0" + modified + b"\n")
    return {"count": len(entries), "digest": hasher.hexdigest()}


class ScenarioRun:
    """Runs `scenario` with the adapter `command` of `sdk`; `server` and `proxy` (the device's network) are running."""

    def __init__(self, scenario, sdk, commands, server, proxy, folder, models, identity=None):
        self.scenario, self.sdk, self.commands, self.identity = scenario, sdk, commands, identity
        self.server, self.proxy, self.folder, self.models = server, proxy, folder, models
        # `{pad:x<3000}` is 3000 x's (Python's format mini-language on an empty string).
        self.vars = {"run": secrets.token_hex(4), "pad": ""}
        self.actors = {}
        self.trace = []
        self.device_space = None
        # The account the device signed in as: the harness reads the server as it (`"server"` and `ids` digests).
        self.device_actor = "owner"

    # Templates: "{name}" and "{i:02d}" in any string of a step, from the run's variables.
    def fill(self, value, extra=None):
        names = {**self.vars, **(extra or {})}
        if isinstance(value, str):
            whole = TEMPLATE.fullmatch(value)
            if whole and whole.group(1) in names and not whole.group(2):
                return names[whole.group(1)]
            return TEMPLATE.sub(lambda m: format(names[m.group(1)], m.group(2) or "") if m.group(1) in names else m.group(0), value)
        if isinstance(value, list):
            return [self.fill(v, extra) for v in value]
        if isinstance(value, dict):
            return {self.fill(k, extra): self.fill(v, extra) for k, v in value.items()}
        return value

    def run(self):
        os.makedirs(self.folder, exist_ok=True)
        self.adapter = Adapter(self.commands[self.sdk], os.path.join(self.folder, "adapter.log"))
        try:
            self.signup("owner")
            self.device({"device": "open"})
            for index, step in enumerate(self.scenario["steps"]):
                try:
                    self.step(step)
                except (Failure, AdapterError) as error:
                    raise Failure(f"step {index + 1} {json.dumps(step)[:160]}: {error}") from None
            if "expect" in self.scenario:
                try:
                    self.check(self.scenario["expect"])
                except Failure as error:
                    raise Failure(f"final expectations: {error}") from None
        finally:
            self.adapter.close()

    def signup(self, name):
        actor = {"username": f"{name}-{self.vars['run']}", "password": "conformance-" + secrets.token_hex(8)}
        status, body, _ = http(self.server.base, "POST", "/signup", {"family": name.title(), **actor})
        if status != 201:
            raise Failure(f"signup of {name}: {status} {body}")
        actor.update(token=body["token"], accountId=body["accountId"], familyId=body["familyId"])
        self.actors[name] = actor
        for key in ("username", "password", "accountId", "familyId"):
            self.vars[f"{name}.{key}"] = actor[key]

    def exchange(self, name, spec):
        """An account of the identity provider (`POST /token`), made by a first exchange."""
        body = {"idToken": self.identity.token(spec["sub"]), **({"space": spec["space"]} if "space" in spec else {})}
        status, answer, _ = http(self.server.base, "POST", "/token", body)
        if status != 200:
            raise Failure(f"POST /token for {name}: {status} {answer}")
        self.actors[name] = {"sub": spec["sub"], "token": answer["token"], "accountId": answer["accountId"]}
        self.vars[f"{name}.accountId"] = answer["accountId"]

    def open(self, options):
        command = {"op": "open", "server": self.proxy.url, **self.fill(self.scenario.get("device", {})), **options}
        self.replica = os.path.join(self.folder, command.pop("replicaName", "replica") + ".sqlite")
        command["replica"] = self.replica
        self.device_space = command.get("space")
        return command

    def step(self, step):
        if "device" in step:
            self.device(step)
        elif "http" in step:
            self.call(step)
        elif "actor" in step and "idToken" in step:
            self.exchange(step["actor"], step["idToken"])
        elif "actor" in step:
            self.signup(step["actor"])
        elif "network" in step:
            self.proxy.set_up(step["network"] != "down", unavailable=step["network"] == "unavailable")
        elif "server" in step:
            model = step.get("model")
            self.server.restart(os.path.join(self.models, model) if model else None, restore_epoch=step["server"] == "restore-epoch",
                                extra=step.get("arguments", []))
        elif "handoff" in step:
            self.handoff()
        elif "tamper" in step:
            with sqlite3.connect(self.replica) as db:
                db.execute(step["tamper"])
        elif "check" in step:
            self.check(step["check"])
        else:
            raise Failure("unknown step")

    def handoff(self):
        """The other SDK continues the replica: this adapter closes it, the other's opens the same file (and token)."""
        others = [sdk for sdk in self.commands if sdk != self.sdk]
        if not others:
            raise Failure("a handoff needs both SDKs' adapters")
        self.device({"device": "close"})
        self.adapter.close()
        self.adapter = Adapter(self.commands[others[0]], os.path.join(self.folder, f"adapter-{others[0]}.log"))
        replica_name = os.path.basename(self.replica)[: -len(".sqlite")]
        self.device({"device": {"op": "open", "replicaName": replica_name, **({"space": self.device_space} if self.device_space else {})}})

    def device(self, step):
        command = step["device"]
        command = self.fill({"op": command} if isinstance(command, str) else command)
        if command["op"] == "open":
            command = self.open(command)
        signing_in = None
        if command["op"] == "signIn":
            signing_in = command.pop("as")
            command["idToken"] = self.identity.token(self.actors[signing_in]["sub"], command.pop("expiresIn", 600))
        if command["op"] in ("logIn", "signUp"):
            signing_in = command.pop("as", "owner")
            actor = self.actors[signing_in]
            command.setdefault("username", actor["username"])
            command.setdefault("password", actor["password"])
            command.setdefault("family", "Device")
        answer = self.adapter.call(command)
        if signing_in and answer.get("ok"):
            self.device_actor = signing_in
        if command["op"] != "open":
            self.trace.append({"op": command["op"], **self.normalized(answer)})
        expect = step.get("expect", {})
        if expect.get("any"):
            return answer
        if "error" in expect:
            if answer.get("ok"):
                raise Failure(f"expected the error {json.dumps(expect['error'])}, got {json.dumps(answer)[:400]}")
            errors = match(expect["error"], answer["error"], "error")
        elif not answer.get("ok"):
            raise Failure(f"failed: {json.dumps(answer['error'])[:400]}")
        else:
            errors = match(self.fill(expect["result"]), answer["result"], "result") if "result" in expect else []
        if errors:
            raise Failure("; ".join(errors))
        for name, key in step.get("save", {}).items():
            self.vars[name] = answer["result"][key]
        return answer

    def call(self, step):
        spec = self.fill(step["http"])
        actor = self.actors[spec.get("as", "owner")]
        for i in range(spec["repeat"]) if "repeat" in spec else [None]:
            extra = {} if i is None else {"i": i}
            status, body, _ = http(self.server.base, spec.get("method", "GET"), self.fill(spec["path"], extra), self.fill(spec.get("body"), extra),
                                   token=actor["token"], headers=spec.get("headers"))
            expected = step.get("expect", {}).get("status", [200, 201, 204])
            if status not in (expected if isinstance(expected, list) else [expected]):
                raise Failure(f"{spec.get('method', 'GET')} {spec['path']}: {status} {json.dumps(body)[:300]}")
        for name, key in step.get("save", {}).items():
            self.vars[name] = body[key]

    def ask(self, op, **arguments):
        """A read of a check; its answer joins the trace too, so the SDKs must show the same items, queue and journal."""
        answer = self.adapter.call({"op": op, **arguments})
        self.trace.append({"check": op, **arguments, **self.normalized(answer)})
        if not answer.get("ok"):
            raise Failure(f"{op} failed: {json.dumps(answer['error'])}")
        return answer["result"]

    # MARK: - Checks

    def check(self, expect):
        expect = self.fill(expect)
        errors = []
        for name, spec in expect.get("replica", {}).items():
            mine, wanted = self.replica_digest(name), self.expected_digest(name, spec)
            if mine != wanted:
                errors.append(f"replica {name}: holds {mine}, expected {wanted} ({json.dumps(spec)[:200]})")
        for key, items in expect.get("items", {}).items():
            collection, _, parent = key.partition("/")
            held = {item["id"]: item for item in self.ask("items", collection=collection, **({"parent": parent} if parent else {}))}
            errors += match(items, {id: held.get(id) for id in items}, f"items {key}")
        for list_name, nomore in expect.get("hasAll", {}).items():
            collection, _, parent = list_name.partition("/")
            errors += match(nomore, self.ask("hasAll", list=collection, **({"parent": parent} if parent else {}))["nomore"], f"hasAll {list_name}")
        for op in ("pending", "failed", "conflicts", "failedUploads"):
            if op in expect:
                errors += match(expect[op], self.ask(op), op)
        if errors:
            raise Failure("; ".join(errors))

    def replica_digest(self, collection):
        """The list's count and digest as the replica file holds the server's versions (both SDKs share its schema)."""
        with sqlite3.connect(f"file:{self.replica}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT id, server FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL", (collection,)).fetchall()
        return digest([(row[0], json.loads(row[1]).get("modified", "")) for row in rows])

    def prefix(self):
        return f"/spaces/{self.device_space}" if self.device_space else ""

    def expected_digest(self, collection, spec):
        if isinstance(spec, dict) and "digest" in spec:
            return {"count": spec["count"], "digest": spec["digest"]}
        token = self.actors[self.device_actor]["token"]
        if spec == "server":
            # The server's own answer, for the part the replica holds of a paginated list (`<list>LastId`).
            with sqlite3.connect(f"file:{self.replica}?mode=ro", uri=True) as db:
                last = db.execute("SELECT id FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL ORDER BY sortKey, id LIMIT 1",
                                  (collection,)).fetchone()
            kind = http(self.server.base, "GET", "/model")[1]["collections"].get(collection, {}).get("kind")
            query = f"?{collection}LastId={urllib.parse.quote(last[0])}" if last and kind == "paginated" else ""
            status, body, _ = http(self.server.base, "GET", self.prefix() + "/verify" + query, token=token)
            if status != 200:
                raise Failure(f"GET /verify: {status} {body}")
            return body["lists"].get(collection, {"count": 0, "digest": EMPTY_DIGEST})
        # The ids the replica must hold, each at the version the server holds now.
        entries = []
        for identifier in spec["ids"]:
            status, body, _ = http(self.server.base, "GET", f"{self.prefix()}/{collection}/{urllib.parse.quote(identifier)}", token=token)
            if status != 200:
                raise Failure(f"GET /{collection}/{identifier}: {status} (expected on the server)")
            entries.append((identifier, body["modified"]))
        return digest(entries)

    def normalized(self, answer):
        """An answer as two SDKs must agree on it: volatile members dropped, the run's ids named, and members that
        are null or an empty list dropped (their defaults, protocol §2: a Swift typed model writes them out in an item
        not pushed yet, a JSON item of the TypeScript client leaves them absent)."""
        names = {value: f"<{name}>" for name, value in self.vars.items() if isinstance(value, str) and len(value) > 8}

        def clean(value):
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items() if k not in VOLATILE and v is not None and v != []}
            if isinstance(value, list):
                return [clean(v) for v in value]
            return names.get(value, value) if isinstance(value, str) else value

        return clean(answer)
