"""Real Claude Code (from npm) signs in to the gateway set up exactly as docs/team-gateway.md's
worked setup shows (its own snippet writes the authorization server's configuration: ports 3000
and 8765), as far as it goes without a person: `svc-mcp install --client claude-code --http`
writes the entry, `claude mcp login svc` (on a terminal: it refuses without one) opens the
authorization URL with `BROWSER`, a headless Chromium signs in on the login form and consents,
and the redirect reaches Claude Code's own loopback callback. Claude Code then keeps a token and
`claude mcp list` shows the server connected; the gateway's access line names the person.

And what Claude Code does with the gateway's 403 `insufficient_scope`: with a stand-in for the
Messages API (tests/oauth/fake_messages_api.py) `claude -p` calls `submit_intel` with no model.
It does not step up past the scope its entry pins; pinned to both scopes, bob's write is stored.

Everything runs in a network namespace of loopback only (the npm install runs before, outside):
Claude Code, the browser and the servers can reach nothing beyond this machine."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests import support_stub_data as stub_data
from tests.mcp.conftest import INTEL_KEY, SERVICE_TOKEN, SESSIONS, SVC_MCP, process_env
from tests.mcp.test_service_tools import signed_envelope
from tests.release.loopback_index import Namespace, loopback_namespace
from tests.support import ROOT
from tests.support_claude_code import QUIET_CLAUDE_CODE

DOCS = ROOT / "docs" / "team-gateway.md"
ISSUER = "http://127.0.0.1:3000"
PUBLIC_URL = "http://127.0.0.1:8765/mcp"
PORTAL_PORT, SERVICE_PORT, MESSAGES_PORT = 8081, 8080, 8090  # svc-mcp's defaults for the two
ALICE, BOB = "alice@team.example", "bob@team.example"
SNIPPET = re.compile(r"<<'EOF'\n(.*?)\nEOF\n", re.DOTALL)


def docs_idp_snippet() -> str:
    """The Python the worked setup runs to write the authorization server's configuration."""
    found = SNIPPET.search(DOCS.read_text())
    assert found is not None, "docs/team-gateway.md's worked setup has no configuration snippet"
    return found.group(1)


@dataclass(frozen=True)
class Stack:
    namespace: Namespace
    gateway_log: Path
    home: Path


@pytest.fixture
def stack(idp_root: Path, tmp_path: Path) -> Iterator[Stack]:
    """The worked setup in a namespace of its own: the authorization server configured by the
    docs' snippet, a portal stub, and `svc-mcp --http` with the docs' two variables."""
    with loopback_namespace(["sleep", "infinity"], tmp_path / "namespace.log") as (ns, _):
        idp = tmp_path / "idp"
        idp.mkdir(mode=0o700)
        subprocess.run(
            [sys.executable, "-"], input=docs_idp_snippet(), text=True, check=True,
            env={**os.environ, "IDP": str(idp)}, timeout=60,
        )  # fmt: skip
        config = json.loads((idp / "idp.json").read_text())
        assert (config["port"], config["resources"]) == (3000, [PUBLIC_URL])
        data = tmp_path / "portal"
        stub_data.portal_folder(data)
        session = stub_data.portal_session(data, SESSIONS["reader"], ttl="1h")
        portal = [sys.executable, "-m", "server_stub", "portal", "--data", str(data)]
        db = tmp_path / "service.db"
        stub_data.service_db(db)
        service = [sys.executable, "-m", "server_stub", "service", "--db", str(db)]
        service_env = {"SERVICE_API_TOKEN": SERVICE_TOKEN, "SERVICE_INTEL_HMAC": INTEL_KEY}
        gateway_log = tmp_path / "gateway.log"
        gateway_env = {
            "SVC_MCP_OAUTH_ISSUER": ISSUER,
            "SVC_MCP_PUBLIC_URL": PUBLIC_URL,
            "PORTAL_API_BASE": f"http://127.0.0.1:{PORTAL_PORT}",
            "PORTAL_SESSION_TOKEN": session,
            "SERVICE_API_BASE": f"http://127.0.0.1:{SERVICE_PORT}",
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
        }
        with (
            ns.background(
                ["node", str(idp_root / "server.js"), str(idp / "idp.json")],
                env=os.environ, log=tmp_path / "idp.log",
                ready=f"{ISSUER}/.well-known/openid-configuration",
            ),
            ns.background(
                [*portal, "--port", str(PORTAL_PORT)], env=process_env({}),
                log=tmp_path / "portal.log", ready=f"http://127.0.0.1:{PORTAL_PORT}/api/page",
            ),
            ns.background(
                [*service, "--port", str(SERVICE_PORT)], env=process_env(service_env),
                log=tmp_path / "service.log", ready=f"http://127.0.0.1:{SERVICE_PORT}/health/live",
            ),
            ns.background(
                [SVC_MCP, "--http"], env=process_env(gateway_env), log=gateway_log,
                ready="http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp",
            ),
        ):  # fmt: skip
            home = tmp_path / "home"
            home.mkdir()
            yield Stack(ns, gateway_log, home)


def on_a_terminal(
    command: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
) -> tuple[int, str]:
    """`command`'s exit code and all it wrote, run on a terminal of its own (a pty)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        command, stdin=terminal, stdout=terminal, stderr=terminal, env=dict(env), cwd=cwd,
        start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    written = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            chunk = b""
            if ready:
                # OSError: the terminal's other side closed (the program is gone).
                with contextlib.suppress(OSError):
                    chunk = os.read(controller, 65536)
                written += chunk
            if not chunk and process.poll() is not None:
                break
        else:
            process.kill()
            raise AssertionError(f"{command[-3:]} still ran after {timeout} s:\n{written!r}")
    finally:
        os.close(controller)
        process.wait(timeout=10)
    return process.returncode, written.decode(errors="replace")


def browser_program(folder: Path, person: str, log: Path) -> Path:
    """What Claude Code runs as `$BROWSER URL`: Chromium signing in as `person`."""
    program = folder / "sign-in-browser"
    program.write_text(
        "#!/bin/sh\n"
        f"export SIGN_IN_AS='{person}' SIGN_IN_LOG='{log}' PYTHONPATH='{ROOT}'\n"
        f"exec '{sys.executable}' -m tests.oauth.chromium_sign_in \"$1\"\n"
    )
    program.chmod(0o755)
    return program


def claude_env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm", **QUIET_CLAUDE_CODE}


def install(stack: Stack) -> None:
    installed = stack.namespace.run(
        [SVC_MCP, "install", "--client", "claude-code", "--http", PUBLIC_URL],
        env=claude_env(stack.home), cwd=stack.home,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert f"Claude Code signs in to {ISSUER} itself" in installed.stderr


def sign_in(stack: Stack, claude: Path, person: str, folder: Path) -> list[dict[str, str]]:
    """`claude mcp login svc` with `person` at the browser; the pages the browser saw."""
    if not Path("/usr/bin/chromium").is_file():
        pytest.fail("this test needs Debian's chromium: `apt-get install -y chromium`")
    folder.mkdir()
    pages = folder / "browser.jsonl"
    code, said = on_a_terminal(
        stack.namespace.command([str(claude), "mcp", "login", "svc"]),
        env={**claude_env(stack.home), "BROWSER": str(browser_program(folder, person, pages))},
        cwd=stack.home, timeout=180,
    )  # fmt: skip
    seen = browser_pages(pages)
    assert code == 0, f"{said}\nbrowser: {seen}"
    assert 'Authenticated with "svc"' in said, said
    return seen


def browser_pages(pages: Path) -> list[dict[str, str]]:
    """The browser's lines, once it has ended: Claude Code returns as soon as its callback is hit,
    while the browser may still be writing what it saw."""
    deadline = time.monotonic() + 60
    while True:
        seen = (
            [json.loads(line) for line in pages.read_text().splitlines()] if pages.exists() else []
        )
        if any("ended" in line for line in seen):
            return seen
        assert time.monotonic() < deadline, f"the browser never wrote its last line: {seen}"
        time.sleep(0.1)


def asked_for(pages: list[dict[str, str]]) -> list[str]:
    """The scope the authorization URL Claude Code opened asks for."""
    return parse_qs(urlsplit(pages[0]["opened"]).query)["scope"]


def kept_token(stack: Stack) -> dict[str, str]:
    kept = json.loads((stack.home / ".claude" / ".credentials.json").read_text())["mcpOAuth"]
    (token,) = [entry for entry in kept.values() if entry["serverName"] == "svc"]
    assert token["serverUrl"] == PUBLIC_URL
    assert token["accessToken"], "no access token kept"
    return dict(token)


def test_claude_code_signs_in_with_the_least_scope_and_connects(
    stack: Stack, claude_code: Path, tmp_path: Path
) -> None:
    ns, env = stack.namespace, claude_env(stack.home)
    install(stack)
    before = ns.run([str(claude_code), "mcp", "list"], env=env, cwd=stack.home, timeout=120)
    assert "svc: http://127.0.0.1:8765/mcp (HTTP) - ! Needs authentication" in before.stdout, (
        before.stdout + before.stderr
    )

    seen = sign_in(stack, claude_code, ALICE, tmp_path / "alice")
    # The authorization URL asked for the least scope (install's pin), plus a refresh token
    # because the server offers `offline_access`; the redirect came back to Claude Code itself.
    assert asked_for(seen) == ["svc:read offline_access"], seen[0]
    assert parse_qs(urlsplit(seen[0]["opened"]).query)["resource"] == [PUBLIC_URL]
    (left,) = [page["leaving_for"] for page in seen if "leaving_for" in page]
    callback = urlsplit(left)
    assert (callback.hostname, callback.path) == ("localhost", "/callback"), left
    assert "code" in parse_qs(callback.query), left
    token = kept_token(stack)
    assert token["scope"] == "svc:read"

    after = ns.run([str(claude_code), "mcp", "list"], env=env, cwd=stack.home, timeout=120)
    assert "svc: http://127.0.0.1:8765/mcp (HTTP) - ✔ Connected" in after.stdout, (
        after.stdout + after.stderr
    )
    # The gateway names the person (a keyed hash of the e-mail, never the address) and the
    # client Claude Code registered.
    log = stack.gateway_log.read_text()
    listed = [line for line in log.splitlines() if 'call="tools/list"' in line]
    assert listed, log
    assert all(re.search(r'sub="email:[0-9a-f]{12}"', line) for line in listed), listed
    assert all(f'client_id="{token["clientId"]}"' in line for line in listed), listed
    assert "team.example" not in log

    doctor = ns.run([SVC_MCP, "doctor", "--json"], env=env, cwd=stack.home)
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    entry = findings["host.claude-code.user"]
    assert (entry["status"], entry["mode"]) == ("ok", "oauth"), entry
    assert "`claude mcp login svc`" in entry["message"]


def forward_intel(stack: Stack, claude: Path, envelope: dict[str, object], log: Path) -> str:
    """What `claude -p` prints when its "model" (the stand-in) calls `submit_intel`."""
    arguments = json.dumps({"envelope": envelope})
    fake = [sys.executable, "-m", "tests.oauth.fake_messages_api", str(MESSAGES_PORT)]
    env = {
        **claude_env(stack.home),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{MESSAGES_PORT}",
        "ANTHROPIC_API_KEY": "sk-ant-not-a-key",
    }
    with stack.namespace.background(
        [*fake, "mcp__svc__submit_intel", arguments],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, log=log,
        ready=f"http://127.0.0.1:{MESSAGES_PORT}/",
    ):  # fmt: skip
        done = stack.namespace.run(
            [str(claude), "-p", "forward the intel", "--allowedTools", "mcp__svc__submit_intel"],
            env=env, cwd=stack.home, timeout=180,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def stored_intel(stack: Stack) -> dict[str, dict[str, object]]:
    read = (
        "import json, sys, urllib.request\n"
        "request = urllib.request.Request(sys.argv[1], headers={'Authorization': sys.argv[2]})\n"
        "print(urllib.request.urlopen(request, timeout=10).read().decode())\n"
    )
    url = f"http://127.0.0.1:{SERVICE_PORT}/api/v1/intel"
    done = stack.namespace.run(
        [sys.executable, "-c", read, url, f"Bearer {SERVICE_TOKEN}"], env=os.environ
    )
    assert done.returncode == 0, done.stderr
    return {record["id"]: record for record in json.loads(done.stdout)["data"]}


def test_claude_code_does_not_step_up_past_its_pin_and_bob_pins_both(
    stack: Stack, claude_code: Path, tmp_path: Path
) -> None:
    install(stack)
    assert asked_for(sign_in(stack, claude_code, BOB, tmp_path / "first")) == [
        "svc:read offline_access"
    ]
    said = forward_intel(stack, claude_code, signed_envelope(id="cc-1"), tmp_path / "api-1.log")
    # The gateway's 403 names svc:intel; Claude Code notes the step-up but opens no browser in
    # the session, and the call's result says something else.
    assert re.search(r'status=403 .*tool="submit_intel"', stack.gateway_log.read_text())
    assert "requires re-authorization" in said, said
    assert "cc-1" not in stored_intel(stack)
    assert kept_token(stack).get("stepUpScope") == "svc:intel"
    # Signing in again asks for the pin again, never for the scope the gateway named.
    again = sign_in(stack, claude_code, BOB, tmp_path / "again")
    assert asked_for(again) == ["svc:read offline_access"]
    assert kept_token(stack)["scope"] == "svc:read"

    # What doctor tells bob, and what the docs say he does: pin both, and sign in again.
    entries = stack.home / ".claude.json"
    document = json.loads(entries.read_text())
    document["mcpServers"]["svc"]["oauth"] = {"scopes": "svc:read svc:intel"}
    entries.write_text(json.dumps(document))
    both = sign_in(stack, claude_code, BOB, tmp_path / "both")
    assert asked_for(both) == ["svc:read svc:intel offline_access"]
    assert kept_token(stack)["scope"] == "svc:read svc:intel"
    said = forward_intel(stack, claude_code, signed_envelope(id="cc-2"), tmp_path / "api-2.log")
    record = stored_intel(stack)["cc-2"]
    assert re.fullmatch(r"email:[0-9a-f]{12}", str(record["forwarded_by"])), record
