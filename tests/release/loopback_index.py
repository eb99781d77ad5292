"""A release served from a real PyPI-compatible index (pypiserver) in a network namespace of its
own: only loopback is up there, so whatever runs inside (uvx, `svc-mcp install`, doctor, a host)
can reach nothing but that index and the stubs beside it.

The dependencies' wheels come from the registry pip is configured with, once, into a cache the
tests keep between runs (`test-artifacts/release-wheels/<hash of the locked requirements>/`):
the only step with network beyond loopback, and it runs outside the namespace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.parallel import one_at_a_time
from tests.support import ROOT

UV = os.environ.get("UV") or shutil.which("uv") or str(Path(sys.executable).parent / "uv")
BIN = Path(sys.executable).parent
WHEEL_CACHE = ROOT / "test-artifacts" / "release-wheels"
INDEX_PORT = 3141  # pypiserver's own default; the namespace is new, every port in it is free
INDEX = f"http://127.0.0.1:{INDEX_PORT}/simple/"


def locked_requirements() -> str:
    """svc-mcp's runtime dependencies (no extra) at the versions uv.lock holds."""
    return subprocess.run(
        [UV, "export", "--locked", "--no-emit-project", "--no-header", "--no-hashes",
         "--format", "requirements-txt", "--no-annotate"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def dependency_wheels() -> Path:
    """The folder of the locked dependencies' wheels for this interpreter, downloaded once."""
    requirements = locked_requirements()
    folder = WHEEL_CACHE / hashlib.sha256(requirements.encode()).hexdigest()[:16]
    with one_at_a_time(folder):
        return _fill_wheels(folder, requirements)


def _fill_wheels(folder: Path, requirements: str) -> Path:
    if (folder / "complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "requirements.txt").write_text(requirements)
    # pip, not uv: uv has no `pip download`. The machine's pip when there is one, else pip
    # fetched by uvx (this virtualenv has none).
    found = shutil.which("pip3") or shutil.which("pip")
    pip = [found] if found else [str(Path(UV).with_name("uvx")), "--from", "pip", "pip"]
    subprocess.run(
        [*pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest", str(folder),
         "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}",
         "--requirement", str(folder / "requirements.txt")],
        check=True, timeout=600,
        # pip's site constraints are not this project's: the lock decides the versions.
        env={**os.environ, "PIP_CONSTRAINT": "", "PIP_REQUIRE_VIRTUALENV": "0"},
    )  # fmt: skip
    (folder / "complete").write_text("")
    return folder


@dataclass(frozen=True)
class Namespace:
    """A network namespace of the tests' own; `run` runs a command inside it."""

    pid: int

    def command(self, args: Sequence[str]) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", *args]

    def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        timeout: float = 180,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(args),
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    @contextlib.contextmanager
    def background(
        self, args: Sequence[str], *, env: Mapping[str, str], log: Path, ready: str
    ) -> Iterator[None]:
        with log.open("wb") as out:
            process = subprocess.Popen(
                self.command(args), env=dict(env), stdout=out, stderr=subprocess.STDOUT
            )
        try:
            self.wait_for(ready, process, log)
            yield
        finally:
            process.terminate()
            process.wait(timeout=10)

    def wait_for(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        probe = (
            "import sys, time, urllib.request\n"
            "end = time.monotonic() + 60\n"
            "while time.monotonic() < end:\n"
            "    try:\n"
            "        urllib.request.urlopen(sys.argv[1], timeout=2); sys.exit(0)\n"
            "    except OSError:\n"
            "        time.sleep(0.1)\n"
            "sys.exit(1)\n"
        )
        done = self.run([sys.executable, "-c", probe, url], env=os.environ, timeout=90)
        said = log.read_text(errors="replace")
        assert done.returncode == 0, said
        assert process.poll() is None, said


@contextlib.contextmanager
def loopback_namespace(
    first: Sequence[str], log: Path
) -> Iterator[tuple[Namespace, subprocess.Popen[bytes]]]:
    """A new network namespace with only loopback up, and `first`, the process holding it (ended
    on the way out)."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *first],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    namespace = Namespace(process.pid)
    try:
        # Until unshare has run, the process is still in this namespace: entering it then
        # would let the commands reach everything this test can.
        own = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{process.pid}/ns/net") == own:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "unshare did not make the namespace"
            time.sleep(0.02)
        yield namespace, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def index_namespace(packages: Path, log: Path) -> Iterator[Namespace]:
    """pypiserver serving `packages` on 127.0.0.1:INDEX_PORT in a new network namespace, with
    no fallback: a name it does not hold is a 404, never a redirect to pypi.org."""
    server = [
        str(BIN / "pypi-server"), "run", "--disable-fallback", "--server", "wsgiref",
        "-i", "127.0.0.1", "-p", str(INDEX_PORT), str(packages),
    ]  # fmt: skip
    with loopback_namespace(server, log) as (namespace, process):
        namespace.wait_for(f"{INDEX}svc-mcp/", process, log)
        yield namespace
