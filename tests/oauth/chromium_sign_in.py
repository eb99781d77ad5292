"""A person's browser for a host that opens one (`BROWSER=... URL`): headless Chromium (Debian's
/usr/bin/chromium, driven by Playwright) opens the authorization URL, signs in on the example
authorization server's login form as $SIGN_IN_AS, consents, and follows the redirect to the
host's own callback. Each page it is on goes to $SIGN_IN_LOG (one JSON line each), and a last
line `{"ended": ...}` when it is done; it exits 1 when it never reaches a page beyond the
authorization server (the host's callback)."""

from __future__ import annotations

import json
import os
import signal
import sys
from urllib.parse import urlsplit

from playwright.sync_api import Request, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = 6
"""The login form, the consent form, the callback: more means the server keeps asking."""


def sign_in(url: str, person: str, log: str) -> bool:
    issuer = urlsplit(url).netloc
    with open(log, "a") as said, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        print(json.dumps({"opened": url}), file=said, flush=True)
        page = browser.new_page()

        def leaving(request: Request) -> None:
            # Said as the request leaves: the host may end this browser once its callback is hit.
            if request.is_navigation_request() and urlsplit(request.url).netloc != issuer:
                print(json.dumps({"leaving_for": request.url}), file=said, flush=True)

        page.on("request", leaving)
        page.goto(url)
        for _ in range(PAGES):
            print(json.dumps({"page": page.url}), file=said, flush=True)
            if urlsplit(page.url).netloc != issuer:
                text = page.inner_text("body")
                print(json.dumps({"landed": page.url, "text": text[:500]}), file=said, flush=True)
                browser.close()
                return True
            if page.locator("input[name=login]").count():
                page.fill("input[name=login]", person)
                page.fill("input[name=password]", "any")
            with page.expect_navigation():
                page.click("button[type=submit]")
        browser.close()
        return False


if __name__ == "__main__":
    # Claude Code ends the browser it opened (SIGTERM) as soon as its callback is hit, often
    # before the browser has written what it saw, and a host's terminal closing sends SIGHUP:
    # ignored here, so the browser finishes its last page and writes its last line (the test
    # waits for that line, and waited its whole minute when none came).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    landed = False
    try:
        landed = sign_in(sys.argv[1], os.environ["SIGN_IN_AS"], os.environ["SIGN_IN_LOG"])
    finally:
        with open(os.environ["SIGN_IN_LOG"], "a") as said:
            print(json.dumps({"ended": landed}), file=said, flush=True)
    sys.exit(0 if landed else 1)
