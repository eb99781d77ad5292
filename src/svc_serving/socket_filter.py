"""A seccomp filter for what Landlock cannot restrict: which sockets a process may open and how it
may send, which terminal requests it may make, and the kernel interfaces a server never needs.

Sockets. Landlock (up to ABI 7) leaves pathname Unix sockets and UDP open: a confined process
could reach the session bus, `docker.sock` or an ssh-agent, or send datagrams anywhere. Once its
listeners are bound, a process needs new sockets only to connect over TCP, so `socket()` is refused
(EACCES) for every family but IPv4/IPv6, every type but a stream and every protocol but TCP (0 or
`IPPROTO_TCP`): Landlock's TCP rules do not apply to MPTCP (`IPPROTO_MPTCP`, which falls back to
TCP against any server) or SCTP, so either would connect and listen on any port. Datagrams stay
allowed (UDP only) where the resolver needs them (a host named by a name, not an address). A send
with `MSG_FASTOPEN` is refused (EACCES) in `sendto`, `sendmsg` and `sendmmsg`: TCP fast open
connects inside the send, where no LSM hook looks. Sockets already open (a bound `--uds` listener,
what it accepts, the descriptors given at start) keep working, as do `socketpair()` pairs, which
reach nothing outside the process. `io_uring_setup` is refused: a ring could open sockets and
send without passing through these calls.

The terminal. `ioctl(TIOCSTI)` queues input into the terminal the process was started from, which
the user's shell then runs unconfined (CVE-2017-5226); `TIOCLINUX` can do the same on a virtual
console. Both are refused (EPERM), as Flatpak does; the process stays in the terminal's session so
that Ctrl-C still stops a server started there.

The kernel's other doors. New namespaces (`unshare`, `setns`, `clone` with a `CLONE_NEW*` flag;
`clone3`, whose flags sit behind a pointer, answers ENOSYS so that the C library falls back to
`clone`), `userfaultfd`, `bpf`, `perf_event_open`, the key rings (`keyctl`, `add_key`,
`request_key`), `kexec_*`, `ptrace` and `process_vm_readv`/`writev` are refused (EPERM): no
server here uses them, and each is a known way to widen a kernel bug. systemd's
`SystemCallFilter=@system-service` refuses the same in the units; this filter does it for a
process run by hand. A system call of a foreign architecture (x32, or i386 by `int 0x80`) fails
with EPERM.

Calls the filter never looks at (all but the seven it reads arguments of) are answered from the
kernel's seccomp cache without running it.
"""

from __future__ import annotations

import errno
import ipaddress
import platform
import socket
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import urlsplit

from svc_serving.seccomp import (
    RET_ALLOW,
    FilterUnavailable,
    Label,
    Step,
    answer,
    assemble,
    errno_result,
    go_if,
    go_if_any,
    go_if_at_least,
    go_unless,
    install,
    load_arch,
    load_arg,
    load_number,
    mask,
)

__all__ = ["NETLINK_SOCK_DIAG", "FilterUnavailable", "install_socket_filter", "program"]

NETLINK_SOCK_DIAG = 4
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
_X32_SYSCALL_BIT = 0x40000000
_SOCK_TYPE_MASK = 0xF
_CLONE_NEW_NAMESPACE = 0x7E020000
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID and NEWNET (clone's low byte is the
signal sent at exit; CLONE_NEWTIME, which shares it, only clone3 and unshare take)."""
_STREAM_PROTOCOLS = (0, socket.IPPROTO_TCP)
_DATAGRAM_PROTOCOLS = (0, socket.IPPROTO_UDP)


class _Arch(NamedTuple):
    audit: int
    x32_bit: bool
    numbers: dict[str, int]


_LOOKED_AT = ("socket", "sendto", "sendmsg", "sendmmsg", "ioctl", "clone", "clone3")
"""The calls whose arguments the filter reads (clone3's only to answer ENOSYS)."""
_REFUSED = (
    "io_uring_setup",
    "unshare",
    "setns",
    "userfaultfd",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
)
# (x86_64, aarch64) from <asm/unistd_64.h> and <asm-generic/unistd.h>.
_NUMBERS = {
    "socket": (41, 198),
    "sendto": (44, 206),
    "sendmsg": (46, 211),
    "sendmmsg": (307, 269),
    "ioctl": (16, 29),
    "clone": (56, 220),
    "clone3": (435, 435),
    "io_uring_setup": (425, 425),
    "unshare": (272, 97),
    "setns": (308, 268),
    "userfaultfd": (323, 282),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
}
_ARCHES = {
    "x86_64": _Arch(0xC000003E, True, {name: pair[0] for name, pair in _NUMBERS.items()}),
    "aarch64": _Arch(0xC00000B7, False, {name: pair[1] for name, pair in _NUMBERS.items()}),
}
_FLAGS_ARGUMENT = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}


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
    nr = arch.numbers
    steps: list[Step | Label] = [load_arch(), go_unless(arch.audit, "deny"), load_number()]
    if arch.x32_bit:
        steps.append(go_if_at_least(_X32_SYSCALL_BIT, "deny"))
    steps += [go_if(nr[name], name) for name in _LOOKED_AT]
    steps += [go_if(nr[name], "deny") for name in _REFUSED]
    steps.append(answer(RET_ALLOW))
    for name, index in _FLAGS_ARGUMENT.items():
        steps += [Label(name), load_arg(index), go_if_any(socket.MSG_FASTOPEN, "refuse")]
        steps.append(answer(RET_ALLOW))
    steps += [Label("ioctl"), load_arg(1), go_if(TIOCSTI, "deny"), go_if(TIOCLINUX, "deny")]
    steps += [answer(RET_ALLOW), Label("clone"), load_arg(0)]
    steps += [go_if_any(_CLONE_NEW_NAMESPACE, "deny"), answer(RET_ALLOW)]
    steps += [Label("clone3"), answer(errno_result(errno.ENOSYS))]
    steps += _socket_steps(datagrams, socket_owners)
    steps += [
        Label("allow"),
        answer(RET_ALLOW),
        Label("refuse"),
        answer(errno_result(errno.EACCES)),
        Label("deny"),
        answer(errno_result(errno.EPERM)),
    ]
    return assemble(steps)


def _socket_steps(datagrams: bool, socket_owners: bool) -> list[Step | Label]:
    steps: list[Step | Label] = [Label("socket"), load_arg(0)]
    steps += [go_if(socket.AF_INET, "internet"), go_if(socket.AF_INET6, "internet")]
    if socket_owners:
        steps += [go_unless(socket.AF_NETLINK, "refuse"), load_arg(2)]
        steps += [go_if(NETLINK_SOCK_DIAG, "allow")]
    steps += [answer(errno_result(errno.EACCES))]
    steps += [Label("internet"), load_arg(1), mask(_SOCK_TYPE_MASK)]
    steps += [go_if(socket.SOCK_STREAM, "stream")]
    if datagrams:
        steps += [go_if(socket.SOCK_DGRAM, "datagram")]
    steps += [answer(errno_result(errno.EACCES))]
    steps += _protocols("stream", _STREAM_PROTOCOLS)
    if datagrams:
        steps += _protocols("datagram", _DATAGRAM_PROTOCOLS)
    return steps


def _protocols(label: str, allowed: tuple[int, ...]) -> list[Step | Label]:
    return [
        Label(label),
        load_arg(2),
        *(go_if(protocol, "allow") for protocol in allowed),
        answer(errno_result(errno.EACCES)),
    ]


def install_socket_filter(datagrams: bool, socket_owners: bool = False) -> None:
    """Applies the filter to this thread and what it starts later (no_new_privs must be set)."""
    install(program(platform.machine(), datagrams, socket_owners))
