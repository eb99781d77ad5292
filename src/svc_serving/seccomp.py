"""Classic BPF for seccomp, written as labelled steps and installed by ctypes (docs/decisions.md
says why no binding from PyPI): `svc_serving.socket_filter` writes the rules with these steps.

A jump names the label it goes to; `assemble` turns the names into the forward offsets BPF wants.
Only the low word of an argument is ever loaded: every argument the rules look at is a 32-bit
int to the kernel (a family, a type, a protocol, send flags, an ioctl request, clone's flags).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import NamedTuple

_LD_ABS, _JEQ, _JGE, _JSET, _AND, _RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (the low
# word of each argument comes first on both little-endian architectures).
_NR, _ARCH = 0, 4
_ARGS = 16

RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000


def errno_result(number: int) -> int:
    """The filter's answer that fails the call with `number`."""
    return _RET_ERRNO | number


class FilterUnavailable(Exception):
    """The filter cannot be installed here; the message says why, in one line."""


class Label(NamedTuple):
    name: str


class Step(NamedTuple):
    code: int
    k: int = 0
    jt: str | None = None
    jf: str | None = None


Program = Sequence[Step | Label]


def load_arch() -> Step:
    return Step(_LD_ABS, _ARCH)


def load_number() -> Step:
    return Step(_LD_ABS, _NR)


def load_arg(index: int) -> Step:
    return Step(_LD_ABS, _ARGS + 8 * index)


def mask(bits: int) -> Step:
    return Step(_AND, bits)


def go_if(value: int, label: str) -> Step:
    return Step(_JEQ, value, jt=label)


def go_unless(value: int, label: str) -> Step:
    return Step(_JEQ, value, jf=label)


def go_if_at_least(value: int, label: str) -> Step:
    return Step(_JGE, value, jt=label)


def go_if_any(bits: int, label: str) -> Step:
    return Step(_JSET, bits, jt=label)


def answer(result: int) -> Step:
    return Step(_RET, result)


def assemble(program: Program) -> list[tuple[int, int, int, int]]:
    """The program as (code, jt, jf, k) instructions, each label's name turned into an offset."""
    steps: list[Step] = []
    where: dict[str, int] = {}
    for item in program:
        if isinstance(item, Label):
            where[item.name] = len(steps)
        else:
            steps.append(item)

    def offset(index: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = where[label] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"a jump to {label} must go forward, at most 255 steps")
        return distance

    return [
        (step.code, offset(index, step.jt), offset(index, step.jf), step.k)
        for index, step in enumerate(steps)
    ]


class _Instruction(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def install(code: list[tuple[int, int, int, int]]) -> None:
    """Applies the filter to this thread and what it starts later (no_new_privs must be set)."""
    instructions = (_Instruction * len(code))(*(_Instruction(*item) for item in code))
    fprog = _Program(len(code), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    mode = ctypes.c_ulong(_SECCOMP_MODE_FILTER)
    if libc.prctl(_PR_SET_SECCOMP, mode, ctypes.byref(fprog), None, None) != 0:
        raise FilterUnavailable(f"seccomp filter: {os.strerror(ctypes.get_errno())}")
