"""bench/ts/run --browser: the client's first sync into IndexedDB in headless Chromium, next to the raw download of
the same list in the same page. Prints one JSON line. Uses the browser test's page and static server
(Clients/ts/test/browser), whose /api/ goes to the server at URL.

    python3 browser.py DIST URL SEED.json
"""
import json, os, sys, threading, urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "Clients/ts/test/browser"))
dist, url, seed_path = sys.argv[1:4]
sys.argv = [sys.argv[0], dist]
import browser_test  # noqa: E402

seed = json.load(open(seed_path))
page = browser_test.PageServer(urllib.parse.urlsplit(url).port)
threading.Thread(target=page.serve_forever, daemon=True).start()
test = browser_test.BrowserTest("test_offline_reload_queue_and_live_notices")
test.page = page
import shutil, tempfile  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

profile = tempfile.mkdtemp(prefix="syncapi-bench-chromium-")
options = webdriver.ChromeOptions()
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--enable-precise-memory-info", "--user-data-dir=" + profile):
    options.add_argument(argument)
options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
test.browser = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
test.browser.set_script_timeout(600)
try:
    test.load()
    raw = test.step("benchRaw", seed["token"])
    session = {"token": seed["token"], "accountID": seed["accountID"], "familyID": seed["familyID"]}
    strict = test.step("benchSync", session, "bench", 5, "strict")
    relaxed = test.step("benchSync", session, "bench", 5, "relaxed")
    print(json.dumps({"mode": "indexeddb", "rawSeconds": raw["seconds"], **strict,
                      "relaxed": relaxed}))
finally:
    test.browser.quit()
    page.shutdown()
    shutil.rmtree(profile, ignore_errors=True)
