"""A mistyped word gets one line and the nearest right one (issue 35): `svc-portal` reports a
mistyped command or option as svc-mcp does (`<prog>: usage: <message> (see <command> --help)`,
exit 2); svc-mcp names the nearest option, the nearest tools over MCP (never echoing the name
sent), and a mistyped `--fields` name (never another text, which may be a token)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult

from tests.mcp.conftest import SVC_MCP, SVC_PORTAL, over_stdio, process_env
from tests.support import closed_url

pytestmark = pytest.mark.e2e


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args),
        env=process_env(env or {}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            [SVC_PORTAL, "catalog", "lst"],
            "svc-portal catalog: usage: no command 'lst'; did you mean list? "
            "(see svc-portal catalog --help)",
        ),
        (
            [SVC_PORTAL, "catalog", "list", "--limt", "3"],
            "svc-portal: usage: No such option: --limt (--limt: did you mean --limit?) "
            "(see svc-portal --help)",
        ),
        (
            [SVC_MCP, "portal", "catalog", "lst"],
            "svc-mcp portal catalog: usage: no command 'lst'; did you mean list? "
            "(see svc-mcp portal catalog --help)",
        ),
    ],
)
def test_a_mistyped_word_is_one_line(args: list[str], line: str) -> None:
    done = run(*args)
    assert (done.returncode, done.stderr.splitlines(), done.stdout) == (2, [line], "")


def test_no_arguments_still_show_the_help() -> None:
    done = run(SVC_PORTAL)
    assert "Usage: svc-portal [OPTIONS] COMMAND [ARGS]..." in done.stdout + done.stderr
    assert "catalog" in done.stdout + done.stderr


def test_a_mistyped_option_gets_the_nearest() -> None:
    done = run(SVC_MCP, "--tolsets", "portal", "tools")
    assert done.returncode == 2
    assert "--tolsets: did you mean --toolsets?" in done.stderr
    done = run(SVC_MCP, "get_orders", "--limt", "3")
    assert "--limt: did you mean --limit?" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_mistyped_tool_over_mcp_gets_the_nearest_names_not_its_own() -> None:
    async def call(session: ClientSession) -> CallToolResult:
        await session.initialize()
        return await session.call_tool("get_ordrs", {})

    with closed_url() as nowhere:
        result = asyncio.run(
            over_stdio({"PORTAL_API_BASE": nowhere, "SERVICE_API_BASE": nowhere}, call)
        )
        assert result.is_error
        assert (result.structured_content or {})["message"] == (
            "no tool of that name here; did you mean get_orders or get_risk? tools/list names them"
        )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ("id,stauts", "'stauts' is not a field of these records (did you mean 'status'?)"),
        ("id,s3cr3t-t0ken-value", "1 of the names given are not fields of these records"),
    ],
)
def test_fields_names_a_mistyped_field_and_never_another_text(fields: str, said: str) -> None:
    with closed_url() as nowhere:
        done = run(SVC_MCP, "get_orders", "--fields", fields, env={"SERVICE_API_BASE": nowhere})
        assert done.returncode == 2
        assert said in done.stderr
        assert "s3cr3t" not in done.stderr
