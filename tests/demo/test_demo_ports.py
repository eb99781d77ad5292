"""Another local user who takes a demo stub's port first gets no token: the demo checks, with the
kernel's word, that the listener it reached is its own uid's (docs/security.md). The other user is
played with setpriv (uid 4242) and listens with the system's Python, answering every request."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_mcp.demo import run as demo
from svc_mcp.demo import stubs as demo_stubs
from svc_mcp.demo.stubs import DemoFailed, Stub
from tests.demo.conftest import MARKER, Sandbox
from tests.demo.test_demo_failures import assert_nothing_left
from tests.support_other_user import OTHER_UID, as_other_user, python

pytestmark = pytest.mark.e2e

SQUATTER = """
import http.server, json, sys
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(json.dumps(sorted(self.headers.keys())), flush=True)
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"{}")
    do_POST = do_GET
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture
def squatter() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A listener of another local user on a loopback port; yields the port and the process,
    whose stdout says the header names of every request it got."""
    process = subprocess.Popen(
        as_other_user(str(python()), "-I", "-c", SQUATTER),
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
    )
    assert process.stdout is not None
    try:
        yield int(process.stdout.readline()), process
    finally:
        process.terminate()
        process.wait(timeout=10)


def _headers_seen(process: subprocess.Popen[str]) -> list[list[str]]:
    process.terminate()
    out, _ = process.communicate(timeout=10)
    return [json.loads(line) for line in out.splitlines() if line.startswith("[")]


def test_a_stub_port_held_by_another_user_is_refused_before_any_token(
    squatter: tuple[int, subprocess.Popen[str]], tmp_path: Path
) -> None:
    port, other = squatter
    # Our stub, still starting (here a process that never binds), while another user's listener
    # answers on its port.
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stub = Stub("portal", f"http://127.0.0.1:{port}", "/api/page", ours, tmp_path / "log")
        with pytest.raises(DemoFailed, match=rf"port {port} of the portal stub is held by another "
                           rf"program of uid {OTHER_UID}: the demo sends it no token"):  # fmt: skip
            demo_stubs._wait_ready(stub, timeout=10)
    finally:
        ours.kill()
        ours.wait()
    assert _headers_seen(other) == [
        ["Accept", "Accept-Encoding", "Connection", "Host", "User-Agent"]
    ]


def test_the_demo_sends_no_token_to_a_port_another_user_took(
    squatter: tuple[int, subprocess.Popen[str]],
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port, other = squatter
    monkeypatch.setattr(tempfile, "tempdir", str(sandbox.tmpdir))
    monkeypatch.setenv(MARKER, sandbox.marker)
    ports, free_port = iter([port]), demo_stubs.free_port
    monkeypatch.setattr(demo_stubs, "free_port", lambda: next(ports, 0) or free_port())

    with pytest.raises(SystemExit) as exit_:
        demo.main([])
    assert exit_.value.code == 10
    err = capsys.readouterr().err
    # Refused either way: the demo saw the other user's listener, or its own stub exit first.
    assert f"port {port} of the portal stub is held by another" in err or "exited" in err, err
    for names in _headers_seen(other):
        assert not {"Authorization", "X-Api-Token", "Cookie"} & set(names), names
    assert_nothing_left(sandbox)
