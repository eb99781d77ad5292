"""Why a tool call failed, one class per kind (docs/mcp.md, "Errors and exit codes").

Each message is one line that tells an agent or a person what to do next. No message ever
contains a token: the client builds them from the status, the server's error message (with the
token scrubbed) and the names of the environment variables, never their values. `hint` names
what to change (a variable, a role, an argument); `retry_after` is in seconds.
"""

from __future__ import annotations

from typing import Any, ClassVar

from svc_mcp.core.failures import FailureKind
from svc_mcp.core.safe_text import visible


class CallError(Exception):
    kind: ClassVar[FailureKind]

    def __init__(
        self, message: str, *, hint: str | None = None, retry_after: int | None = None
    ) -> None:
        # Messages quote backends and settings: shown escaped wherever they go.
        super().__init__(visible(message))
        self.hint = hint
        self.retry_after = retry_after
        self.quoted: str | None = None
        """The backend's own words the message quotes (its error code and message), which
        the MCP face marks as written by others."""
        self.request_id: str | None = None
        """The id of the backend request that failed (its trace id when tracing is on), which
        the backend's access log carries: what a person hands an operator."""

    def advise(self, advice: str) -> None:
        """Adds what only the tool's row knows, such as whether sending it again is safe."""
        self.args = (f"{self.args[0]}; {visible(advice)}",)

    def told(self) -> str:
        """The message, and the request id when a backend request failed (errors only, so the
        id costs an agent's budget nothing on success)."""
        return f"{self} (request id {self.request_id})" if self.request_id else str(self)

    def as_dict(self) -> dict[str, Any]:
        """`kind` and `message`, plus `retry_after` and `hint` where they apply."""
        extra = {"retry_after": self.retry_after, "hint": self.hint}
        return {
            "kind": self.kind,
            "message": str(self),
            **{key: value for key, value in extra.items() if value is not None},
        }


class Misconfigured(CallError):
    """An environment variable has a value the client cannot use."""

    kind = FailureKind.MISCONFIGURED


class InvalidArgument(CallError):
    """An argument of the call is of the wrong type, out of range or not among the choices;
    caught before anything is sent."""

    kind = FailureKind.INVALID_ARGUMENT


class Unauthorized(CallError):
    """401: no credential where one is needed, or one that does not verify."""

    kind = FailureKind.UNAUTHORIZED


class Forbidden(CallError):
    """403: the caller's identity lacks the role the endpoint needs."""

    kind = FailureKind.FORBIDDEN


class NotFound(CallError):
    """404: the server has no such path (usually the base URL points at the wrong service)."""

    kind = FailureKind.NOT_FOUND


class LockedOut(CallError):
    """429 after repeated failed credentials; never retried automatically."""

    kind = FailureKind.LOCKED_OUT


class RateLimited(CallError):
    """429 from a global rate limit; never retried automatically."""

    kind = FailureKind.RATE_LIMITED


class Unreachable(CallError):
    """No HTTP answer at all: refused, timed out, or the name does not resolve."""

    kind = FailureKind.UNREACHABLE

    def __init__(
        self, message: str, base_url: str, *, hint: str | None = None, sent: bool = True
    ) -> None:
        super().__init__(message, hint=hint)
        self.base_url = base_url
        self.sent = sent
        """False only when no connection was made: the request provably never left."""


class BadRequest(CallError):
    """400 (or another refusal of the request itself): a bad limit or cursor, for example."""

    kind = FailureKind.BAD_REQUEST


class ServerError(CallError):
    """5xx, or an answer that is not the documented envelope and payload."""

    kind = FailureKind.SERVER_ERROR


class Unavailable(CallError):
    """502, 503 or 504, or no free slot for the backend within the call's time: the backend (or
    the way to it) is overloaded or restarting. Retrying later is safe; `retry_after` is the
    server's `Retry-After` when it sent one."""

    kind = FailureKind.UNAVAILABLE
