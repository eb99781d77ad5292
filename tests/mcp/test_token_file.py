"""Backend tokens from files, read at call time (issue 42.8): a portal token file replaced by a
rename, as secret managers do, is used on the next call by a running stdio server and a running
gateway alike, both confined (Landlock: the file's folder stays readable), no restart. An
expired or refused portal session says what renews it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.backends import PORTAL
from svc_mcp.core.connection import answer
from svc_mcp.core.errors import Misconfigured, Unauthorized
from tests.mcp.conftest import PortalStub, over_http, over_stdio, process_env, run_in_process
from tests.support import PORT, Server, running_server


def replace_by_rename(path: Path, token: str) -> None:
    """What a secret manager does: a new file beside it, renamed over the old one."""
    fresh = path.with_name(f".{path.name}.new")
    fresh.write_text(token + "\n")
    os.replace(fresh, path)


@pytest.fixture
def token_file(tmp_path: Path, portal: PortalStub) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir()
    path = folder / "portal-session"
    path.write_text(portal.tokens["reader"] + "\n")
    return path


@pytest.fixture
def gateway(portal: PortalStub, token_file: Path, tmp_path: Path) -> Iterator[Server]:
    variables = portal.env(PORTAL_SESSION_TOKEN_FILE=str(token_file))
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=tmp_path / "gateway.log",
        ready_path="/mcp",
        env=process_env(variables),
    ) as server:
        yield server


async def whoami(session: ClientSession) -> str:
    result = await session.call_tool("portal_whoami", {})
    assert result.structured_content is not None, result.content
    return str(result.structured_content.get("id"))


def test_a_renewed_token_file_is_used_on_the_next_call_by_stdio_and_the_gateway(
    portal: PortalStub, token_file: Path, gateway: Server
) -> None:
    url = gateway.base_url + "/mcp"
    seen: list[tuple[str, str]] = []

    async def both(stdio: ClientSession) -> None:
        async def over_the_gateway(session: ClientSession) -> None:
            await session.initialize()
            seen.append((await whoami(stdio), await whoami(session)))
            replace_by_rename(token_file, portal.tokens["auditor"])
            seen.append((await whoami(stdio), await whoami(session)))

        await stdio.initialize()
        await over_http(url, over_the_gateway)

    variables = portal.env(PORTAL_SESSION_TOKEN_FILE=str(token_file))
    anyio.run(over_stdio, variables, both)
    assert seen == [("carol", "carol"), ("alice", "alice")]
    # Both confined, with the token file's folder readable and nothing more of it.
    assert f"reads: {token_file.parent} +" in gateway.log()
    assert "svc-mcp --http: confined" in gateway.log()


def test_a_token_file_and_its_variable_together_are_refused(token_file: Path) -> None:
    environ = {"PORTAL_SESSION_TOKEN": "a-token", "PORTAL_SESSION_TOKEN_FILE": str(token_file)}
    with pytest.raises(Misconfigured, match="both PORTAL_SESSION_TOKEN and"):
        PORTAL.connect(environ)


def test_an_unreadable_token_file_is_named_not_quoted(tmp_path: Path) -> None:
    with pytest.raises(Misconfigured, match="PORTAL_SESSION_TOKEN_FILE names a file that cannot"):
        PORTAL.connect({"PORTAL_SESSION_TOKEN_FILE": str(tmp_path / "missing")})
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(Misconfigured, match="is empty"):
        PORTAL.connect({"PORTAL_SESSION_TOKEN_FILE": str(empty)})


def test_an_expired_portal_session_says_what_renews_it(token_file: Path) -> None:
    connection = PORTAL.connect({"PORTAL_SESSION_TOKEN_FILE": str(token_file)})
    expired = (
        b'{"ok": false, "error": {"code": "unauthorized", "message": "the session has expired"}}'
    )
    with pytest.raises(Unauthorized) as refused:
        answer(connection, "GET /api/whoami", 401, None, expired, "a session")
    message = str(refused.value)
    assert "issue-session" in message
    assert "replace the file" in message
    assert "the file PORTAL_SESSION_TOKEN_FILE names" in message
    assert token_file.read_text().strip() not in message


def test_install_writes_an_absolute_token_file_and_refuses_the_rest(token_file: Path) -> None:
    from svc_mcp.hosts.entries import install_env
    from svc_mcp.hosts.errors import InstallError

    environ = {"PORTAL_API_BASE": "http://127.0.0.1:8081"}
    written = install_env([f"PORTAL_SESSION_TOKEN_FILE={token_file}"], environ)
    assert written["PORTAL_SESSION_TOKEN_FILE"] == str(token_file)
    with pytest.raises(InstallError, match="must be an absolute path"):
        install_env(["PORTAL_SESSION_TOKEN_FILE=secrets/portal-session"], environ)
    both = {**environ, "PORTAL_SESSION_TOKEN": "a" * 32}
    with pytest.raises(InstallError, match="are both set"):
        install_env([f"PORTAL_SESSION_TOKEN_FILE={token_file}"], both)


def test_doctor_reads_the_token_file_and_names_it(portal: PortalStub, token_file: Path) -> None:
    variables = portal.env(PORTAL_SESSION_TOKEN_FILE=str(token_file))
    run = run_in_process(svc_mcp_cli.main, ["doctor", "--toolsets", "portal"], variables)
    assert "set (from PORTAL_SESSION_TOKEN_FILE)" in run.stdout, run.stdout + run.stderr
    assert "signed in as carol" in run.stdout
    assert portal.tokens["reader"] not in run.stdout + run.stderr
