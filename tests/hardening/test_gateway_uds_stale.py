"""Another user's stale socket at a shared `--uds` path (security round five, finding 16): the
gateway, started by a user who may neither connect to that socket nor remove it from the sticky
folder, refuses in one line (exit 2, misconfigured), where it once stopped with a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.mcp.conftest import process_env
from tests.support import ROOT
from tests.support_other_user import python

pytestmark = pytest.mark.e2e  # as root with setpriv, to act as two other local users

OWNER_UID, STARTER_UID = 4242, 4243
LEAVE_A_SOCKET = """
import os, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
sock.close()  # the file stays: a stale socket only its owner may open or remove
"""


def as_user(uid: int, home: Path, *command: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(exist_ok=True)
    os.chown(home, uid, uid)
    env = process_env({"HOME": str(home), "XDG_STATE_HOME": str(home / "state")})
    env["PYTHONPATH"] = f"{ROOT / 'src'}:{ROOT}"
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command],
        env={**os.environ, **env},
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_another_users_stale_socket_is_refused_in_one_line() -> None:
    # Outside the test's own 0700 folders, which the other users could not enter.
    shared = Path(tempfile.mkdtemp(prefix="svc-mcp-shared-"))
    shared.chmod(0o1777)  # as /tmp: anyone may create, only a file's owner may remove it
    socket_path = shared / "gateway.sock"
    try:
        left = as_user(
            OWNER_UID,
            shared / "owner",
            str(python()),
            "-I",
            "-c",
            LEAVE_A_SOCKET,
            str(socket_path),
        )
        assert left.returncode == 0, left.stderr
        done = as_user(
            STARTER_UID,
            shared / "starter",
            str(python()),
            "-m",
            "svc_mcp",
            "--http",
            "--uds",
            str(socket_path),
        )
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    told = done.stderr.strip()
    assert done.returncode == 2, told
    assert "Traceback" not in told
    assert len(told.splitlines()) == 1, told
    assert "another user's; choose another --uds path" in told
    assert str(socket_path) in told
