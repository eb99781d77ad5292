"""Credentials never reach an output, whatever shape they arrive in (issue 15, items 1, 2, 12):
a token with a trailing CR/LF is used without it, one with a control character, a space or
non-ASCII text is a `misconfigured` error naming the variable, a base URL carrying user info is
refused, a backend that echoes the credential is scrubbed, and oversized or endless CLI input ends
in a documented kind and exit code, never a traceback. Over real processes (the CLI, MCP over
stdio, doctor), plus a property test that feeds many such values through all three."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession
from mcp.types import CallToolResult, TextContent

from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.client import new_http_client
from svc_mcp.core.exits import EXIT_CODES
from svc_mcp.serve.server import build_server
from svc_mcp.tools.table import TOOLS
from tests.hardening.fake_backend import fake_backend
from tests.mcp.conftest import (
    SERVICE_TOKEN,
    SVC_MCP,
    ServiceStub,
    over_stdio,
    process_env,
    run_in_process,
)

SECRET = "s3cret-token-0123456789-abcdefghij"


def spellings(secret: str) -> list[str]:
    raw = secret.encode("utf-8", "surrogatepass")
    return [
        secret,
        repr(secret)[1:-1],
        repr(raw)[2:-1],
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    ]


def assert_hidden(secret: str, *outputs: str) -> None:
    for output in outputs:
        for form in spellings(secret):
            assert form not in output, f"{form!r} leaked"


def run(args: list[str], variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SVC_MCP, *args],
        env=process_env(variables),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _get_system(session: ClientSession) -> CallToolResult:
    await session.initialize()
    return await session.call_tool("get_system", {})


def mcp_get_system(variables: dict[str, str]) -> CallToolResult:
    return asyncio.run(over_stdio(variables, _get_system))


@pytest.fixture(scope="module")
def echo_backend() -> Iterator[str]:
    with fake_backend() as base:
        yield f"{base}/echo"


def test_a_token_with_a_trailing_crlf_is_used_without_it(service: ServiceStub) -> None:
    variables = service.env(f"{SERVICE_TOKEN}\r\n")
    done = run(["get_system"], variables)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode"] in ("running", "paused")
    result = mcp_get_system(variables)
    assert not result.is_error, text_of(result)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "token",
    [f"{SECRET}\x07", f"{SECRET[:10]}\rX{SECRET[10:]}", f"{SECRET} more", f"{SECRET}é"],
    ids=["bell", "inner CR", "space", "non-ASCII"],
)
def test_an_unusable_token_is_misconfigured_everywhere(echo_backend: str, token: str) -> None:
    variables = {"SERVICE_API_BASE": echo_backend, "SERVICE_API_TOKEN": token}
    cli = run(["get_system"], variables)
    assert cli.returncode == EXIT_CODES["misconfigured"]
    assert cli.stderr.startswith("svc-mcp: misconfigured: SERVICE_API_TOKEN holds ")
    assert cli.stderr.count("\n") == 1
    result = mcp_get_system(variables)
    assert result.is_error
    assert text_of(result).startswith("misconfigured: SERVICE_API_TOKEN holds ")
    doctor = run(["doctor", "--json", "--toolsets", "analytics"], variables)
    findings = [json.loads(line) for line in doctor.stdout.splitlines()]
    settings_finding = next(f for f in findings if f["check"] == "service.settings")
    assert settings_finding["status"] == "fail"
    assert doctor.returncode == EXIT_CODES["misconfigured"]
    assert_hidden(SECRET, cli.stdout, cli.stderr, text_of(result), doctor.stdout, doctor.stderr)


def test_a_base_url_with_user_info_is_refused_everywhere(service: ServiceStub) -> None:
    host = service.base_url.removeprefix("http://")
    variables = {**service.env(), "SERVICE_API_BASE": f"http://agent:{SECRET}@{host}"}
    cli = run(["get_system"], variables)
    assert cli.returncode == EXIT_CODES["misconfigured"]
    assert "SERVICE_API_BASE must not carry a user name or password" in cli.stderr
    result = mcp_get_system(variables)
    assert text_of(result).startswith("misconfigured: SERVICE_API_BASE must not carry")
    doctor = run(["doctor", "--json", "--toolsets", "analytics"], variables)
    assert doctor.returncode == EXIT_CODES["misconfigured"]
    assert_hidden(SECRET, cli.stdout, cli.stderr, text_of(result), doctor.stdout, doctor.stderr)


@pytest.mark.e2e
def test_a_backend_echoing_the_token_is_scrubbed(echo_backend: str) -> None:
    variables = {"SERVICE_API_BASE": echo_backend, "SERVICE_API_TOKEN": SECRET}
    cli = run(["get_system"], variables)
    assert cli.returncode == EXIT_CODES["unauthorized"]
    assert "[redacted]" in cli.stderr, "the echo was there to scrub"
    result = mcp_get_system(variables)
    doctor = run(["doctor", "--json", "--toolsets", "analytics"], variables)
    assert doctor.returncode == EXIT_CODES["unauthorized"]
    assert_hidden(SECRET, cli.stdout, cli.stderr, text_of(result), doctor.stdout, doctor.stderr)


def test_oversized_and_endless_cli_input_ends_in_a_kind_not_a_traceback(
    service: ServiceStub,
) -> None:
    long_symbol = run(["get_orders", "--symbol", "X" * 70_000], service.env())
    assert long_symbol.returncode == EXIT_CODES["invalid_argument"]
    assert long_symbol.stderr.startswith(
        "svc-mcp: invalid_argument: symbol is 70,000 characters; at most 1,024"
    )
    endless = run(["submit_intel", "--file", "/dev/zero"], service.env())
    assert endless.returncode == EXIT_CODES["usage"]
    assert "/dev/zero holds more than 64 KiB" in endless.stderr
    for done in (long_symbol, endless):
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1


ODD = ["\r", "\n", "\r\n", "\t", "\x1b", " x", "é", "\u2028", "\x7f", "%0d", "@", ":", "/"]
# Every generated secret starts with a marker no message contains, so finding it means a leak.
TOKENS = st.builds(
    lambda middle, end: f"Zq7{middle}{end}",
    st.one_of(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00")),
        st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.~", min_size=8, max_size=64),
    ),
    st.sampled_from(["", *ODD]),
)


async def _in_process_mcp() -> str:
    async with new_http_client() as http, Client(build_server(TOOLS, http)) as client:
        return text_of(await client.call_tool("get_system", {}))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(token=TOKENS, password=TOKENS)
def test_no_token_or_url_password_reaches_any_output(
    echo_backend: str, token: str, password: str
) -> None:
    """A token (echoed back by a hostile backend) and a base URL's password never appear in
    the CLI's output, an MCP result or doctor's report, in any spelling."""
    host = echo_backend.removeprefix("http://")
    for base_url in (echo_backend, f"http://u:{password}@{host}"):
        variables = {"SERVICE_API_BASE": base_url, "SERVICE_API_TOKEN": token}
        cli = run_in_process(svc_mcp_cli.main, ["get_system"], variables)
        doctor = run_in_process(
            svc_mcp_cli.main, ["doctor", "--json", "--toolsets", "analytics"], variables
        )
        with pytest.MonkeyPatch.context() as patch:
            for name, value in variables.items():
                patch.setenv(name, value)
            mcp_text = asyncio.run(_in_process_mcp())
        outputs = (cli.stdout, cli.stderr, doctor.stdout, doctor.stderr, mcp_text)
        for secret in (token.strip(), password):
            assert_hidden(secret, *outputs)
        for output in outputs:
            assert all(ch == "\n" or ch.isprintable() for ch in output), output
