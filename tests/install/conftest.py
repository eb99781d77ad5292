"""Fixtures for `svc-mcp install`, `uninstall` and `doctor`: a fake home, the CLI run in-process,
a stand-in for uvx, and real `svc-stub portal` / `svc-stub service` processes."""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import sys
import textwrap
import threading
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.cli.main import main
from svc_mcp.hosts.table import HOSTS
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.mcp.conftest import portal  # noqa: F401 - the shared portal stub fixture
from tests.support import PORT, Server, running_server
from tests.support_claude_code import claude_code  # noqa: F401 - real Claude Code from npm

SVC_STUB = str(Path(sys.executable).parent / "svc-stub")
SERVICE_TOKEN = "svc-install-test-token-7b3e9d2c5a1f"
WRONG_SERVICE_TOKEN = "svc-install-wrong-token-00000000000"
# Every variable the commands read; each test starts with none of them set.
CLEARED = (
    "UV_DEFAULT_INDEX",  # the user's package index is never asked: tests name a loopback one
    "UV_INDEX_URL",
    "PIP_INDEX_URL",
    "SERVICE_API_BASE",
    "SERVICE_API_TOKEN",
    "DASHBOARD_API_TOKEN",
    "PORTAL_API_BASE",
    "PORTAL_SESSION_TOKEN",
    "SSL_CERT_FILE",
    "SVC_MCP_TIMEOUT_SECONDS",
    "SVC_MCP_GATEWAY_TOKEN",
    "UV_DEFAULT_INDEX",
    "UV_INDEX_URL",
    "PIP_INDEX_URL",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "APPDATA",
    "CODEX_HOME",
)
HOST_NAMES = tuple(HOSTS)
# The file each client's user configuration lands in on Linux, relative to the home.
LINUX_USER_FILES: dict[str, str] = {
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
    "windsurf": ".codeium/windsurf/mcp_config.json",
    "gemini": ".gemini/settings.json",
    "antigravity": ".gemini/antigravity-cli/mcp_config.json",
    "codex": ".codex/config.toml",
}
REFERENCING_CLIENTS = [client for client in HOST_NAMES if HOSTS[client].takes_references]


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Home:
    """A fake home and a project directory (the current directory while the CLI runs)."""

    home: Path
    project: Path

    def user_file(self, client: str) -> Path:
        return self.home / LINUX_USER_FILES[client]


RunCli = Callable[..., CliRun]


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return Home(home, project)


@pytest.fixture
def run_cli(
    fake_home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> RunCli:
    """`svc-mcp ARGS` in this process, in the fake home, with `env` added to the environment."""

    def run(*args: str, env: dict[str, str] | None = None) -> CliRun:
        with monkeypatch.context() as patch:
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            try:
                main(list(args))
                returncode = 0
            except SystemExit as exit_:
                returncode = exit_.code if isinstance(exit_.code, int) else 1
        captured = capsys.readouterr()
        return CliRun(returncode, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def fake_uvx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An executable stand-in for uvx: runs svc-mcp from this test environment, ignoring --from."""
    path = tmp_path_factory.mktemp("bin") / "uvx"
    script = f"""\
        #!{sys.executable}
        import os
        import sys

        args = sys.argv[1:]
        if args[:1] == ["--from"]:
            args = args[2:]
        if args[:1] != ["svc-mcp"]:
            sys.exit(f"fake uvx: expected svc-mcp, got {{args}}")
        os.execv(sys.executable, [sys.executable, "-m", "svc_mcp", *args[1:]])
        """
    path.write_text(textwrap.dedent(script))
    path.chmod(0o755)
    return path


def parse_config(client: str, path: Path) -> dict[str, Any]:
    """The file as the host would read it: JSON, or TOML read by the standard library."""
    text = path.read_text(encoding="utf-8")
    document = tomllib.loads(text) if HOSTS[client].file_format == "toml" else json.loads(text)
    assert isinstance(document, dict)
    return document


def servers_of(client: str, path: Path) -> dict[str, Any]:
    servers = parse_config(client, path)[HOSTS[client].servers_key]
    assert isinstance(servers, dict)
    return servers


# ----------------------------------------------------------------------------------- the stubs


@e2e_fixture(scope="session")
def service_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("install-service") / "service.db"
    stub_data.service_db(db)
    return db


StartService = Callable[[str], Server]


@e2e_fixture()
def start_service(service_db: Path, tmp_path: Path) -> Iterator[StartService]:
    """Starts a fresh data service stub (its own lockout state) with the given token."""
    with contextlib.ExitStack() as stack:
        started = itertools.count()

        def start(token: str) -> Server:
            return stack.enter_context(
                running_server(
                    ["-m", "server_stub", "service", "--db", str(service_db), "--port", PORT],
                    log_path=tmp_path / f"service-{next(started)}.log",
                    ready_path="/health/live",
                    env={"SERVICE_API_TOKEN": token},
                )
            )

        yield start


def refused_requests(server: Server) -> int:
    """How many requests the service refused for their credential (401) or the address's lockout
    (429), from its access log: one line per request. (The security log cannot say: it folds
    repeated failures into one summary line.)"""
    return sum(
        1
        for line in server.settled_log().splitlines()
        if line.startswith("{") and json.loads(line).get("status") in (401, 429)
    )


# ------------------------------------------------------------------------ a package index on loopback


@dataclass(frozen=True)
class FakeIndex:
    """A PEP 503 simple index: `with_package` lists svc-mcp, `without_package` does not."""

    base: str

    @property
    def with_package(self) -> str:
        return f"{self.base}/has/simple"

    @property
    def without_package(self) -> str:
        return f"{self.base}/empty/simple"


class _IndexHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/has/simple/svc-mcp":
            body = (
                b'<html><body><a href="svc_mcp-0.1.0.tar.gz">svc_mcp-0.1.0.tar.gz</a></body></html>'
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
        else:
            body = b"Not Found"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def fake_index() -> Iterator[FakeIndex]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _IndexHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeIndex(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
