"""Real Claude Code (from npm) signs in to the gateway set up exactly as docs/team-gateway.md's
worked setup shows (its own snippet writes the authorization server's configuration: ports 3000
and 8765), as far as it goes without a person: `svc-mcp install --client claude-code --http`
writes the entry, `claude mcp login svc` (on a terminal: it refuses without one) opens the
authorization URL with `BROWSER`, a headless Chromium signs in on the login form and consents,
and the redirect reaches Claude Code's own loopback callback. Claude Code then keeps a token and
`claude mcp list` shows the server connected; the gateway's access line names the person.

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

from tests.mcp.conftest import SESSIONS, SVC_MCP, SVC_STUB, process_env
from tests.release.loopback_index import Namespace, loopback_namespace
from tests.support import ROOT
from tests.support_claude_code import QUIET_CLAUDE_CODE

DOCS = ROOT / "docs" / "team-gateway.md"
ISSUER = "http://127.0.0.1:3000"
PUBLIC_URL = "http://127.0.0.1:8765/mcp"
PORTAL_PORT = 8080
PERSON = "alice@team.example"
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
        subprocess.run([SVC_STUB, "demo-data", "portal", str(data)], check=True, timeout=120)
        issue = [SVC_STUB, "admin", "portal", "issue-session", "--ttl", "1h", "--data", str(data)]
        session = subprocess.run(
            [*issue, "--subject", SESSIONS["reader"]], check=True, capture_output=True, text=True
        ).stdout.strip()
        portal = [sys.executable, "-m", "server_stub", "portal", "--data", str(data)]
        gateway_log = tmp_path / "gateway.log"
        gateway_env = {
            "SVC_MCP_OAUTH_ISSUER": ISSUER,
            "SVC_MCP_PUBLIC_URL": PUBLIC_URL,
            "PORTAL_API_BASE": f"http://127.0.0.1:{PORTAL_PORT}",
            "PORTAL_SESSION_TOKEN": session,
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
                [SVC_MCP, "--http"], env=process_env(gateway_env), log=gateway_log,
                ready="http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp",
            ),
        ):  # fmt: skip
            yield Stack(ns, gateway_log, tmp_path / "home")


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


def test_claude_code_signs_in_with_the_least_scope_and_connects(
    stack: Stack, claude_code: Path, tmp_path: Path
) -> None:
    if not Path("/usr/bin/chromium").is_file():
        pytest.fail("this test needs Debian's chromium: `apt-get install -y chromium`")
    ns, home = stack.namespace, stack.home
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm", **QUIET_CLAUDE_CODE}
    installed = ns.run(
        [SVC_MCP, "install", "--client", "claude-code", "--http", PUBLIC_URL], env=env, cwd=home
    )
    assert installed.returncode == 0, installed.stderr
    assert f"Claude Code signs in to {ISSUER} itself" in installed.stderr

    before = ns.run([str(claude_code), "mcp", "list"], env=env, cwd=home, timeout=120)
    assert "svc: http://127.0.0.1:8765/mcp (HTTP) - ! Needs authentication" in before.stdout, (
        before.stdout + before.stderr
    )

    pages = tmp_path / "browser.jsonl"
    browser = browser_program(tmp_path, PERSON, pages)
    code, said = on_a_terminal(
        ns.command([str(claude_code), "mcp", "login", "svc"]),
        env={**env, "BROWSER": str(browser)}, cwd=home, timeout=180,
    )  # fmt: skip
    seen = [json.loads(line) for line in pages.read_text().splitlines()] if pages.exists() else []
    assert code == 0, f"{said}\nbrowser: {seen}"
    assert 'Authenticated with "svc"' in said, said

    # The authorization URL asked for the least scope (install's pin), plus a refresh token
    # because the server offers `offline_access`; the redirect came back to Claude Code itself.
    asked = parse_qs(urlsplit(seen[0]["opened"]).query)
    assert asked["scope"] == ["svc:read offline_access"], asked
    assert asked["resource"] == [PUBLIC_URL]
    (left,) = [page["leaving_for"] for page in seen if "leaving_for" in page]
    callback = urlsplit(left)
    assert (callback.hostname, callback.path) == ("localhost", "/callback"), left
    assert "code" in parse_qs(callback.query), left

    kept = json.loads((home / ".claude" / ".credentials.json").read_text())["mcpOAuth"]
    (token,) = [entry for entry in kept.values() if entry["serverName"] == "svc"]
    assert token["serverUrl"] == PUBLIC_URL
    assert token["scope"] == "svc:read"
    assert token["accessToken"], "no access token kept"

    after = ns.run([str(claude_code), "mcp", "list"], env=env, cwd=home, timeout=120)
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

    doctor = ns.run([SVC_MCP, "doctor", "--json"], env=env, cwd=home)
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    entry = findings["host.claude-code.user"]
    assert (entry["status"], entry["mode"]) == ("ok", "oauth"), entry
    assert "`claude mcp login svc`" in entry["message"]
