"""A confined process cannot type into the terminal it was started from (issue 44, finding 12:
`ioctl(TIOCSTI)` queued a command the user's shell then ran unconfined; TIOCLINUX can do the same on
a virtual console), and the kernel's interfaces no server needs (finding 16: new namespaces,
userfaultfd, bpf, perf_event_open, the key rings, ptrace) are refused, as the systemd units'
`SystemCallFilter=` refuses them, for a process run by hand too. Threads still start (clone3
answers ENOSYS, and the C library falls back to clone). Each probe confines itself with a
process's own policy (tests/confinement/probe.py)."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.confinement.probe import CALLS, TYPED
from tests.confinement.test_sockets import SETTINGS, arguments
from tests.confinement.test_write_forms import probe

pytestmark = pytest.mark.e2e  # every test runs the probe in a process of its own


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal: the end a shell would hold, and the one the probe is started on."""
    controller, terminal = os.openpty()
    yield controller, terminal
    os.close(controller)
    os.close(terminal)


def queued_input(terminal: int) -> bytes:
    """What the terminal's shell would read next (TIOCSTI queues it before the ioctl returns)."""
    ready, _, _ = select.select([terminal], [], [], 0)
    return os.read(terminal, 1024) if ready else b""


@pytest.mark.parametrize("policy", sorted(SETTINGS))
def test_no_confined_process_types_into_its_terminal(
    tmp_path: Path, terminal: tuple[int, int], policy: str
) -> None:
    results = probe(
        tmp_path,
        policy,
        SETTINGS[policy],
        *arguments(policy, tmp_path, 9),
        terminal=terminal[1],
        SVC_TEST_TERMINAL="1",
    )
    assert results["TIOCSTI"] == results["TIOCLINUX"] == "EPERM", results
    assert results["terminal size"] == "ok", results  # other terminal requests still work
    assert queued_input(terminal[1]) == b""


def test_switched_off_the_typed_command_reaches_the_shell(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    """The attempt is real: unconfined, the shell would read and run the typed line."""
    results = probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        terminal=terminal[1],
        SVC_MCP_CONFINEMENT="off",
        SVC_TEST_TERMINAL="1",
    )
    assert results["TIOCSTI"] == "ok", results
    assert queued_input(terminal[1]) == TYPED


@pytest.mark.parametrize("policy", sorted(SETTINGS))
def test_no_confined_process_reaches_the_kernels_other_doors(tmp_path: Path, policy: str) -> None:
    results = probe(
        tmp_path, policy, SETTINGS[policy], *arguments(policy, tmp_path, 9), SVC_TEST_KERNEL="1"
    )
    expected = {name: "ENOSYS" if name == "clone3" else "EPERM" for name in CALLS}
    assert {name: results[name] for name in CALLS} == expected
    assert results["start a thread"] == "ok", results


def test_switched_off_no_call_is_refused(tmp_path: Path) -> None:
    """Unconfined, each call gives its own answer (a no-op done, or an argument refused): none is
    the filter's EPERM or ENOSYS, so the test above sees the filter."""
    results = probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        SVC_MCP_CONFINEMENT="off",
        SVC_TEST_KERNEL="1",
    )
    answers = {name: results[name] for name in CALLS}
    assert not {"EPERM", "ENOSYS"} & set(answers.values()), answers
