"""The kinds of failure, one name and one exit code each, shared by tool calls, install, doctor
and the gateway (docs/mcp.md, "Errors and exit codes").

A `StrEnum`, so a kind is also the plain string that messages, JSON and MCP errors carry.
"""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    USAGE = "usage"
    MISCONFIGURED = "misconfigured"
    INVALID_ARGUMENT = "invalid_argument"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    LOCKED_OUT = "locked_out"
    RATE_LIMITED = "rate_limited"
    UNREACHABLE = "unreachable"
    BAD_REQUEST = "bad_request"
    SERVER_ERROR = "server_error"
    UNAVAILABLE = "unavailable"

    @classmethod
    def named(cls, text: object) -> FailureKind:
        """The kind a peer named (an MCP error's `kind`), or SERVER_ERROR for any other text."""
        return cls(text) if text in _NAMES else cls.SERVER_ERROR

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed later unchanged (after `retry_after` if given)."""
        return self in _RETRYABLE


_EXIT_CODES = {
    FailureKind.USAGE: 2,
    FailureKind.MISCONFIGURED: 2,
    FailureKind.INVALID_ARGUMENT: 2,
    FailureKind.UNAUTHORIZED: 3,
    FailureKind.FORBIDDEN: 4,
    FailureKind.NOT_FOUND: 5,
    FailureKind.LOCKED_OUT: 6,
    FailureKind.RATE_LIMITED: 7,
    FailureKind.UNREACHABLE: 8,
    FailureKind.BAD_REQUEST: 9,
    FailureKind.SERVER_ERROR: 10,
    FailureKind.UNAVAILABLE: 11,
}
_RETRYABLE = frozenset({FailureKind.UNREACHABLE, FailureKind.UNAVAILABLE})
_NAMES = frozenset(kind.value for kind in FailureKind)
