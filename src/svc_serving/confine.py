"""A long-running process drops its own rights before it serves: `no_new_privs`, then a Landlock
ruleset built from a declarative `Policy` (files and folders it may read, files and folders it may
write, TCP ports it may connect to and bind), then a seccomp filter for what Landlock cannot
restrict (`svc_serving.socket_filter`: new sockets TCP only, UDP where a resolver needs it, no
MPTCP or TCP fast open, no typing into a terminal, no namespaces or other kernel interfaces no
server needs).

Landlock is reached through three system calls by ctypes (docs/decisions.md says why no binding
from PyPI). Best effort: the ruleset handles every right the kernel's ABI knows, and the start-up
line names what an older ABI cannot restrict. A ruleset confines the calling thread and the
threads and processes it starts later, so `confine` runs while the process has one thread.

Each process family has one setting (`auto`, the default; `require`; `off`): without Landlock,
`auto` logs one line saying the process runs unconfined and why (no_new_privs and the socket filter
still apply), `require` refuses to start. A write scope that would open a shared folder (HOME or a
folder holding it, `/`, a temporary folder, a folder others can write) is refused in both.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from pathlib import Path
from typing import NoReturn

from svc_serving.confine_line import CONFINED
from svc_serving.confine_paths import runtime_paths, shared_write_scope
from svc_serving.socket_filter import FilterUnavailable, install_socket_filter, sockets_left

# System call numbers: the same on x86_64 and aarch64 (Landlock came after the tables merged).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_ARCHITECTURES = {"x86_64", "aarch64"}
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2

# Filesystem rights (ABI 1 unless noted).
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The only rights a rule on a file (not a folder) may carry."""
READ = FS_READ_FILE | FS_READ_DIR
WRITE = (
    READ
    | FS_WRITE_FILE
    | FS_TRUNCATE
    | FS_REMOVE_FILE
    | FS_REMOVE_DIR
    | FS_MAKE_REG
    | FS_MAKE_DIR
    | FS_REFER
)
"""What a writable folder allows: files and folders, no links, devices, sockets or fifos."""

_MISSING_BEFORE = (
    (2, "cross-folder renames and links are refused outright"),
    (3, "truncation is not restricted"),
    (4, "TCP bind and connect are not restricted"),
    (5, "device ioctls are not restricted"),
    (6, "abstract Unix sockets and signals are not scoped"),
)
"""What each ABI added, said of a kernel older than it."""


class Mode(Enum):
    AUTO = "auto"
    REQUIRE = "require"
    OFF = "off"


class ConfinementError(Exception):
    """Landlock is missing or refused the ruleset; the message says why, in one line."""


class PartlyConfined(ConfinementError):
    """No Landlock here: no_new_privs and the socket filter were applied all the same."""


class SharedWriteScope(ConfinementError):
    """A path the policy would make writable is shared with others; refused in every mode."""


@dataclass(frozen=True)
class Policy:
    """What a process may still do once confined. `reads` and `writes` (files or folders) are
    named in the log line; `runtime` holds what any Python process needs to keep running, counted
    there. `datagrams`: UDP sockets stay allowed, for a resolver that must look a name up.
    `socket_owners`: a netlink sock_diag socket stays allowed, to ask which local user owns a
    loopback peer's socket."""

    process: str
    reads: tuple[Path, ...] = ()
    writes: tuple[Path, ...] = ()
    connect_ports: tuple[int, ...] = ()
    bind_ports: tuple[int, ...] = ()
    runtime: tuple[Path, ...] = field(default_factory=lambda: runtime_paths())
    datagrams: bool = False
    socket_owners: bool = False

    def summary(self) -> str:
        def paths(items: tuple[Path, ...]) -> str:
            return ", ".join(str(path) for path in items) if items else "none"

        def ports(items: tuple[int, ...]) -> str:
            return ", ".join(str(port) for port in sorted(set(items))) if items else "none"

        reads = f"{paths(self.reads)} + {len(self.runtime)} runtime paths"
        return (
            f"writes: {paths(self.writes)}; reads: {reads}; "
            f"connects: {ports(self.connect_ports)}; binds: {ports(self.bind_ports)}; "
            f"new sockets: {sockets_left(self.datagrams, self.socket_owners)}"
        )


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; ConfinementError saying why there is none."""
    if sys.platform != "linux":
        raise ConfinementError(f"Landlock is Linux only (this is {sys.platform})")
    if platform.machine() not in _ARCHITECTURES:
        raise ConfinementError(f"no Landlock system call numbers for {platform.machine()}")
    version = _syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    if version < 0:
        errno = ctypes.get_errno()
        reasons = {
            38: "the kernel has no Landlock (ENOSYS; Linux 5.13 or later has it)",
            95: "Landlock is built in but not enabled (EOPNOTSUPP; add it to the lsm= boot list)",
            1: "the system call filter forbids Landlock (EPERM)",
        }
        raise ConfinementError(reasons.get(errno, f"Landlock unavailable: {os.strerror(errno)}"))
    return version


def missing_with(abi: int) -> list[str]:
    return [what for since, what in _MISSING_BEFORE if abi < since]


def restrict(policy: Policy) -> int:
    """Sets no_new_privs, applies `policy`'s Landlock ruleset and then the socket filter to this
    process; returns the ABI used. Without Landlock it applies the rest, then raises
    PartlyConfined."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise ConfinementError(
            f"{threads} threads are already running; Landlock would confine only one"
        )
    for path in policy.writes:
        if problem := shared_write_scope(path):
            raise SharedWriteScope(problem)
    try:
        abi = landlock_abi()
    except ConfinementError as exc:
        _no_new_privs()
        _filter_sockets(policy)
        raise PartlyConfined(f"{exc}; no_new_privs and the socket filter still apply") from None
    handled_fs = _FS_BY_ABI[max(key for key in _FS_BY_ABI if key <= abi)]
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = (ctypes.c_uint64 * 3)(handled_fs, handled_net, scoped)
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        raise ConfinementError(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path in (*policy.runtime, *policy.reads):
            _allow_path(ruleset, path, READ & handled_fs)
        for path in policy.writes:
            _allow_path(ruleset, path, WRITE & handled_fs)
        if handled_net:
            for port in set(policy.connect_ports):
                _allow_port(ruleset, port, NET_CONNECT_TCP)
            for port in set(policy.bind_ports):
                _allow_port(ruleset, port, NET_BIND_TCP)
        _no_new_privs()
        if _syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise ConfinementError(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    _filter_sockets(policy)
    return abi


def _no_new_privs() -> None:
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), None, None, None) != 0:
        raise ConfinementError(f"no_new_privs: {os.strerror(ctypes.get_errno())}")


def _filter_sockets(policy: Policy) -> None:
    try:
        install_socket_filter(policy.datagrams, policy.socket_owners)
    except FilterUnavailable as exc:
        raise ConfinementError(str(exc)) from None


def mode_from(setting: str) -> Mode:
    """The mode the environment variable `setting` asks for; ValueError naming the values."""
    value = os.environ.get(setting, "").strip().lower() or Mode.AUTO.value
    try:
        return Mode(value)
    except ValueError:
        choices = ", ".join(mode.value for mode in Mode)
        raise ValueError(f"{setting} must be one of {choices}") from None


def confine(policy: Policy, setting: str) -> str:
    """Confines this process as `setting` (an environment variable) says, writes the one line
    saying what it applied to stderr and returns it. Where that setting is `require` and the
    process cannot be confined, or the setting is not understood, it exits with status 2."""
    try:
        mode = mode_from(setting)
    except ValueError as exc:
        _refuse(f"{policy.process}: {exc}")
    if mode is Mode.OFF:
        line = f"{policy.process}: unconfined: {setting}=off"
    else:
        try:
            abi = restrict(policy)
        except SharedWriteScope as exc:
            _refuse(f"{policy.process}: refusing to start: {exc}")
        except (ConfinementError, OSError) as exc:
            if mode is Mode.REQUIRE:
                _refuse(
                    f"{policy.process}: refusing to start unconfined ({setting}=require): {exc}"
                )
            line = f"{policy.process}: unconfined: {exc} (set {setting}=require to refuse instead)"
        else:
            line = describe(policy, abi)
    print(line, file=sys.stderr, flush=True)
    return line


def describe(policy: Policy, abi: int) -> str:
    missing = missing_with(abi)
    gaps = f"; ABI {abi} cannot restrict: {', '.join(missing)}" if missing else ""
    return (
        f"{policy.process}: {CONFINED} (Landlock ABI {abi}, no_new_privs, seccomp): "
        f"{policy.summary()}{gaps}"
    )


def status(policy: Policy, setting: str) -> str:
    """What `confine` would apply here, without applying it: for a report such as doctor's."""
    try:
        mode = mode_from(setting)
    except ValueError as exc:
        return f"{policy.process}: will not start: {exc}"
    if mode is Mode.OFF:
        return f"{policy.process}: unconfined: {setting}=off"
    try:
        abi = landlock_abi()
    except ConfinementError as exc:
        if mode is Mode.REQUIRE:
            return f"{policy.process}: will not start ({setting}=require): {exc}"
        return f"{policy.process}: unconfined: {exc}"
    return describe(policy, abi)


def _allow_path(ruleset: int, path: Path, rights: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        attr = _PathBeneath(rights, descriptor)
        if _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0) != 0:
            raise ConfinementError(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(descriptor)


def _allow_port(ruleset: int, port: int, rights: int) -> None:
    attr = _NetPort(rights, port)
    if _syscall(_SYS_ADD_RULE, ruleset, _RULE_NET_PORT, ctypes.byref(attr), 0) != 0:
        raise ConfinementError(f"landlock_add_rule port {port}: {os.strerror(ctypes.get_errno())}")


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(number: int, *args: object) -> int:
    # Whole registers: a bare int would travel as a 32-bit C int through the variadic call.
    words = [ctypes.c_long(arg) if isinstance(arg, int) else arg for arg in args]
    return int(_libc().syscall(ctypes.c_long(number), *words))


def _refuse(message: str) -> NoReturn:
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(2)
