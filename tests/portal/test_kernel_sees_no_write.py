"""The portal's "no operating-system write permission", checked from outside: the whole role
matrix (every endpoint, caller and method) against a real portal process under `strace -f`, which
must show a successful `landlock_restrict_self` and, after it, not one successful open for
writing, creation or truncation, nor a rename, removal, link or new folder. Its log lines go to
the descriptors it was given at start."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.portal.conftest import AUDITOR_ONLY, CALLERS, ENDPOINTS, PortalData
from tests.portal.test_matrix import WRITE_METHODS, expected_get_status
from tests.support import answers, reserved_port, wait_ready

pytestmark = pytest.mark.e2e

TRACED = (
    "open,openat,openat2,creat,truncate,ftruncate,rename,renameat,renameat2,unlink,unlinkat,"
    "rmdir,mkdir,mkdirat,link,linkat,symlink,symlinkat,landlock_restrict_self"
)
WRITE_OPEN = re.compile(
    r"^(open|openat|openat2|creat)\(.*(O_WRONLY|O_RDWR|O_CREAT|O_TRUNC).*\)\s*= \d+"
)
CHANGE = re.compile(
    r"^(truncate|ftruncate|rename|renameat2?|unlink|unlinkat|rmdir|mkdir|mkdirat|link|linkat"
    r"|symlink|symlinkat)\(.*\)\s*= 0"
)
RESTRICTED = re.compile(r"^landlock_restrict_self\(.*\)\s*= 0")


@contextlib.contextmanager
def traced_portal(data: Path, trace: Path, log: Path) -> Iterator[str]:
    """`svc-stub portal` under `strace -ff` (one file per thread, so no line is split)."""
    with reserved_port() as port:
        command = ["strace", "-f", "-ff", "-qq", "-e", f"trace={TRACED}", "-o", str(trace)]
        command += [sys.executable, "-m", "server_stub", "portal", "--data", str(data)]
        command += ["--port", str(port)]
        env = {
            **os.environ,
            "SVC_STUB_CONFINEMENT": os.environ.get("SVC_STUB_CONFINEMENT", "require"),
        }
        with log.open("wb") as log_file:
            process = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(process, log, lambda left: answers(base_url + "/api/page", left))
            yield base_url
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)


def run_matrix(base_url: str, portal_data: PortalData) -> None:
    with httpx.Client(base_url=base_url) as client:
        for path in ENDPOINTS:
            for caller in CALLERS:
                headers = portal_data.headers(caller)
                answer = client.get(path, headers=headers)
                assert answer.status_code == expected_get_status(path, caller), (path, caller)
                assert answer.json()["ok"] is (answer.status_code == 200)
                head = client.head(path, headers=headers)
                assert (head.status_code, head.content) == (answer.status_code, b"")
                for method in WRITE_METHODS:
                    refused = client.request(method, path, headers=headers, content=b'{"x": 1}')
                    assert refused.status_code == 405, (method, path, caller)
                    assert refused.headers["allow"] == "GET, HEAD"
    assert set(ENDPOINTS) >= AUDITOR_ONLY


def changes_after_restriction(trace_files: list[Path]) -> tuple[int, list[str]]:
    """How many threads confined themselves, and every successful change after that."""
    restricted, changes = 0, []
    for path in trace_files:
        lines = path.read_text().splitlines()
        start = next((i for i, line in enumerate(lines) if RESTRICTED.match(line)), None)
        if start is not None:
            restricted += 1
            lines = lines[start + 1 :]
        changes += [line for line in lines if WRITE_OPEN.match(line) or CHANGE.match(line)]
    return restricted, changes


def test_the_role_matrix_passes_and_the_kernel_sees_no_write(
    portal_data: PortalData, tmp_path: Path
) -> None:
    assert shutil.which("strace"), "strace is missing: install it (`apt-get install strace`)"
    trace = tmp_path / "trace" / "portal"
    trace.parent.mkdir()
    log = tmp_path / "portal.log"
    with traced_portal(portal_data.path, trace, log) as base_url:
        run_matrix(base_url, portal_data)
    trace_files = sorted(trace.parent.iterdir())
    restricted, changes = changes_after_restriction(trace_files)
    assert restricted == 1, f"no successful landlock_restrict_self in {len(trace_files)} traces"
    assert changes == []
    assert "svc-stub portal: confined (Landlock ABI" in log.read_text()


def test_the_trace_patterns_catch_what_they_look_for() -> None:
    assert WRITE_OPEN.match('openat(AT_FDCWD, "/d/x", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3')
    assert not WRITE_OPEN.match(
        'openat(AT_FDCWD, "/d/x", O_WRONLY) = -1 EACCES (Permission denied)'
    )
    assert CHANGE.match('renameat2(AT_FDCWD, "/d/a", AT_FDCWD, "/d/b", 0)   = 0')
    assert not CHANGE.match('unlink("/d/a")  = -1 EACCES (Permission denied)')
    assert RESTRICTED.match("landlock_restrict_self(3, 0)            = 0")
