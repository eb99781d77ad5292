"""Confines itself with one of the real policies, then tries what that process must not do.

`python -m tests.confinement.probe POLICY TARGET CANARY PORT [ARG]` prints one JSON object:
each attempt -> "ok" or the errno name it failed with. POLICY is `portal` (ARG: data folder),
`service` (ARG: database file, confined by the service's own `confine_service`), `stdio` or
`gateway`. TARGET is a folder holding the files `existing` (to write, truncate, rename and link) and
`doomed` (to remove); PORT a listening loopback port to connect to. When set, SVC_TEST_UNIX_SOCKET
names a Unix socket to connect to and SVC_TEST_UDP_PORT a loopback UDP port to send a datagram to;
SVC_TEST_NO_LANDLOCK=1 makes the kernel's Landlock look absent (what this process reports then:
its NoNewPrivs and Seccomp lines of /proc/self/status). SVC_TEST_SIDE_DOOR_PORT names a loopback
port to reach by the ways around the TCP connect rule (MPTCP, TCP fast open), which also tries to
listen over MPTCP; SVC_TEST_ALLOWED_PORT one the policy allows, reached by a plain connect.
SVC_TEST_TERMINAL=1: standard input is a terminal, made the controlling terminal before confining
(as for a server started in a shell), into which the probe then tries to type. SVC_TEST_KERNEL=1:
calls no server needs, each made so that it changes nothing where it is allowed.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import platform
import socket
import sqlite3
import sys
import termios
import threading
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

IPPROTO_MPTCP = 262
TIOCLINUX = 0x541C
TYPED = b"echo ESCAPED\n"
CLONE_FS, CLONE_NEWUSER = 0x200, 0x10000000
# (x86_64, aarch64); the probe's own table, not the filter's.
CALLS = {
    "unshare": (272, 97),
    "setns": (308, 268),
    "clone": (56, 220),
    "clone3": (435, 435),
    "userfaultfd": (323, 282),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
}


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


def side_doors(port: int) -> dict[str, str]:
    """Connecting and listening past Landlock's TCP rules: an MPTCP socket (which Landlock does not
    restrict and which falls back to TCP), and TCP fast open, which connects inside the send."""
    address = ("127.0.0.1", port)

    def mptcp_connect() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP) as client:
            client.settimeout(5)
            client.connect(address)
            client.sendall(b"from the confined process")

    def mptcp_listen() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP) as server:
            server.bind(("127.0.0.1", 0))
            server.listen()

    def fast_open_sendto() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.sendto(b"from the confined process", socket.MSG_FASTOPEN, address)

    def fast_open_sendmsg() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.sendmsg([b"from the confined process"], [], socket.MSG_FASTOPEN, address)

    return {
        "MPTCP connect": outcome(mptcp_connect),
        "MPTCP listen": outcome(mptcp_listen),
        "fast open sendto": outcome(fast_open_sendto),
        "fast open sendmsg": outcome(fast_open_sendmsg),
    }


def type_into_terminal() -> dict[str, str]:
    """What a confined process could queue into the shell it was started from (TIOCSTI), and the
    virtual console's request that can do the same (TIOCLINUX)."""

    def type_command() -> None:
        for byte in TYPED:
            fcntl.ioctl(0, termios.TIOCSTI, bytes([byte]))

    return {
        "TIOCSTI": outcome(type_command),
        "TIOCLINUX": outcome(lambda: fcntl.ioctl(0, TIOCLINUX, b"\x00" * 8)),
        "terminal size": outcome(lambda: fcntl.ioctl(0, termios.TIOCGWINSZ, b"\x00" * 8)),
    }


def kernel_calls() -> dict[str, str]:
    """Each call with arguments that change nothing where it is allowed (a no-op, an invalid
    argument or a missing address), so that its answer says whether the filter let it through."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    column = 0 if platform.machine() == "x86_64" else 1
    arguments: dict[str, tuple[int, ...]] = {
        "unshare": (0,),
        "setns": (-1, 0),
        "clone": (CLONE_NEWUSER | CLONE_FS, 0, 0, 0, 0),  # EINVAL: no child is made
        "clone3": (0, 0),
        "userfaultfd": (os.O_CLOEXEC,),
        "bpf": (-1, 0, 0),
        "perf_event_open": (0, 0, -1, -1, 0),
        "keyctl": (0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the session key ring
        "add_key": (0, 0, 0, 0, 0),
        "request_key": (0, 0, 0, 0),
        "ptrace": (3, os.getppid(), 0, 0),  # PTRACE_PEEKUSER of a process not traced: ESRCH
        "process_vm_readv": (os.getpid(), 0, 0, 0, 0, 0),
    }

    def call(name: str) -> str:
        words = [ctypes.c_long(value) for value in arguments[name]]
        result = libc.syscall(ctypes.c_long(CALLS[name][column]), *words)
        if result < 0:
            return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
        if name == "userfaultfd":
            os.close(result)
        return "ok"

    results = {name: call(name) for name in CALLS}
    thread = threading.Thread(target=lambda: None)
    results["start a thread"] = outcome(thread.start)
    thread.join()
    return results


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
    if os.environ.get("SVC_TEST_TERMINAL") == "1":
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the process leads a session of its own
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
    if side_door_port := os.environ.get("SVC_TEST_SIDE_DOOR_PORT"):
        results |= side_doors(int(side_door_port))
    if allowed_port := os.environ.get("SVC_TEST_ALLOWED_PORT"):
        results["connect to an allowed port"] = connect(int(allowed_port))
    if os.environ.get("SVC_TEST_TERMINAL") == "1":
        results |= type_into_terminal()
    if os.environ.get("SVC_TEST_KERNEL") == "1":
        results |= kernel_calls()
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
