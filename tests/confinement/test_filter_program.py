"""The filter's program as the kernel would run it, for both architectures (only x86_64 runs the
real one here): a small interpreter of the classic BPF the filter uses walks each call, so a wrong
system call number or a jump to the wrong answer on aarch64 shows up here too."""

from __future__ import annotations

import errno
import socket
import struct

import pytest

from svc_serving.socket_filter import TIOCSTI, program

ALLOW = 0x7FFF0000
AUDIT = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# (x86_64, aarch64) from the kernel's tables, written out here rather than taken from the filter.
NUMBERS = {
    "read": (0, 63),
    "socket": (41, 198),
    "sendto": (44, 206),
    "ioctl": (16, 29),
    "clone": (56, 220),
    "clone3": (435, 435),
    "unshare": (272, 97),
    "bpf": (321, 280),
    "keyctl": (250, 219),
}
IPPROTO_MPTCP = 262


def run(machine: str, name: str, *args: int) -> int:
    """The filter's answer to the call `name(args)` on `machine`."""
    return interpret(machine, NUMBERS[name][0 if machine == "x86_64" else 1], AUDIT[machine], args)


def interpret(machine: str, number: int, arch: int, args: tuple[int, ...]) -> int:
    """The answer of `machine`'s filter to the seccomp_data of a call."""
    words = (arg & 0xFFFFFFFFFFFFFFFF for arg in (*args, *[0] * (6 - len(args))))
    data = struct.pack("<IIQ6Q", number, arch, 0, *words)
    code = program(machine, datagrams=False)
    accumulator, index = 0, 0
    while True:
        op, jt, jf, k = code[index]
        index += 1
        if op == 0x20:  # load a word of seccomp_data
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:
            accumulator &= k
        elif op == 0x06:
            return k
        else:
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}
            index += jt if taken[op] else jf


def refused(number: int) -> int:
    return 0x00050000 | number


@pytest.mark.parametrize("machine", sorted(AUDIT))
def test_each_rule_answers_on_both_architectures(machine: str) -> None:
    inet, stream = socket.AF_INET, socket.SOCK_STREAM
    assert run(machine, "read", 0, 0, 10) == ALLOW
    assert run(machine, "socket", inet, stream | socket.SOCK_CLOEXEC, 0) == ALLOW
    assert run(machine, "socket", inet, stream, socket.IPPROTO_TCP) == ALLOW
    assert run(machine, "socket", inet, stream, IPPROTO_MPTCP) == refused(errno.EACCES)
    assert run(machine, "socket", socket.AF_UNIX, stream, 0) == refused(errno.EACCES)
    assert run(machine, "socket", inet, socket.SOCK_DGRAM, 0) == refused(errno.EACCES)
    assert run(machine, "sendto", 3, 0, 10, 0) == ALLOW
    assert run(machine, "sendto", 3, 0, 10, socket.MSG_FASTOPEN) == refused(errno.EACCES)
    assert run(machine, "ioctl", 0, TIOCSTI, 0) == refused(errno.EPERM)
    assert run(machine, "ioctl", 0, (1 << 32) | TIOCSTI, 0) == refused(errno.EPERM)
    assert run(machine, "ioctl", 0, 0x5413, 0) == ALLOW  # TIOCGWINSZ
    assert run(machine, "clone", 0x01200011) == ALLOW  # fork's flags
    assert run(machine, "clone", 0x10000011) == refused(errno.EPERM)  # CLONE_NEWUSER
    assert run(machine, "clone3", 0, 88) == refused(errno.ENOSYS)
    for name in ("unshare", "bpf", "keyctl"):
        assert run(machine, name, 0) == refused(errno.EPERM), name


def test_a_call_of_another_architecture_is_refused() -> None:
    """x32 (the x32 bit in the number) and i386 (`int 0x80`: another audit architecture)."""
    x32_read = 0x40000000
    i386 = 0x40000003
    assert interpret("x86_64", x32_read, AUDIT["x86_64"], ()) == refused(errno.EPERM)
    assert interpret("x86_64", 0, i386, ()) == refused(errno.EPERM)
    assert interpret("aarch64", 63, AUDIT["x86_64"], ()) == refused(errno.EPERM)
