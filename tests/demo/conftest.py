"""Running `svc-mcp demo` as a user does, and finding what it may have left behind.

Each run gets a fresh TMPDIR and a marker variable in its environment. The demo passes its own
environment (less the variables svc-mcp and the stubs read) to every process it starts, so a
process left behind carries the marker, whoever its parent is by then.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SVC_MCP = str(Path(sys.executable).parent / "svc-mcp")
MARKER = "SVC_DEMO_TEST_MARKER"
_OURS = re.compile(r"^(PORTAL_|SERVICE_)|^(SVC_MCP_GATEWAY_TOKEN|DASHBOARD_API_TOKEN)$")


@dataclass(frozen=True)
class Sandbox:
    """Where one demo run may write (TMPDIR), and the marker its processes carry."""

    tmpdir: Path
    marker: str

    def env(self) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if not _OURS.search(k)}
        return {**inherited, "TMPDIR": str(self.tmpdir), MARKER: self.marker}

    def leftovers(self) -> list[str]:
        """`pid: command line` of each live process that carries this run's marker."""
        return processes_with(f"{MARKER}={self.marker}".encode())

    def kill_leftovers(self) -> None:
        """Only after a failed test: these processes were all started by it."""
        for leftover in self.leftovers():
            with contextlib.suppress(OSError):
                os.kill(int(leftover.split(":", 1)[0]), signal.SIGKILL)


def new_sandbox(base: Path) -> Sandbox:
    tmpdir = base / "tmp"
    tmpdir.mkdir()
    return Sandbox(tmpdir, uuid.uuid4().hex)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return new_sandbox(tmp_path)


def processes_with(entry: bytes) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if entry in environ and state != "Z":
            found.append(f"{proc.name}: {cmdline}")
    return found


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (item.decode().partition("=") for item in raw if item)
    return {name: value for name, _, value in pairs}


def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def sections(output: str) -> dict[str, list[str]]:
    """The demo's plain output by section: `== title` -> the lines under it."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in output.splitlines():
        if line.startswith("== "):
            current = found.setdefault(line[3:], [])
        elif not line.startswith("-- "):
            current.append(line)
    return found


def section(output: str, title_start: str) -> list[str]:
    matching = [lines for title, lines in sections(output).items() if title.startswith(title_start)]
    assert len(matching) == 1, f"no single section {title_start!r} in:\n{output}"
    return matching[0]


def stub_pids(output: str) -> dict[str, int]:
    """stub name -> pid, from the Stubs table."""
    rows = section(output, "Stubs")[1:]
    return {row.split()[0]: int(row.split()[2]) for row in rows}


@dataclass
class LiveDemo:
    """A demo process whose output is read as it comes."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 90.0) -> str:
        """Collects output until a line contains `text`; the whole output so far."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            remaining = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(remaining, 0.01))
            except queue.Empty:
                pytest.fail(f"no line with {text!r} within {timeout} s:\n" + self.output)
            if line is None:
                pytest.fail(f"the demo ended before printing {text!r}:\n" + self.output)
            self.lines.append(line)
        return self.output

    def rest(self) -> str:
        """Everything until the output ends (the process has exited)."""
        while (line := self._queue.get(timeout=30)) is not None:
            self.lines.append(line)
        return self.output

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


def start_demo(sandbox: Sandbox, *args: str) -> LiveDemo:
    """`svc-mcp demo ARGS` as a real process, its output on pipes (not a terminal)."""
    process = subprocess.Popen(
        [SVC_MCP, "demo", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=sandbox.env(),
    )
    return LiveDemo(process)


@contextlib.contextmanager
def demo_process(sandbox: Sandbox, *args: str) -> Iterator[LiveDemo]:
    """A demo that is killed if the test leaves it running (only when a test failed half-way)."""
    demo = start_demo(sandbox, *args)
    try:
        yield demo
    finally:
        if demo.process.poll() is None:
            demo.process.kill()
            demo.process.wait()
            sandbox.kill_leftovers()
