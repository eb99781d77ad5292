"""The dashboard in a real Chromium (Debian's /usr/bin/chromium, headless, driven by Playwright)
against a real `svc-stub service` process, with a CDP virtual authenticator for the passkey.

One browser session walks the whole story: the login gate, a wrong token (shown and counted), token
login and the dashboard with its data, registering a passkey, logging out, passkey login, and no
token anywhere in browser storage. The screenshots land in test-artifacts/ (gitignored).

There is no skip path: without Chromium the test fails and says how to install it.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from server_stub.service.private_dir import passkey_file
from tests.service.conftest import TOKEN, WRONG
from tests.support import PORT, ROOT, Server, running_server

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"
VIRTUAL_AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@pytest.fixture
def database(tmp_path: Path) -> Path:
    db = tmp_path / "service.db"
    subprocess.run(
        [sys.executable, "-m", "server_stub.service", "demo-data", "service", "--db", str(db)],
        check=True,
        capture_output=True,
    )
    return db


@pytest.fixture
def server(database: Path, tmp_path: Path) -> Iterator[Server]:
    with running_server(
        ["-m", "server_stub.service", "service", "--db", str(database), "--port", PORT],
        log_path=tmp_path / "server.log",
        ready_path="/health/live",
        env={"SERVICE_API_TOKEN": TOKEN},
    ) as running:
        yield running


@pytest.fixture
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"the browser tests need Debian's chromium at {CHROMIUM}; install it with "
            "`apt-get install -y chromium` (.ci/run does this)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


def security_events(server: Server, event: str) -> list[dict[str, object]]:
    found = []
    for line in server.log().splitlines():
        if line.startswith("{") and f'"event":"{event}"' in line:
            found.append(json.loads(line))
    return found


def sign_in_with_token(page: Page, token: str) -> None:
    page.fill("#token", token)
    page.click("#login-form button[type=submit]")


def test_dashboard_token_and_passkey_login_in_chromium(
    server: Server, browser: Browser, database: Path
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}")
            if message.type == "error" and "401" not in message.text
            else None
        ),
    )
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    authenticator_id = cdp.send(
        "WebAuthn.addVirtualAuthenticator", {"options": VIRTUAL_AUTHENTICATOR}
    )["authenticatorId"]
    # localhost, not 127.0.0.1: a secure context whose host name can be a WebAuthn RP id.
    base_url = server.base_url.replace("127.0.0.1", "localhost")

    # The login gate, with the passkey button since http://localhost is a secure context.
    page.goto(base_url + "/")
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#dashboard")).to_be_hidden()
    expect(page.locator("#passkey-login")).to_be_visible()
    expect(page.locator("#passkey-login-unavailable")).to_be_hidden()
    page.screenshot(path=ARTIFACTS / "login-gate.png")

    # A browser without the WebAuthn API (as on plain http with a non-loopback address): the
    # passkey button is hidden and the page says why; the token form stays.
    bare = context.new_page()
    bare.add_init_script("delete window.PublicKeyCredential;")
    bare.goto(base_url + "/")
    expect(bare.locator("#login-form")).to_be_visible()
    expect(bare.locator("#passkey-login")).to_be_hidden()
    expect(bare.locator("#passkey-login-unavailable")).to_contain_text("http://localhost")
    bare.close()

    # A wrong token: an error on the page, and a counted failure in the guard's security log.
    sign_in_with_token(page, WRONG)
    expect(page.locator("#login-error")).to_contain_text("not valid")
    expect(page.locator("#dashboard")).to_be_hidden()
    (failure,) = security_events(server, "auth_failure")
    assert failure["via"] == "login"
    assert failure["failures"] == 1

    # Token login: the dashboard with data and a drawn chart.
    sign_in_with_token(page, TOKEN)
    expect(page.locator("#dashboard")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator('#system dd[data-fact="Mode"]')).to_have_text("running")
    expect(page.locator('#system dd[data-fact="Account"]')).to_have_text("DEMO-001 (USD)")
    expect(page.locator("#positions tbody tr")).to_have_count(4)
    expect(page.locator("#positions tbody tr").first).to_contain_text("AAPL")
    expect(page.locator("#pnl-chart svg rect.bar")).to_have_count(90)
    expect(page.locator("#pnl-chart svg polyline.line")).to_have_count(1)
    assert page.locator("#pnl-chart svg polyline.line").bounding_box() is not None
    expect(page.locator("#events tbody tr")).to_have_count(10)
    expect(page.locator("#intel caption")).to_have_text("No intel received yet.")
    assert [event["via"] for event in security_events(server, "login")] == ["login"]

    # Register a passkey with the virtual authenticator.
    expect(page.locator("#passkey-list caption")).to_have_text("No passkey registered yet.")
    page.fill("#passkey-label", "virtual key")
    page.click("#passkey-register button[type=submit]")
    expect(page.locator("#passkey-message")).to_have_text('Passkey "virtual key" registered.')
    expect(page.locator("#passkey-list tbody tr")).to_have_count(1)
    expect(page.locator("#passkey-list tbody tr")).to_contain_text("localhost")
    expect(page.locator("#passkey-list tbody tr")).to_contain_text("never")
    (credential,) = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})[
        "credentials"
    ]
    assert credential["isResidentCredential"] is True
    assert credential["rpId"] == "localhost"
    stored = passkey_file(database)
    assert stored == database.with_name(database.name + ".webauthn")  # spec 2's file
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    (kept,) = json.loads(stored.read_text())["passkeys"]
    assert (kept["label"], kept["rp_id"]) == ("virtual key", "localhost")
    page.screenshot(path=ARTIFACTS / "dashboard.png", full_page=True)

    # Log out, then sign in with the passkey alone.
    page.click("#logout")
    expect(page.locator("#login")).to_be_visible()
    assert not [c for c in context.cookies() if c["name"] == "svc_session"]
    page.click("#passkey-login")
    expect(page.locator("#dashboard")).to_be_visible()
    expect(page.locator('#system dd[data-fact="Mode"]')).to_have_text("running")
    expect(page.locator("#passkey-list tbody tr")).not_to_contain_text("never")
    assert [event["via"] for event in security_events(server, "login")] == ["login", "passkey"]
    (cookie,) = [c for c in context.cookies() if c["name"] == "svc_session"]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"

    # No token in any storage script can read; the session cookie is invisible to script.
    storage = page.evaluate(
        """() => ({
            local: Object.fromEntries(Object.entries(localStorage)),
            session: Object.fromEntries(Object.entries(sessionStorage)),
            cookie: document.cookie,
        })"""
    )
    assert storage == {"local": {}, "session": {}, "cookie": ""}
    assert TOKEN not in json.dumps(storage)

    # By IP address the page is a secure context, but browsers refuse an IP as RP id.
    by_address = context.new_page()
    by_address.goto(server.base_url + "/")
    expect(by_address.locator("#passkey-login")).to_be_hidden()
    expect(by_address.locator("#passkey-login-unavailable")).to_contain_text("not an IP address")
    assert problems == []
    context.close()
