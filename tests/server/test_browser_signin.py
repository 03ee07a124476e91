"""Signing in in a real Chromium (driven through chromedriver's WebDriver protocol) against a real uvicorn: the
browser keeps the session cookie, shows the participant's unranked and failed submissions with their episode log
(a hidden episode's status and step only), and forgets the session at sign-out."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.server import storage, visibility
from layersched.server.db import make_engine, make_sessionmaker

from .conftest import run_evaluation
from .test_browser import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    add_submission,
    free_port,
    migrated_sqlite,
    register_sample,
    uvicorn_server,
)
from .test_pages_signin import SECRET, fail_on_hidden_episode

CHROMEDRIVER = "/usr/bin/chromedriver"
pytestmark = [pytest.mark.browser, pytest.mark.slow]


class WebDriver:
    """The few W3C WebDriver commands the test needs, over plain HTTP."""

    def __init__(self, url: str, profile: Path) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)
        options = {"binary": CHROMIUM, "args": [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]}
        body = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
        self.session = self._call("POST", "/session", body)["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        assert response.status_code == 200, response.text[:2000]
        return response.json()["value"]

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def open(self, url: str) -> str:
        self.command("POST", "/url", {"url": url})
        return str(self.command("GET", "/source"))

    def element(self, css: str) -> str:
        found = self.command("POST", "/element", {"using": "css selector", "value": css})
        return str(next(iter(found.values())))

    def type_into(self, css: str, text: str) -> None:
        self.command("POST", f"/element/{self.element(css)}/value", {"text": text})

    def click(self, css: str, *, until: str) -> str:
        """Click, then the page's source once it holds ``until`` (a form's answer may come after click returns)."""
        self.command("POST", f"/element/{self.element(css)}/click", {})
        deadline = time.monotonic() + 30
        while until not in (source := str(self.command("GET", "/source"))):
            assert time.monotonic() < deadline, f"{until!r} never appeared after clicking {css}: {source[-1500:]}"
            time.sleep(0.1)
        return source

    def cookies(self) -> list[dict[str, Any]]:
        return list(self.command("GET", "/cookie"))

    def quit(self) -> None:
        self._call("DELETE", f"/session/{self.session}")
        self.http.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, dict[str, int]]]:
    """A server whose database has alice (with a token), her ranked, queued and failed submissions."""
    root = tmp_path_factory.mktemp("signin")
    database_url = migrated_sqlite(root)
    engine = make_engine(database_url)
    with make_sessionmaker(engine)() as session:
        evalset = register_sample(session)
        alice = storage.create_user(session=session, name="alice", email="alice@x.org")
        _token, plain = storage.issue_token(session=session, user_id=alice.id)
        ids: dict[str, int] = {}
        for name in ("ranked", "queued", "failed"):
            submission, evaluation = add_submission(session, alice, evalset, f"alice {name}")
            ids[name] = submission.id
            if name == "ranked":
                run_evaluation(session, evaluation.id, public=0.9)
            elif name == "failed":
                fail_on_hidden_episode(session, evaluation.id)
    engine.dispose()
    with uvicorn_server(database_url, root) as base:
        yield base, plain, ids


@contextmanager
def webdriver(profile: Path) -> Iterator[WebDriver]:
    """chromedriver on a free port of this network namespace's loopback, and a browser session of it."""
    if not Path(CHROMEDRIVER).exists():
        pytest.fail(f"chromedriver is needed at {CHROMEDRIVER} (Debian package 'chromium-driver')")
    port = free_port()
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
            assert process.poll() is None and time.monotonic() < deadline, "chromedriver did not start"
            time.sleep(0.2)
        driver = WebDriver(url, profile)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with webdriver(tmp_path / "profile") as driver:
        yield driver


def test_a_participant_signs_in_and_reads_their_failed_submission(
    site: tuple[str, str, dict[str, int]], browser: WebDriver
) -> None:
    base, token, ids = site
    page = browser.open(f"{base}/submissions/{ids['failed']}")
    assert "<h2>Sign in</h2>" in page and "does not exist" not in page
    browser.type_into("#token", "lst_0123456789abcdef_wrong")
    page = browser.click("main button[type=submit]", until='id="error"')
    assert "that token (26 characters) is unknown or revoked" in page and browser.cookies() == []
    browser.type_into("#token", token)
    page = browser.click("main button[type=submit]", until='id="signed-in"')
    assert "Signed in as <strong>alice</strong>" in page and '<span class="badge">crash</span>' in page
    assert visibility.hidden_episode_message("crash", 7) in page and SECRET not in page
    (cookie,) = browser.cookies()
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and token not in cookie["value"]
    assert 'id="state">queued<' in browser.open(f"{base}/submissions/{ids['queued']}")
    listing = browser.open(f"{base}/submissions")
    assert all(f'href="/submissions/{i}"' in listing for i in ids.values())
    page = browser.click("nav button[type=submit]", until='id="signin-link"')  # sign out
    assert 'id="signin-link"' in page and browser.cookies() == []
    assert "<h2>Sign in</h2>" in browser.open(f"{base}/submissions/{ids['queued']}")
