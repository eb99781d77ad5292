"""The real `svc-mcp` and `svc-portal` console scripts: identity per call, one-line errors with
their exit codes, listing, the mounted `svc-mcp portal`, and no `mcp` import on the CLI path."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import httpx
import pytest

from portal_tools.tools import PORTAL_TOOLS
from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.exits import EXIT_CODES
from svc_mcp.tools.service import SERVICE_TOOLS
from svc_mcp.tools.table import TOOLS
from tests.hardening.fake_backend import ARRIVALS, fake_backend
from tests.mcp.conftest import (
    SVC_MCP,
    SVC_PORTAL,
    PortalStub,
    process_env,
    run_command,
    run_commands,
    run_in_process,
)
from tests.support import closed_url


def test_the_token_is_read_at_each_call(portal: PortalStub) -> None:
    """Changing PORTAL_SESSION_TOKEN between two calls changes the identity returned."""
    identities = []
    for caller in ("auditor", "reader", "auditor"):
        for command in ([SVC_MCP, "portal_whoami"], [SVC_PORTAL, "identity", "whoami"]):
            done = run_command(command, portal.env(caller))
            assert done.returncode == 0, done.stderr
            identities.append(json.loads(done.stdout))
    alice = {"id": "alice", "kind": "human", "role": "auditor"}
    carol = {"id": "carol", "kind": "human", "role": "reader"}
    assert identities == [alice, alice, carol, carol, alice, alice]


@dataclass(frozen=True)
class Failure:
    """A CLI call that must fail: its arguments, environment, exit kind and message parts."""

    args: Sequence[str]
    variables: Mapping[str, str]
    kind: str
    says: Sequence[str]


BOGUS_TOKEN = "not-a-session-0123456789abcdef"


def failures(portal: PortalStub, closed: str) -> dict[str, Failure]:
    """The failing calls, `closed` a URL where nothing listens."""
    return {
        "unknown token": Failure(
            [SVC_MCP, "portal_whoami"],
            portal.env(PORTAL_SESSION_TOKEN=BOGUS_TOKEN),
            "unauthorized",
            ["refused the token in PORTAL_SESSION_TOKEN", "set PORTAL_SESSION_TOKEN"],
        ),
        "reader on an auditor endpoint": Failure(
            [SVC_PORTAL, "identity", "sessions"],
            portal.env("reader"),
            "forbidden",
            ["needs the auditor role with a human session", "belongs to an identity without it"],
        ),
        "service auditor (not human)": Failure(
            [SVC_MCP, "portal_grants"],
            portal.env("service_auditor"),
            "forbidden",
            ["needs the auditor role with a human session"],
        ),
        "nothing listening": Failure(
            [SVC_MCP, "portal_page"],
            {"PORTAL_API_BASE": closed},
            "unreachable",
            [f"cannot reach the portal at {closed}", "PORTAL_API_BASE"],
        ),
        "not the portal's address": Failure(
            [SVC_PORTAL, "page", "get"],
            {"PORTAL_API_BASE": portal.base_url + "/elsewhere"},
            "not_found",
            ["has no GET /api/page", "PORTAL_API_BASE"],
        ),
        "a cursor the portal never issued": Failure(
            [SVC_MCP, "portal_catalog", "--cursor", "!!"],
            portal.env(),
            "bad_request",
            ["cursor is not one this server issued"],
        ),
        "a base URL that is no URL": Failure(
            [SVC_MCP, "portal_catalog"],
            {"PORTAL_API_BASE": "portal.example"},
            "misconfigured",
            ["PORTAL_API_BASE"],
        ),
        "a limit out of range (svc-mcp)": Failure(
            [SVC_MCP, "portal_catalog", "--limit", "0"],
            portal.env(),
            "invalid_argument",
            ["limit must be from 1 to 1000, not 0"],
        ),
        "a limit out of range (svc-portal)": Failure(
            [SVC_PORTAL, "catalog", "list", "--limit", "1001"],
            portal.env(),
            "invalid_argument",
            ["limit must be from 1 to 1000, not 1001"],
        ),
        "an unknown tool": Failure([SVC_MCP, "portal_nothing"], portal.env(), "usage", []),
        "a tool outside --toolsets": Failure(
            [SVC_MCP, "--toolsets", "analytics", "portal_whoami"],
            portal.env("auditor"),
            "usage",
            ["portal_whoami is not among the tools"],
        ),
    }


FAILURES = [
    "unknown token",
    "reader on an auditor endpoint",
    "service auditor (not human)",
    "nothing listening",
    "not the portal's address",
    "a cursor the portal never issued",
    "a base URL that is no URL",
    "a limit out of range (svc-mcp)",
    "a limit out of range (svc-portal)",
    "an unknown tool",
    "a tool outside --toolsets",
]


@pytest.fixture(scope="module")
def failed(portal: PortalStub) -> dict[str, tuple[Failure, subprocess.CompletedProcess[str]]]:
    with closed_url() as closed:
        cases = failures(portal, closed)
        assert sorted(cases) == sorted(FAILURES)
        done = run_commands([(case.args, case.variables) for case in cases.values()])
    return dict(zip(cases, zip(cases.values(), done, strict=True), strict=True))


@pytest.mark.parametrize("name", FAILURES)
def test_a_failure_is_one_line_and_its_exit_code(
    failed: dict[str, tuple[Failure, subprocess.CompletedProcess[str]]], name: str
) -> None:
    case, done = failed[name]
    assert done.returncode == EXIT_CODES[case.kind], done.stderr
    assert done.stdout == ""
    prog = os.path.basename(case.args[0])
    if not (prog == "svc-portal" and case.kind == "usage"):  # typer draws its usage errors
        assert done.stderr.startswith(f"{prog}")
        assert f": {case.kind}: " in done.stderr.splitlines()[0]
        assert done.stderr.count("\n") == 1
    for part in case.says:
        assert part in done.stderr
    for token in (BOGUS_TOKEN, *case.variables.get("PORTAL_SESSION_TOKEN", "").split()):
        assert token not in done.stderr


@pytest.mark.parametrize(
    ("mode", "kind", "says"),
    [
        ("locked", "locked_out", "retry after 840 seconds"),
        ("limited", "rate_limited", "retry after 30 seconds"),
        ("unavailable", "unavailable", "retry after 7 seconds; retrying is safe"),
        ("bad-gateway", "unavailable", "HTTP 502"),
        ("gateway-timeout", "unavailable", "HTTP 504"),
    ],
)
def test_answers_the_stub_never_gives_have_their_exit_codes_too(
    mode: str, kind: str, says: str
) -> None:
    with fake_backend() as base:
        before = ARRIVALS[mode]
        done = run_in_process(
            svc_mcp_cli.main, ["portal_whoami"], {"PORTAL_API_BASE": f"{base}/{mode}"}
        )
        assert ARRIVALS[mode] == before + 1, "a 429 or 5xx is never retried"
    assert done.returncode == EXIT_CODES[kind]
    assert done.stderr.startswith(f"svc-mcp: {kind}: ")
    assert says in done.stderr
    assert done.stdout == ""


def imported_modules(done: subprocess.CompletedProcess[str]) -> set[str]:
    """Module names from PYTHONPROFILEIMPORTTIME's report on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_the_cli_path_never_imports_mcp(portal: PortalStub) -> None:
    variables = {**portal.env(), "PYTHONPROFILEIMPORTTIME": "1"}
    listing, call, portal_call = run_commands(
        [
            ([SVC_MCP, "tools"], variables),
            ([SVC_MCP, "portal_page"], variables),
            ([SVC_MCP, "portal", "page", "get"], variables),
        ]
    )
    for done in (listing, call, portal_call):
        assert done.returncode == 0, done.stderr[-2000:]
        modules = imported_modules(done)
        assert "argparse" in modules, "the import report was read"
        assert not {m for m in modules if m == "mcp" or m.startswith("mcp.")}
    # One call loads what one request and its payload check need, and nothing more.
    unused_by_a_call = {
        "httpx",
        "httpx._main",
        "anyio",
        "asyncio",
        "typer",
        "click",
        "rich",
        "pygments",
        "certifi",
        "pydantic_settings",
    }
    assert not unused_by_a_call & imported_modules(call)
    assert "pydantic" in imported_modules(call), "the payload is checked"
    assert not (unused_by_a_call | {"pydantic"}) & imported_modules(listing), "only the table"


def test_a_call_to_an_http_backend_loads_no_ca_certificates(
    portal: PortalStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    def refuse(*args: object, **kwargs: object) -> ssl.SSLContext:
        raise AssertionError("a CA bundle was loaded for an http:// backend")

    monkeypatch.setattr(ssl, "create_default_context", refuse)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", refuse)
    done = run_in_process(svc_mcp_cli.main, ["portal_page"], portal.env())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cards"]


def test_tools_lists_the_table_as_json_when_piped(portal: PortalStub) -> None:
    everything, analytics, read_only = run_commands(
        [
            ([SVC_MCP, "tools"], portal.env()),
            ([SVC_MCP, "tools", "--toolsets", "analytics"], portal.env()),
            ([SVC_MCP, "--read-only", "tools", "--toolsets", "portal"], portal.env()),
        ]
    )
    listed = json.loads(everything.stdout)
    assert [tool["name"] for tool in listed] == [spec.name for spec in TOOLS]
    for tool, spec in zip(listed, TOOLS, strict=True):
        assert tool["annotations"] == spec.hints.annotations()
        assert tool["inputSchema"] == spec.input_schema()
        assert tool["cli"] == list(spec.cli)
    analytics_names = [tool["name"] for tool in json.loads(analytics.stdout)]
    assert analytics_names == [spec.name for spec in SERVICE_TOOLS]
    portal_listed = [tool for tool in listed if tool["name"].startswith("portal_")]
    assert json.loads(read_only.stdout) == portal_listed, "every portal tool is read-only"


def test_tools_draws_a_table_on_a_terminal(portal: PortalStub) -> None:
    controller, terminal = pty.openpty()
    try:
        # Read while it writes: a terminal holds only a few kB, and a writer nobody reads waits.
        process = subprocess.Popen(
            [SVC_MCP, "tools"],
            stdout=terminal,
            stderr=subprocess.PIPE,
            env=process_env(portal.env()),
        )
        os.close(terminal)
        terminal = -1
        shown = b""
        while chunk := _read(controller):
            shown += chunk
        stderr = process.communicate(timeout=60)[1]
        assert process.returncode == 0, stderr
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    text = shown.decode()
    assert stderr == b""
    assert "svc-mcp tools" in text
    for spec in PORTAL_TOOLS[:5]:
        assert spec.name in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal side is closed and drained
        return b""


def test_svc_mcp_portal_is_svc_portal(portal: PortalStub) -> None:
    mounted, direct, help_text = run_commands(
        [
            ([SVC_MCP, "portal", "identity", "credential", "revokes"], portal.env("auditor")),
            ([SVC_PORTAL, "identity", "credential", "revokes"], portal.env("auditor")),
            ([SVC_MCP, "portal", "--help"], portal.env()),
        ]
    )
    assert mounted.returncode == direct.returncode == 0
    assert json.loads(mounted.stdout) == json.loads(direct.stdout)
    rest = httpx.get(
        portal.base_url + "/api/credential-revokes", headers=portal.headers("auditor")
    ).json()
    assert json.loads(mounted.stdout) == rest["data"]
    assert "svc-mcp portal" in help_text.stdout
    assert "identity" in help_text.stdout


@pytest.mark.e2e
def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """`svc-mcp tools | head`: the pipe has no reader left when the listing is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [SVC_MCP, "tools", "--json"], stdout=write_end, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    assert done.stderr == b""
