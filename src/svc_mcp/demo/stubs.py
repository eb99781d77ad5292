"""The stub processes behind `svc-mcp demo`: fresh demo data in a temporary directory, the portal
and data service stubs as real processes on free loopback ports, and their clean shutdown.

Three processes run `python -m server_stub ...`: the portal (demo data, an auditor session), the
data service (auth on with a generated token, the intel intake on with a generated key) and a
second data service on a copy of the database that the wrong-token step locks, so the lockout never
touches the service the rest of the demo (and `--keep-running`) uses. The intel key goes into the
environment of the data service only; every child starts from this process's environment without
the variables svc-mcp and the stubs read, so nothing of the user's own configuration leaks in.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database
from svc_mcp.core.backends import PORTAL, SERVICE, Backend, backend_variables
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE
from svc_serving.peer_owner import listener_owner

HOST = "127.0.0.1"
TEMP_PREFIX = "svc-mcp-demo-"
AUDITOR = "alice"
"""A human auditor in the portal's demo data: every portal tool answers her."""
SESSION_TTL = timedelta(hours=8)
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0

_OUR_PREFIXES = ("PORTAL_", "SERVICE_")
_OUR_NAMES = frozenset({GATEWAY_TOKEN_VARIABLE, *backend_variables()})


class DemoFailed(Exception):
    """The demo cannot go on; the message is the one line the user sees."""

    def __init__(self, message: str, kind: FailureKind = FailureKind.SERVER_ERROR) -> None:
        super().__init__(message)
        self.kind = kind


def clean_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without any variable that svc-mcp or the stubs read (PORTAL_*, SERVICE_*, the
    backends' variables, SVC_MCP_GATEWAY_TOKEN): a child gets only what the demo gives it."""
    return {
        name: value
        for name, value in environ.items()
        if not name.startswith(_OUR_PREFIXES) and name not in _OUR_NAMES
    }


def last_line(path: Path) -> str:
    """What a process's log says went wrong: its last line that mentions an error, else its last
    line ("" when there is none). uvicorn, for one, logs its shutdown after the error."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or [""])[-1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Stub:
    name: str
    base_url: str
    ready_path: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def last_log_line(self) -> str:
        return last_line(self.log_path)


@dataclass(frozen=True)
class DemoStubs:
    root: Path
    portal: Stub
    service: Stub
    lockout: Stub
    service_token: str
    intel_key: str
    """Given to the data service process and the signer only; never to svc-mcp."""
    portal_session: str

    @property
    def all(self) -> tuple[Stub, ...]:
        return (self.portal, self.service, self.lockout)

    def mcp_variables(self) -> dict[str, str]:
        """What svc-mcp needs to call both stubs as the auditor, with the right token."""
        return {
            **_client_variables(SERVICE, self.service.base_url, self.service_token),
            **_client_variables(PORTAL, self.portal.base_url, self.portal_session),
        }

    def lockout_variables(self, wrong_token: str) -> dict[str, str]:
        """svc-mcp against the lockout instance with a token the service does not know."""
        return _client_variables(SERVICE, self.lockout.base_url, wrong_token)


def _client_variables(backend: Backend, base_url: str, token: str) -> dict[str, str]:
    return {backend.base_url_variable: base_url, backend.token_variables[0]: token}


@contextlib.contextmanager
def running_stubs() -> Iterator[DemoStubs]:
    """Writes the demo data, starts the three stubs and waits until they answer; on exit (also
    on Ctrl-C or an error) stops them and removes the temporary directory."""
    try:
        root = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    except OSError as exc:
        raise DemoFailed(f"cannot create a temporary directory: {exc}") from None
    started: list[Stub] = []
    try:
        try:
            stubs = _start(root, started)
        except OSError as exc:
            raise DemoFailed(f"cannot start the stubs in {root}: {exc}") from None
        yield stubs
    finally:
        with _signals_ignored():
            stop(started)
            shutil.rmtree(root, ignore_errors=True)


def _start(root: Path, started: list[Stub]) -> DemoStubs:
    portal_data, db, lockout_db = root / "portal", root / "service.db", root / "lockout.db"
    write_demo_data(portal_data)
    write_demo_database(db)
    # A database of its own: when one confined service's last connection closes, SQLite deletes
    # the -wal and -shm files, and the other (whose file rules name those files) could not read.
    shutil.copyfile(db, lockout_db)
    session = issue_session(portal_data, AUDITOR, SESSION_TTL)
    token, intel_key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    # The data service stub reads its token from the same variable as the client.
    token_env = {SERVICE.token_variables[0]: token}
    service_env = {**token_env, "SERVICE_INTEL_HMAC": intel_key}
    service_args = ["service", "--db", str(db)]
    plans: list[tuple[str, list[str], dict[str, str], str]] = [
        ("portal", ["portal", "--data", str(portal_data)], {}, PORTAL.health_path),
        ("service", service_args, service_env, SERVICE.health_path),
        ("lockout", ["service", "--db", str(lockout_db)], token_env, SERVICE.health_path),
    ]
    for name, args, env, ready_path in plans:
        started.append(_launch(root, name, args, env, ready_path))
    for stub in started:
        _wait_ready(stub)
    portal, service, lockout = started
    return DemoStubs(root, portal, service, lockout, token, intel_key, session)


def _launch(
    root: Path, name: str, args: Sequence[str], env: Mapping[str, str], ready_path: str
) -> Stub:
    port = free_port()
    log_path = root / f"{name}.log"
    command = [sys.executable, "-m", "server_stub", *args, "--host", HOST, "--port", str(port)]
    with log_path.open("wb") as log:
        # A session of its own: a Ctrl-C in the terminal reaches the demo only, which then stops
        # the stubs in order instead of racing them.
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and fixed arguments)
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**clean_environment(os.environ), **env},
            start_new_session=True,
        )
    return Stub(name, f"http://{HOST}:{port}", ready_path, process, log_path)


def _wait_ready(stub: Stub, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1.0, trust_env=False) as client:
        while True:
            code = stub.process.poll()
            if code is not None:
                raise DemoFailed(
                    f"the {stub.name} stub exited with code {code} at start-up: "
                    f"{stub.last_log_line() or 'no output'}"
                )
            try:
                client.get(stub.base_url + stub.ready_path)
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise DemoFailed(
                        f"the {stub.name} stub did not answer on {stub.base_url} within "
                        f"{timeout:.0f} s",
                        kind=FailureKind.UNREACHABLE,
                    ) from None
                time.sleep(0.05)
            else:
                _check_listener_is_ours(stub)
                return


def _check_listener_is_ours(stub: Stub) -> None:
    """Another local user may take a stub's port before the stub binds it (the port is chosen
    first, and /proc shows the demo's command lines): the demo sends its tokens only to a
    listener of its own uid, as the kernel reports the owner of the socket listening there."""
    port = int(stub.base_url.rsplit(":", 1)[1])
    owner = listener_owner((HOST, port))
    if owner != os.getuid():
        whose = "whose owner the kernel would not say" if owner is None else f"of uid {owner}"
        raise DemoFailed(
            f"port {port} of the {stub.name} stub is held by another program {whose}: "
            "the demo sends it no token; run the demo again"
        )


def stop(stubs: Sequence[Stub]) -> None:
    """Asks each running stub to stop, waits for all, and kills any that does not."""
    for stub in stubs:
        if stub.process.poll() is None:
            stub.process.terminate()
    for stub in stubs:
        try:
            stub.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            stub.process.kill()
            stub.process.wait()


def first_exited(stubs: Sequence[Stub]) -> Stub | None:
    return next((stub for stub in stubs if stub.process.poll() is not None), None)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """A second Ctrl-C (or a SIGTERM) must not cut the clean-up short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in names}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
