"""Run inside a network namespace with only a loopback (``ip netns exec NAME python -m tests.server.drive_chromium
BASE TOKEN PATH OUT``): start chromedriver there, sign in at BASE/signin with TOKEN as a person would (type it, click),
open BASE+PATH and write its DOM (``OUT/page.html``) and a screenshot (``OUT/page.png``).

The test that runs it (``test_browser_analytics``) cannot reach that namespace's loopback, so the whole browser
session happens here; the files are what it checks.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

from tests.server.test_browser_signin import webdriver


def main(base: str, token: str, path: str, out: Path) -> None:
    with webdriver(out / "profile") as driver:
        driver.command("POST", "/window/rect", {"width": 1200, "height": 1600})
        driver.open(f"{base}/signin?next={path}")
        driver.type_into("#token", token)
        page = driver.click("main button[type=submit]", until='id="signed-in"')
        (out / "page.html").write_text(page)
        (out / "page.png").write_bytes(base64.b64decode(driver.command("GET", "/screenshot")))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
