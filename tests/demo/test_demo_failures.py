"""When the demo cannot go on: one clear line on stderr, a non-zero exit, and still nothing left
behind. Run in this process (the stubs are still real processes) to break one part on purpose."""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path

import pytest

from svc_mcp.demo import run as demo
from svc_mcp.demo import stubs as demo_stubs
from svc_mcp.demo.stubs import clean_environment
from svc_mcp.demo.view import PlainView, brief, summarize
from tests.demo.conftest import MARKER, Sandbox

pytestmark = pytest.mark.e2e


@pytest.fixture
def isolated(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """The demo's temporary directory and children's marker, for a demo run in this process."""
    monkeypatch.setattr(tempfile, "tempdir", str(sandbox.tmpdir))
    monkeypatch.setenv(MARKER, sandbox.marker)
    return sandbox


def run_demo(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        demo.main([])
    captured = capsys.readouterr()
    assert isinstance(exit_.value.code, int)
    return exit_.value.code, captured.out, captured.err


def assert_nothing_left(sandbox: Sandbox) -> None:
    assert sandbox.leftovers() == []
    assert list(sandbox.tmpdir.iterdir()) == []


def test_svc_mcp_failing_to_serve_is_one_line(
    isolated: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = "import sys; print('cannot serve today', file=sys.stderr); sys.exit(3)"
    monkeypatch.setattr(demo, "MCP_COMMAND", (sys.executable, "-c", broken))
    code, out, err = run_demo(capsys)
    assert code == 10
    assert err.count("\n") == 1
    assert err.startswith("svc-mcp demo: server_error: the MCP session with svc-mcp failed (")
    assert err.endswith("; svc-mcp said: cannot serve today\n")
    assert "== Stubs" in out
    assert_nothing_left(isolated)


def test_a_stub_that_cannot_start_is_one_line(
    isolated: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(demo_stubs, "free_port", lambda: port)
        code, _, err = run_demo(capsys)
    assert code == 10
    assert err.count("\n") == 1
    assert err.startswith("svc-mcp demo: server_error: the portal stub exited with code ")
    assert "address already in use" in err
    assert_nothing_left(isolated)


def test_children_get_none_of_our_variables() -> None:
    environ = {
        "PATH": "/bin",
        "SERVICE_INTEL_HMAC": "k" * 40,
        "SERVICE_API_TOKEN": "t" * 30,
        "DASHBOARD_API_TOKEN": "d" * 30,
        "PORTAL_SESSION_TOKEN": "p",
        "SVC_MCP_GATEWAY_TOKEN": "g" * 40,
        "MY_SERVICE_API": "kept",
    }
    assert clean_environment(environ) == {"PATH": "/bin", "MY_SERVICE_API": "kept"}


def test_summaries_are_short_and_lead_with_the_telling_fields() -> None:
    assert summarize({"result": []}) == "0 records"
    first = {"at": "2026-01-01T00:00:00Z", "id": "x", "body": {"a": 1}, "tags": [1, 2]}
    assert summarize({"result": [first], "next_cursor": "c"}) == (
        "1 record, more on the next page; first: id=x at=2026-01-01T00:00:00Z body={...} "
        "tags=[2 items]"
    )
    assert brief({"message": "m" * 40}) == "message=" + "m" * 25 + "..."
    assert summarize(None) == "(no structured result)"


def test_the_plain_view_aligns_columns() -> None:
    lines: list[str] = []
    PlainView(lines.append).table("T", ["a", "bb"], [["long cell", "x"], ["s", "y"]])
    assert lines == ["== T", "  a          bb", "  long cell  x", "  s          y"]


def test_the_readme_demo_command_runs_this_entry_point() -> None:
    """The quick start's `uv run svc-mcp demo` is the console script these tests run."""
    scripts = Path(sys.executable).parent
    assert (scripts / "svc-mcp").exists()
    assert demo.MCP_COMMAND[0] == sys.executable
