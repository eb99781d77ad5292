"""A cloned folder's files made to break doctor and install (issue 31, finding 12): a `.mcp.json`
that is a link to /dev/zero, a FIFO or 100,000-deep JSON; an entry whose name and URL carry escape
sequences and line ends; `.cursor` swapped for a link to the home while install writes; a relative
XDG_CONFIG_HOME or CODEX_HOME; a `*.localhost` base URL. doctor and install run as processes of
their own, each in a home of its own."""

from __future__ import annotations

import json
import os
import pty
import resource
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.install.conftest import Home, RunCli

SVC_MCP = [sys.executable, "-m", "svc_mcp"]
UVX = sys.executable  # any absolute executable stands in for uvx


def environment(home: Home) -> dict[str, str]:
    """A home of its own: nothing of the real one is read."""
    base = home.home
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(base),
        "XDG_CONFIG_HOME": str(base / ".config"),
        "XDG_STATE_HOME": str(base / ".local" / "state"),
        "XDG_CACHE_HOME": str(base / ".cache"),
        "XDG_DATA_HOME": str(base / ".local" / "share"),
        "PORTAL_API_BASE": "http://127.0.0.1:9",
    }


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def run(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    """`svc-mcp ARGS` as a process in the project folder (memory capped, 60 s at most)."""
    return subprocess.run(
        [*SVC_MCP, *args],
        cwd=home.project,
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_memory,
        check=False,
    )


def make_hostile(kind: str, path: Path) -> str:
    """Makes `path` the hostile file; returns what the one line says about it."""
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
        return "not a regular file (a device)"
    if kind == "fifo":
        os.mkfifo(path)
        return "not a regular file (a FIFO)"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return "nested too deeply"


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "deep"])
def test_a_hostile_project_file_gets_one_clear_line(kind: str, fake_home: Home) -> None:
    says = make_hostile(kind, fake_home.project / ".mcp.json")
    doctor = run(fake_home, "doctor", "--toolsets", "portal", "--json")
    assert "Traceback" not in doctor.stderr, doctor.stderr[-2000:]
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    line = findings["host.claude-code.project"]
    assert line["status"] == "warn"
    assert says in line["message"]

    install = run(
        fake_home,
        *("install", "--client", "claude-code", "--scope", "project", "--source", "github"),
        *("--uvx", UVX),
    )
    assert install.returncode != 0
    assert "Traceback" not in install.stderr
    assert install.stderr.count("\n") == 1, install.stderr
    if kind != "dev-zero":  # a link out of the project is refused before anything is read
        assert says in install.stderr


@pytest.mark.e2e
def test_a_hostile_user_file_gets_one_clear_line(fake_home: Home) -> None:
    """A user's file that is a FIFO: read without blocking, refused in one line."""
    cursor = fake_home.user_file("cursor")
    cursor.parent.mkdir(parents=True)
    os.mkfifo(cursor)
    install = run(fake_home, "install", "--client", "cursor", "--source", "github", "--uvx", UVX)
    assert install.returncode != 0
    assert install.stderr.count("\n") == 1, install.stderr
    assert "is not a regular file (a FIFO)" in install.stderr


FORGED = "✓ host.forged  everything needed works"


@pytest.mark.e2e
def test_escape_sequences_and_line_ends_from_a_project_are_shown_escaped(
    fake_home: Home,
) -> None:
    """doctor on a terminal (a pty): an entry's name and URL cannot retitle the terminal, clear it,
    or print a line of their own."""
    name = f"x\n{FORGED}\x1b]0;pwned\x07\u202e"
    url = "http://127.0.0.1:9/\x1b[2J\r" + FORGED
    headers = {"Authorization": "Bearer ${env:SVC_MCP_GATEWAY_TOKEN}"}
    document = {"mcpServers": {name: {"url": url, "headers": headers}}}
    (fake_home.project / ".cursor").mkdir()
    (fake_home.project / ".cursor" / "mcp.json").write_text(json.dumps(document))

    controller, terminal = pty.openpty()
    env = environment(fake_home) | {"COLUMNS": "400", "TERM": "xterm"}
    process = subprocess.Popen(
        [*SVC_MCP, "doctor", "--toolsets", "portal"],
        cwd=fake_home.project,
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    process.wait(timeout=10)
    os.close(controller)
    text = output.decode("utf-8", "replace")
    assert "cursor.project" in text, text
    for raw in ("\x1b]0;pwned", "\x1b[2J", "\u202e", "\r" + FORGED):
        assert raw not in text, (raw, text)
    assert not [line for line in text.splitlines() if line.lstrip().startswith(FORGED)], text
    assert "\\x1b]0;pwned" in text


def test_a_folder_swapped_for_a_link_never_sends_the_write_outside(
    fake_home: Home, run_cli: RunCli
) -> None:
    """A thread swaps the project's `.cursor` for a link to the home's while install runs, again
    and again: the home's file is never written, nor anything else beside it."""
    home_cursor = fake_home.home / ".cursor"
    home_cursor.mkdir()
    (home_cursor / "mcp.json").write_text('{"mcpServers": {"mine": {"command": "/bin/true"}}}\n')
    before = {p.name: p.read_bytes() for p in home_cursor.iterdir()}
    project = fake_home.project
    real, link = project / ".cursor", project / ".cursor-link"
    real.mkdir()
    link.symlink_to(home_cursor)
    aside = project / ".cursor-real"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            try:
                os.rename(real, aside)  # the real folder aside, the link in its place...
                os.rename(link, real)
                os.rename(real, link)  # ...and back
                os.rename(aside, real)
            except OSError:
                pass

    swapper = threading.Thread(target=swap)
    swapper.start()
    results = []
    try:
        for index in range(150):
            env = {"SERVICE_API_TOKEN": f"token-{index:04d}-" + "x" * 24}
            results.append(
                run_cli(
                    *("install", "--client", "cursor", "--scope", "project", "--source"),
                    *("github", "--uvx", UVX, "--no-env-refs"),
                    env=env,
                ).returncode
            )
    finally:
        stop.set()
        swapper.join()
    assert {p.name: p.read_bytes() for p in home_cursor.iterdir()} == before
    assert 0 in results, "install never got through"


@pytest.mark.e2e
def test_a_relative_config_home_is_ignored(fake_home: Home) -> None:
    """A relative XDG_CONFIG_HOME or CODEX_HOME would make a file of the current (cloned) folder a
    trusted user file, whose entries doctor starts without asking."""
    project = fake_home.project
    (project / "cfg" / "Code" / "User").mkdir(parents=True)
    entry = {"servers": {"svc": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}
    (project / "cfg" / "Code" / "User" / "mcp.json").write_text(json.dumps(entry))
    (project / "codex").mkdir()
    (project / "codex" / "config.toml").write_text(
        '[mcp_servers.svc]\nurl = "http://127.0.0.1:9/mcp"\n'
    )
    env = environment(fake_home) | {"XDG_CONFIG_HOME": "cfg", "CODEX_HOME": "codex"}
    doctor = subprocess.run(
        [*SVC_MCP, "doctor", "--toolsets", "portal", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    paths = [json.loads(line).get("path") for line in doctor.stdout.splitlines()]
    read = [project / path for path in paths if path]  # a relative path is the project's
    assert not [path for path in read if path.resolve().is_relative_to(project)], doctor.stdout


def test_a_subdomain_of_localhost_is_not_loopback(fake_home: Home, run_cli: RunCli) -> None:
    """`*.localhost` may be resolved over DNS: a token over plain http to it needs the opt-in."""
    env = {"PORTAL_API_BASE": "http://evil.localhost:8081", "PORTAL_SESSION_TOKEN": "p" * 40}
    refused = run_cli("install", "--client", "cursor", "--source", "github", "--uvx", UVX, env=env)
    assert refused.returncode == 2
    assert "clear text over http:// to evil.localhost" in refused.stderr
    doctor = run_cli("doctor", "--toolsets", "portal", "--json", env=env)
    settings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    assert "plain http:// to evil.localhost" in settings["portal.settings"]["message"]
    assert "p" * 40 not in doctor.stdout + doctor.stderr + refused.stderr
