"""Visit pages as a signed-in participant in a real headless Chromium, driven through chromedriver, and write down
what the browser did: each page's DOM, a full-page screenshot, its console messages (a blocked load or script
under the Content-Security-Policy is one) and every URL the page asked for.

It runs as a process of its own (``python -m tests.server.visit_pages REQUEST.json``) so that a test can start it
inside a network namespace that has only a loopback, beside the server: the browser can then reach nothing else,
and what it tried to reach is in the record. The request: ``{"base", "token", "out", "urls", "width", "element"}``
(``element``: a CSS selector whose first match on each page is also shot alone); the record, written to
``out/visits.json``: ``[{"url", "dom", "screenshot", "element", "console", "requests"}]``.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.server.test_browser import CHROMIUM, CHROMIUM_FLAGS

CHROMEDRIVER = "/usr/bin/chromedriver"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Driver:
    def __init__(self, url: str, profile: Path, width: int) -> None:
        self.http = httpx.Client(base_url=url, timeout=120)
        options = {
            "binary": CHROMIUM,
            "args": [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},1000"],
        }
        capabilities = {
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        if response.status_code != 200:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:2000]}")
        return response.json()["value"]

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def logs(self, kind: str) -> list[dict[str, Any]]:
        return list(self.command("POST", "/se/log", {"type": kind}))

    def sign_in(self, base: str, token: str) -> None:
        self.command("POST", "/url", {"url": f"{base}/signin"})
        found = self.command("POST", "/element", {"using": "css selector", "value": "#token"})
        self.command("POST", f"/element/{next(iter(found.values()))}/value", {"text": token})
        button = self.command("POST", "/element", {"using": "css selector", "value": "main button[type=submit]"})
        self.command("POST", f"/element/{next(iter(button.values()))}/click", {})
        deadline = time.monotonic() + 30
        while 'id="signed-in"' not in str(self.command("GET", "/source")):
            if time.monotonic() > deadline:
                raise RuntimeError("signing in did not finish")
            time.sleep(0.1)

    def element_shot(self, css: str, shot: Path) -> str | None:
        """A screenshot of the first element ``css`` selects (None: the page has none)."""
        found = self.command("POST", "/elements", {"using": "css selector", "value": css})
        if not found:
            return None
        element = next(iter(found[0].values()))
        rect = self.command("GET", f"/element/{element}/rect")  # in the document: the element may pass the window
        clip = {key: rect[key] for key in ("x", "y", "width", "height")} | {"scale": 1}
        captured = self.command(
            "POST",
            "/goog/cdp/execute",
            {"cmd": "Page.captureScreenshot", "params": {"format": "png", "clip": clip, "captureBeyondViewport": True}},
        )
        shot.write_bytes(base64.b64decode(captured["data"]))
        return str(shot)

    def visit(self, url: str, shot: Path, element: str | None = None) -> dict[str, Any]:
        self.logs("browser"), self.logs("performance")  # what came before this page is not its
        self.command("POST", "/url", {"url": url})
        dom = str(self.command("GET", "/source"))
        captured = self.command(
            "POST",
            "/goog/cdp/execute",
            {"cmd": "Page.captureScreenshot", "params": {"format": "png", "captureBeyondViewport": True}},
        )
        shot.write_bytes(base64.b64decode(captured["data"]))
        requests = []
        for entry in self.logs("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requests.append(message["params"]["request"]["url"])
        console = [f"{e['level']}: {e['message']}" for e in self.logs("browser")]
        part = self.element_shot(element, shot.with_suffix(".element.png")) if element else None
        return {
            "url": url,
            "dom": dom,
            "screenshot": str(shot),
            "element": part,
            "console": console,
            "requests": requests,
        }

    def quit(self) -> None:
        self._call("DELETE", f"/session/{self.session}")
        self.http.close()


def main(request_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    out = Path(request["out"])
    port = _free_port()
    process = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/status", timeout=2).json()["value"]["ready"]:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.2)
        driver = Driver(url, out / "profile", request.get("width", 1280))
        try:
            driver.sign_in(request["base"], request["token"])
            element = request.get("element")
            visits = [driver.visit(page, out / f"page-{i}.png", element) for i, page in enumerate(request["urls"])]
        finally:
            driver.quit()
    finally:
        process.terminate()
        process.wait(timeout=10)
    (out / "visits.json").write_text(json.dumps(visits))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
