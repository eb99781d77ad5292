"""Confines itself with one of the real policies, then tries what that process must not do.

`python -m tests.confinement.probe POLICY TARGET CANARY PORT [ARG]` prints one JSON object:
each attempt -> "ok" or the errno name it failed with. POLICY is `portal` (ARG: data folder),
`service` (ARG: database file, confined by the service's own `confine_service`), `stdio` or
`gateway`. TARGET is a folder holding the files `existing` (to write, truncate, rename and link) and
`doomed` (to remove); PORT a listening loopback port to connect to. When set, SVC_TEST_UNIX_SOCKET
names a Unix socket to connect to and SVC_TEST_UDP_PORT a loopback UDP port to send a datagram to;
SVC_TEST_NO_LANDLOCK=1 makes the kernel's Landlock look absent (what this process reports then:
its NoNewPrivs and Seccomp lines of /proc/self/status).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from server_stub.confinement import SETTING as STUB_SETTING
from server_stub.confinement import confine_service, portal_policy
from server_stub.service.db import DatabaseUnavailable, ServiceDatabase
from server_stub.service.in_place import write_in_place
from server_stub.service.private_dir import passkey_file, private_dir, within_own_files
from svc_mcp.serve.confinement import SETTING as MCP_SETTING
from svc_mcp.serve.confinement import gateway_policy, stdio_policy
from svc_serving import confine as confinement
from svc_serving.confine import ConfinementError, confine


def outcome(attempt: Callable[[], object]) -> str:
    try:
        attempt()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "ok"


def write_forms(folder: Path) -> dict[str, str]:
    existing = folder / "existing"

    def open_for_writing() -> None:
        os.close(os.open(existing, os.O_WRONLY | os.O_APPEND))

    def create() -> None:
        os.close(os.open(folder / "created", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    return {
        "open for writing": outcome(open_for_writing),
        "create": outcome(create),
        "truncate": outcome(lambda: os.truncate(existing, 0)),
        "mkdir": outcome(lambda: os.mkdir(folder / "made")),
        "symlink": outcome(lambda: os.symlink(existing, folder / "symlinked")),
        "hard link": outcome(lambda: os.link(existing, folder / "linked")),
        "rename": outcome(lambda: os.rename(existing, folder / "renamed")),
        "unlink": outcome(lambda: os.unlink(folder / "doomed")),
    }


def connect(port: int) -> str:
    def attempt() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass

    return outcome(attempt)


def connect_unix(path: str) -> str:
    def attempt() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(path)
            client.sendall(b"from the confined process")

    return outcome(attempt)


def send_udp(port: int) -> str:
    def attempt() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"from the confined process", ("127.0.0.1", port))

    return outcome(attempt)


def database_writes(db: Path) -> dict[str, str]:
    """What the service itself writes: a transaction in its database (its journal kept in place),
    and the passkey file replaced atomically in its private folder."""

    def transaction() -> None:
        connection = sqlite3.connect(f"file:{db}?mode=rw", uri=True, isolation_level=None)
        try:
            within_own_files(connection)
            connection.execute("CREATE TABLE IF NOT EXISTS probe (x)")
            connection.execute("INSERT INTO probe VALUES (1)")
        finally:
            connection.close()

    def passkeys() -> None:
        write_in_place(passkey_file(db), private_dir(db) / "webauthn.journal", b'{"probe": 1}')

    def sort_beyond_the_cache() -> None:
        with ServiceDatabase(db).reading() as connection:
            connection.execute("PRAGMA cache_size = 10")
            connection.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
                "SELECT hex(randomblob(64)) FROM n ORDER BY 1"
            ).fetchall()

    return {
        "database transaction": outcome_of_sqlite(transaction),
        "passkey file replaced": outcome(passkeys),
        "sort beyond the cache": outcome_of_sqlite(sort_beyond_the_cache),
    }


def outcome_of_sqlite(attempt: Callable[[], object]) -> str:
    try:
        attempt()
    except (sqlite3.Error, DatabaseUnavailable) as exc:
        return f"sqlite: {exc}"
    return "ok"


def no_landlock() -> int:
    raise ConfinementError("the kernel has no Landlock (simulated by the probe)")


def status_lines() -> dict[str, str]:
    lines = Path("/proc/self/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def main(argv: list[str]) -> None:
    name, target, canary, port, *rest = argv
    if os.environ.get("SVC_TEST_NO_LANDLOCK") == "1":
        confinement.landlock_abi = no_landlock
    policies: dict[str, Callable[[], object]] = {
        "portal": lambda: confine(portal_policy(Path(rest[0]), 0), STUB_SETTING),
        "service": lambda: confine_service(Path(rest[0]), 0),
        "stdio": lambda: confine(stdio_policy(), MCP_SETTING),
        "gateway": lambda: confine(gateway_policy(), MCP_SETTING),
    }
    policies[name]()
    results = {
        **write_forms(Path(target)),
        "read canary": outcome(lambda: Path(canary).read_bytes()),
        "connect elsewhere": connect(int(port)),
    }
    if unix_socket := os.environ.get("SVC_TEST_UNIX_SOCKET"):
        results["connect to a Unix socket"] = connect_unix(unix_socket)
    if udp_port := os.environ.get("SVC_TEST_UDP_PORT"):
        results["send a UDP datagram"] = send_udp(int(udp_port))
    if os.environ.get("SVC_TEST_NO_LANDLOCK") == "1":
        status = status_lines()
        results |= {"NoNewPrivs": status["NoNewPrivs"], "Seccomp": status["Seccomp"]}
    if name == "service":
        db = Path(rest[0])
        results |= database_writes(db)
        results |= {f"beside the database: {k}": v for k, v in write_forms(db.parent).items()}
        results |= {f"private folder: {k}": v for k, v in write_forms(private_dir(db)).items()}
        home = Path(canary).parent
        results["read ~/.ssh/id_rsa"] = outcome(lambda: (home / ".ssh" / "id_rsa").read_bytes())
        results["create ~/.ssh/authorized_keys"] = outcome(
            lambda: (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA")
        )
        results["append to ~/.bashrc"] = outcome(
            lambda: os.close(os.open(home / ".bashrc", os.O_WRONLY | os.O_APPEND))
        )
    if name in ("stdio", "gateway"):
        results["connect to a backend"] = connect(int(rest[0]))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
