"""The TypeScript client in real headless Chromium (issue 55 item 4): a replica in IndexedDB that survives a reload
while offline, a queue that pushes when the network returns, live notices that arrive. The page comes from a small
static server of this test, which forwards /api/ and /health to the real SyncAPI server (the page's own origin: the
server has no CORS) and plays the network down by cutting those connections. Run by scripts/check-ts-browser:
    python3 browser_test.py OUT_DIR   (OUT_DIR: the client compiled by tsc; SYNCAPI_BIN: the server)
"""
import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
TYPES = {".js": "text/javascript", ".html": "text/html", ".map": "application/json"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SyncServer:
    """The real server on a free port with a new SQLite database; stopped at the end."""

    def __init__(self, folder):
        self.port = free_port()
        self.log = open(os.path.join(folder, "server.log"), "w")
        self.process = subprocess.Popen(
            [os.environ["SYNCAPI_BIN"], "serve", "--port", str(self.port), "--database", "sqlite:" + os.path.join(folder, "server.sqlite"), "--bcrypt-cost", "4"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2).read()
                return
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the server did not start: " + open(self.log.name).read())
                time.sleep(0.1)

    def call(self, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request(method, "/api/v1" + path, body=None if body is None else json.dumps(body), headers=headers)
        answer = connection.getresponse()
        text = answer.read()
        connection.close()
        return answer.status, (json.loads(text) if text else None)

    def stop(self):
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


class PageServer(http.server.ThreadingHTTPServer):
    """Serves the page and the compiled modules; forwards the API; `offline` cuts every API connection."""

    daemon_threads = True

    def __init__(self, backend_port):
        self.backend_port = backend_port
        self.offline = False
        self.streams = set()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", free_port()), PageHandler)

    def go_offline(self):
        with self.lock:
            self.offline = True
            for stream in list(self.streams):
                try:
                    stream.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class PageHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def handle_one(self):
        if self.path.startswith("/api/") or self.path == "/health":
            return self.forward()
        path = os.path.join(HERE, "page.html") if self.path.split("?")[0] == "/page.html" else os.path.join(OUT, self.path.lstrip("/").split("?")[0])
        if not os.path.realpath(path).startswith((os.path.realpath(OUT), HERE)) or not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as file:
            data = file.read()
        self.send_response(200)
        self.send_header("Content-Type", TYPES.get(os.path.splitext(path)[1], "application/octet-stream"))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

    def forward(self):
        server = self.server
        if server.offline:
            # No answer at all: the browser's fetch fails as it does without a network.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
        backend = http.client.HTTPConnection("127.0.0.1", server.backend_port, timeout=600)
        backend.request(self.command, self.path, body=body, headers=headers)
        answer = backend.getresponse()
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        with server.lock:
            server.streams.add(self.connection)
        try:
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass
        finally:
            with server.lock:
                server.streams.discard(self.connection)
            backend.close()
            self.close_connection = True


class BrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="syncapi-browser-")
        cls.sync = SyncServer(cls.folder)
        cls.page = PageServer(cls.sync.port)
        threading.Thread(target=cls.page.serve_forever, daemon=True).start()
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(cls.folder, "profile")):
            options.add_argument(argument)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        cls.browser = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        cls.browser.set_script_timeout(60)

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        cls.page.shutdown()
        cls.sync.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def load(self):
        self.browser.get(f"http://127.0.0.1:{self.page.server_address[1]}/page.html")
        deadline = time.time() + 30
        while self.browser.execute_script("return typeof window.harness") != "object":
            if time.time() > deadline:
                raise AssertionError("the page's modules did not load: " + str(self.browser.get_log("browser") if hasattr(self.browser, "get_log") else ""))
            time.sleep(0.05)

    def step(self, name, *args):
        answer = self.browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const [name, args] = arguments;"
            "Promise.resolve().then(() => window.harness[name](...args))"
            ".then((value) => done({ value }), (error) => done({ error: String(error && error.stack || error) }));",
            name, list(args))
        if "error" in answer:
            raise AssertionError(f"{name}: {answer['error']}")
        return answer["value"]

    def test_offline_reload_queue_and_live_notices(self):
        username = f"browser{int(time.time() * 1000) % 10_000_000}"
        self.load()
        self.assertEqual(self.step("open")["signedIn"], False)
        first = self.step("signUp", username)
        self.assertEqual(first["contacts"], ["online"])

        # The network goes down: a write applies at once and waits in the queue.
        self.page.go_offline()
        offline = self.step("writeOffline")
        self.assertEqual(sorted(offline["contacts"]), ["offline", "online"])
        self.assertEqual(offline["pending"], 1)
        self.assertEqual(offline["error"], "offline")

        # The page is reloaded while still offline: the replica, the queue and the session are all there.
        self.load()
        reopened = self.step("open")
        self.assertEqual(reopened, {"contacts": sorted(["offline", "online"]), "pending": 1, "signedIn": True})

        # The network returns: the queue pushes by itself on `online`, and the server has the write.
        self.page.offline = False
        self.assertEqual(self.step("online"), {"pending": 0})
        status, token = self.sync.call("POST", "/login", {"username": username, "password": "password1"})
        self.assertEqual(status, 200)
        token = token["token"]
        status, item = self.sync.call("GET", "/contacts/offline", token=token)
        self.assertEqual((status, item["firstName"]), (200, "Made offline"))

        # Live mode: another device writes; the notice arrives over /changes and the replica syncs by itself.
        self.step("startLive")
        time.sleep(0.5)
        status, _ = self.sync.call("PUT", "/contacts/remote", {"firstName": "From another device"}, token=token)
        self.assertEqual(status, 200)
        arrived = self.step("waitFor", "contacts", "remote")
        self.assertIn("remote", arrived["ids"])
        self.step("close")


if __name__ == "__main__":
    if OUT is None:
        sys.exit("usage: browser_test.py OUT_DIR")
    sys.argv = sys.argv[:1]
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
