"""A seccomp filter for what Landlock cannot restrict: which sockets a process may open.

Landlock (up to ABI 7) leaves pathname Unix sockets and UDP open: a confined process could reach
the session bus, `docker.sock` or an ssh-agent, or send datagrams anywhere. Once its listeners are
bound, a process needs new sockets only to connect over TCP, so `socket()` is refused (EACCES) for
every family but IPv4/IPv6 and every type but a stream; datagrams stay allowed only where the
resolver needs them (a host named by a name, not an address). Sockets already open (a bound
`--uds` listener, what it accepts, the descriptors given at start) keep working, as do
`socketpair()` pairs, which reach nothing outside the process. `io_uring_setup` is refused too:
a ring could open sockets without passing through `socket()`. A system call of a foreign
architecture (x32, or i386 by `int 0x80`) fails with EPERM.

Built by hand with ctypes (docs/decisions.md says why no binding from PyPI): a dozen BPF
instructions installed with `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)` after `no_new_privs`.
"""

from __future__ import annotations

import ctypes
import errno
import ipaddress
import os
import platform
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class _Arch:
    audit: int
    socket: int
    io_uring_setup: int
    x32_bit: bool


_ARCHES = {
    "x86_64": _Arch(audit=0xC000003E, socket=41, io_uring_setup=425, x32_bit=True),
    "aarch64": _Arch(audit=0xC00000B7, socket=198, io_uring_setup=425, x32_bit=False),
}
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000
_SOCK_TYPE_MASK = 0xF
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (the low
# word of each argument comes first on both little-endian architectures).
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32
NETLINK_SOCK_DIAG = 4
_LD_ABS, _JEQ, _JGE, _AND, _RET = 0x20, 0x15, 0x35, 0x54, 0x06


class FilterUnavailable(Exception):
    """The filter cannot be installed here; the message says why, in one line."""


class _Instruction(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def resolver_needed(urls: Iterable[str]) -> bool:
    """Whether connecting to `urls` needs a name looked up by DNS, which uses UDP: a host that
    is neither an address nor `localhost` (which /etc/hosts answers)."""
    for url in urls:
        try:
            host = urlsplit(url.strip()).hostname
        except ValueError:
            continue
        if not host or host == "localhost":
            continue
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return True
    return False


def otlp_urls(environ: Mapping[str, str]) -> list[str]:
    """Every OTLP endpoint the environment names (more than the exporters use is harmless)."""
    names = ("", "TRACES_", "METRICS_")
    return [value for name in names if (value := environ.get(f"OTEL_EXPORTER_OTLP_{name}ENDPOINT"))]


def sockets_left(datagrams: bool, socket_owners: bool = False) -> str:
    """What the filter leaves, for the start-up line."""
    left = "TCP and UDP (for the resolver)" if datagrams else "TCP only"
    return f"{left}, and netlink sock_diag (who owns a loopback peer)" if socket_owners else left


def program(
    machine: str, datagrams: bool, socket_owners: bool = False
) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions; FilterUnavailable for an unknown machine.
    `socket_owners` also allows a netlink socket of the sock_diag protocol only, which asks the
    kernel which local user owns a socket (the data service's guard keys loopback peers so)."""
    arch = _ARCHES.get(machine)
    if arch is None:
        raise FilterUnavailable(f"no seccomp socket filter for {machine}")
    refuse = _RET_ERRNO | errno.EACCES
    foreign = _RET_ERRNO | errno.EPERM
    code: list[tuple[int, int, int, int]] = [
        (_LD_ABS, 0, 0, _ARCH),
        (_JEQ, 1, 0, arch.audit),
        (_RET, 0, 0, foreign),
        (_LD_ABS, 0, 0, _NR),
    ]
    if arch.x32_bit:
        code += [(_JGE, 0, 1, _X32_SYSCALL_BIT), (_RET, 0, 0, foreign)]
    code += [
        (_JEQ, 0, 1, arch.io_uring_setup),
        (_RET, 0, 0, foreign),
        (_JEQ, 1, 0, arch.socket),
        (_RET, 0, 0, _RET_ALLOW),
        (_LD_ABS, 0, 0, _ARG0),
    ]
    if socket_owners:
        code += [
            (_JEQ, 6, 0, socket.AF_INET),
            (_JEQ, 5, 0, socket.AF_INET6),
            (_JEQ, 0, 3, socket.AF_NETLINK),
            (_LD_ABS, 0, 0, _ARG2),
            (_JEQ, 0, 1, NETLINK_SOCK_DIAG),
            (_RET, 0, 0, _RET_ALLOW),
            (_RET, 0, 0, refuse),
        ]
    else:
        code += [
            (_JEQ, 2, 0, socket.AF_INET),
            (_JEQ, 1, 0, socket.AF_INET6),
            (_RET, 0, 0, refuse),
        ]
    code += [
        (_LD_ABS, 0, 0, _ARG1),
        (_AND, 0, 0, _SOCK_TYPE_MASK),
    ]
    if datagrams:
        code += [(_JEQ, 2, 0, socket.SOCK_STREAM), (_JEQ, 1, 0, socket.SOCK_DGRAM)]
    else:
        code += [(_JEQ, 1, 0, socket.SOCK_STREAM)]
    code += [(_RET, 0, 0, refuse), (_RET, 0, 0, _RET_ALLOW)]
    return code


def install_socket_filter(datagrams: bool, socket_owners: bool = False) -> None:
    """Applies the filter to this thread and what it starts later (no_new_privs must be set)."""
    code = program(platform.machine(), datagrams, socket_owners)
    instructions = (_Instruction * len(code))(*(_Instruction(*item) for item in code))
    fprog = _Program(len(code), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    if (
        libc.prctl(
            _PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(fprog), None, None
        )
        != 0
    ):
        raise FilterUnavailable(f"seccomp filter: {os.strerror(ctypes.get_errno())}")
