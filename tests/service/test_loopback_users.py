"""Loopback is not the operator (issue 31.3, 31.4): against a real `svc-stub service` on loopback,
another local user (uid 4242, played with setpriv) sends wrong tokens from 127.0.0.1. The lockout
keys a loopback peer by the local user that owns its socket, so this process (the gateway's uid)
keeps its access, and the whole loopback range is one address per user."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.service.conftest import TOKEN, WRONG
from tests.service.test_e2e import client_from, security_events, stop
from tests.service.test_e2e_guard import service
from tests.support import Server
from tests.support_other_user import python

pytestmark = pytest.mark.e2e

OTHER_UID = 4242
ME = f"loopback:uid={os.getuid()}"
OTHER = f"loopback:uid={OTHER_UID}"
SEND = """
import http.client, json, os, sys
port = int(sys.argv[1])
statuses = []
for source in sys.argv[2:]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    connection.request("GET", "/api/v1/system", headers={"X-API-Token": os.environ["TRY_TOKEN"]})
    statuses.append(connection.getresponse().status)
    connection.close()
print(json.dumps(statuses))
"""


def as_other_user(
    home: Path, *command: str, uid: int = OTHER_UID, **env: str
) -> subprocess.CompletedProcess[str]:
    home.mkdir(exist_ok=True)
    os.chown(home, uid, uid)
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), **env},
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def other_user_sends(
    server: Server, home: Path, token: str, sources: list[str], uid: int = OTHER_UID
) -> list[int]:
    port = server.base_url.rsplit(":", 1)[1]
    done = as_other_user(
        home, str(python()), "-I", "-c", SEND, port, *sources, uid=uid, TRY_TOKEN=token
    )
    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout)
    assert isinstance(statuses, list)
    return statuses


def my_status(server: Server, source: str = "127.0.0.1") -> int:
    with client_from(server, source) as client:
        return client.get("/api/v1/system", headers={"X-API-Token": TOKEN}).status_code


def test_another_local_user_locks_only_itself(demo_db: Path, tmp_path: Path) -> None:
    home = tmp_path / "other"
    with service(demo_db, tmp_path / "users.log") as server:
        assert other_user_sends(server, home, WRONG, ["127.0.0.1"] * 8) == [401] * 7 + [429]
        # The gateway's user, at the very same address, was never counted.
        assert my_status(server) == 200
        assert my_status(server, "127.0.0.77") == 200
        assert other_user_sends(server, home, TOKEN, ["127.0.0.1", "127.0.0.9"]) == [429, 429]
        log = stop(server)
    events = security_events(log)
    assert [e["client"] for e in events if e["event"] == "lockout"] == [OTHER]
    assert {e["client"] for e in events if e["event"] == "auth_failure"} == {OTHER}
    assert TOKEN not in log
    assert WRONG not in log


def test_the_whole_loopback_range_is_one_address_per_user(demo_db: Path, tmp_path: Path) -> None:
    # 127.0.0.2 ... 127.0.1.101 and 127.1.0.2 ...: 300 addresses, one wrong token each.
    sources = [f"127.{n // 200}.{(n // 100) % 2}.{n % 100 + 2}" for n in range(300)]
    assert len(set(sources)) == 300
    with service(demo_db, tmp_path / "range.log") as server:
        statuses = other_user_sends(server, tmp_path / "other", WRONG, sources)
        assert my_status(server, "127.1.0.2") == 200
        log = stop(server)
    assert statuses == [401] * 7 + [429] * 293
    events = security_events(log)
    assert [e["client"] for e in events if e["event"] == "lockout"] == [OTHER]


def test_the_lockout_hint_names_the_lockout_not_the_token(demo_db: Path, tmp_path: Path) -> None:
    """The CLI of a locked-out user, with the right token: told about the lockout, not the token."""
    home = tmp_path / "other"
    with service(demo_db, tmp_path / "hint.log") as server:
        assert other_user_sends(server, home, WRONG, ["127.0.0.1"] * 8)[-1] == 429
        done = as_other_user(
            home,
            str(python()),
            "-m",
            "svc_mcp",
            "get_system",
            SERVICE_API_BASE=server.base_url,
            SERVICE_API_TOKEN=TOKEN,
        )
    told = done.stdout + done.stderr
    assert done.returncode != 0
    assert "locked out" in told
    assert "not checked" in told
    assert "check SERVICE_API_TOKEN" not in told
    assert TOKEN not in told


SEND_AND_CLOSE = """
import os, socket, struct, sys
port = int(sys.argv[1])
head = (f"GET /api/v1/system HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nX-API-Token: {os.environ['TRY_TOKEN']}"
        f"\\r\\nX-Pad: {'a' * 6000}\\r\\n\\r\\n").encode()
for n in range(int(sys.argv[2])):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    if n % 2:  # reset at once, where the others linger as FIN-WAIT-2 entries the kernel says uid 0 owns
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.sendall(head)
    sock.close()
"""


def test_requests_whose_client_is_gone_never_count_as_root(demo_db: Path, tmp_path: Path) -> None:
    """Issue 44.13 and 44.9: a closed or reset client's lingering socket entry reads uid 0 and
    inode 0; only a full socket's answer names a user, asked when the connection is accepted."""
    home = tmp_path / "other"
    with service(demo_db, tmp_path / "gone.log") as server:
        port = server.base_url.rsplit(":", 1)[1]
        for _ in range(3):
            done = as_other_user(
                home, str(python()), "-I", "-c", SEND_AND_CLOSE, port, "10", TRY_TOKEN=WRONG
            )
            assert done.returncode == 0, done.stderr
        assert my_status(server) == 200
        log = stop(server)
    events = security_events(log)
    charged = {e["client"] for e in events if e["event"] in ("auth_failure", "lockout")}
    assert ME not in charged, charged
    assert charged <= {OTHER, "loopback"}


def test_subordinate_uids_count_as_their_owner(demo_db: Path, tmp_path: Path) -> None:
    """Issue 44.16: uid 4242's rootless containers run as its subordinate uids (SVC_SUBUID_FILE,
    here a file of the test's own); their wrong tokens lock uid 4242, all of them, not 65,536
    local users one by one."""
    subuid = tmp_path / "subuid"
    subuid.write_text(f"{OTHER_UID}:300000:65536\n")
    with service(demo_db, tmp_path / "subuid.log", SVC_SUBUID_FILE=str(subuid)) as server:
        statuses = [
            *other_user_sends(server, tmp_path / "a", WRONG, ["127.0.0.1"] * 4, uid=300001),
            *other_user_sends(server, tmp_path / "b", WRONG, ["127.0.0.1"] * 4, uid=365535),
        ]
        assert other_user_sends(server, tmp_path / "c", TOKEN, ["127.0.0.1"]) == [429]
        assert my_status(server) == 200
        log = stop(server)
    assert statuses == [401] * 7 + [429]
    events = security_events(log)
    assert [e["client"] for e in events if e["event"] == "lockout"] == [OTHER]
