"""The real server for the conformance suite: PostgreSQL clusters, `syncapi serve` processes, the device's network.

Everything waits for events (a port that answers, a process that exits), never for fixed times; every wait is
bounded and fails with the log of what it waited for.
"""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, timeout, what):
    """Polls `condition` (a cheap check of an event: a port answering) until it holds, or fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def http(base, method, path, body=None, token=None, headers=None, timeout=30):
    """One call to the API (`base` + `/api/v1` + `path`): (status, the JSON body parsed or other bytes, headers)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + "/api/v1" + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw, status, got = answer.read(), answer.status, dict(answer.headers)
    except urllib.error.HTTPError as error:
        raw, status, got = error.read(), error.code, dict(error.headers)
    is_json = "json" in next((value for name, value in got.items() if name.lower() == "content-type"), "")
    return status, (json.loads(raw) if raw and is_json else raw or None), got


class Postgres:
    """A throwaway PostgreSQL cluster (initdb, pg_ctl), run as the `postgres` user when this process is root."""

    def __init__(self, root):
        self.folder = tempfile.mkdtemp(prefix="pg-", dir=root)
        self.prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if self.prefix:
            os.chmod(root, 0o755)
            shutil.chown(self.folder, "postgres", "postgres")
        self.data = os.path.join(self.folder, "data")
        self.port = free_port()
        self.count = 0
        self._run(["initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off -c synchronous_commit=off"
        self._run(["pg_ctl", "-D", self.data, "-l", os.path.join(self.folder, "server.log"), "-o", options, "-w", "-t", "60", "start"])

    def _run(self, arguments):
        subprocess.run(self.prefix + arguments, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def new_database(self):
        """A new empty database; its URL for `serve --database`."""
        self.count += 1
        name = f"conformance{self.count}"
        self._run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-q", "-c", f"CREATE DATABASE {name}"])
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self):
        subprocess.run(self.prefix + ["pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class PortTaken(RuntimeError):
    """The server could not bind its port."""


class Server:
    """One `syncapi serve` on its own database; `restart` keeps the database (a new model, say)."""

    def __init__(self, binary, database, folder, arguments=()):
        self.binary, self.database, self.folder = binary, database, folder
        self.arguments = list(arguments)
        self.process = None
        self.starts = 0

    def start(self, model=None, extra=()):
        """Starts `serve` on a free port; a port taken between the probe and the bind (another process's) is tried
        again on another, twice at most."""
        for attempt in range(3):
            try:
                return self._start(model, extra)
            except PortTaken:
                if attempt == 2:
                    raise

    def _start(self, model, extra):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.starts += 1
        self.log = os.path.join(self.folder, f"server-{self.starts}.log")
        command = [self.binary, "serve", "--port", str(self.port), "--database", self.database, "--bcrypt-cost", "4",
                   "--login-rate", "100000", "--signup-rate", "100000", *self.arguments]
        if model:
            command += ["--model", model]
        command += list(extra)
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

        def ready():
            if self.process.poll() is not None:
                output = open(self.log).read()[-2000:]
                raise (PortTaken if "in use" in output.lower() else RuntimeError)(f"serve exited ({self.process.returncode}): {output}")
            try:
                return http(self.base, "GET", "/", timeout=2)[0] == 200
            except OSError:
                return False

        wait_until(ready, 120, f"the server on port {self.port} ({self.log})")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self, model=None, restore_epoch=False, extra=()):
        """Stops and starts again on the same database; `restore_epoch` first gives it a new id (as after a restore)."""
        self.stop()
        if restore_epoch:
            with open(os.path.join(self.folder, "restore-epoch.log"), "w") as log:
                subprocess.run([self.binary, "restore-epoch", "--database", self.database], check=True, stdout=log, stderr=subprocess.STDOUT)
        self.start(model, extra)


PROBLEM = b'{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"A proxy in front.","code":"unavailable"}'
UNAVAILABLE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(PROBLEM), PROBLEM))


class Proxy:
    """The device's network: a TCP relay to the server that can go down (connections refused and cut) and up again, or
    answer every request 503 `unavailable` with `Retry-After` (a load balancer whose servers are gone)."""

    def __init__(self, target):
        self.target = target
        self.up = True
        self.unavailable = False
        self.connections = set()
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def set_up(self, up, unavailable=False):
        with self.lock:
            self.up, self.unavailable = up, unavailable
            if not up or unavailable:
                for connection in list(self.connections):
                    self._close(connection)

    def _close(self, connection):
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        connection.close()
        self.connections.discard(connection)

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if not self.up:
                    client.close()
                    continue
                if self.unavailable:
                    threading.Thread(target=self._refuse, args=(client,), daemon=True).start()
                    continue
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.target()), timeout=10)
                except OSError:
                    client.close()
                    continue
                upstream.settimeout(None)
                self.connections.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _refuse(self, client):
        """Reads one request (head and body) and answers it 503."""
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    raise OSError("closed")
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                chunk = client.recv(65536)
                if not chunk:
                    break
                body += chunk
            client.sendall(UNAVAILABLE)
        except OSError:
            pass
        client.close()

    def _pipe(self, source, sink):
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                sink.sendall(chunk)
        except OSError:
            pass
        with self.lock:
            self._close(source)
            self._close(sink)

    def close(self):
        self.listener.close()
        self.set_up(False)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class IdentityProvider:
    """An OpenID Connect provider for `serve --identity` (protocol §14): an RSA key made with openssl, its key set in a
    file, and ID tokens (RS256 JWTs) signed with it."""

    ISSUER, AUDIENCE = "https://issuer.conformance.test", "conformance-app"

    def __init__(self, folder):
        self.key = os.path.join(folder, "idp-key.pem")
        subprocess.run(["openssl", "genrsa", "-out", self.key, "2048"], check=True, capture_output=True)
        modulus = subprocess.run(["openssl", "rsa", "-in", self.key, "-noout", "-modulus"], check=True, capture_output=True, text=True)
        jwk = {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": b64url(bytes.fromhex(modulus.stdout.strip().split("=")[1])), "e": "AQAB"}
        jwks = os.path.join(folder, "idp-jwks.json")
        with open(jwks, "w") as handle:
            json.dump({"keys": [jwk]}, handle)
        self.file = os.path.join(folder, "identity.json")
        with open(self.file, "w") as handle:
            json.dump({"providers": [{"name": "conformance", "issuer": self.ISSUER, "audiences": [self.AUDIENCE], "jwks": f"file:{jwks}",
                                      "algorithms": ["RS256"], "displayName": "name"}]}, handle)

    def token(self, sub, expires_in=600):
        """A signed ID token for `sub` (a negative `expires_in` makes an expired one)."""
        now = int(time.time())
        claims = {"iss": self.ISSUER, "aud": self.AUDIENCE, "sub": sub, "iat": min(now, now + expires_in - 60), "exp": now + expires_in, "name": sub.title()}
        signing_input = b64url(json.dumps({"alg": "RS256", "kid": "k1", "typ": "JWT"}).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signing_input.encode(), check=True, capture_output=True).stdout
        return signing_input + "." + b64url(signature)
