"""What the OAuth gateway writes about each request on stderr: one access line per request, and
refused tokens folded per source.

The access line carries the time (UTC), the request id its backend requests carry (the backends'
access lines print the same id; svc_mcp.core.telemetry.CURRENT_REQUEST), the status, and every
field taken from the request as a JSON string: a tool named `x sub="admin"` prints inside its
quotes and cannot pass for another field. The caller is named by the token's `sub` and client id,
never by the token; a `sub` that is an e-mail address is shown as a short keyed hash
(`email:3f0c…`), which tells two people apart and prints neither their address nor its domain.
The key is kept in the state directory (`subject-key`, mode 0600), so a person keeps their name
across restarts.

A refused token (bad signature, wrong audience, expired, ...) leaves one line per source and
`REPEAT_WINDOW_SECONDS`; the repeats are counted and one more line says how many were left out,
so a flood of forged tokens costs the log at most two lines per source and window.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from mcp.server.auth.provider import AccessToken
from starlette.types import Scope

from svc_mcp.core.safe_text import safe_json, visible
from svc_mcp.core.settings import state_directory
from svc_mcp.serve.gateway.token import GatewayTokenFileError, ensure_gateway_token
from svc_mcp.serve.oauth.settings import OAuthSettings

SUBJECT_KEY_FILE = "subject-key"
REPEAT_WINDOW_SECONDS = 15 * 60
MAX_SOURCES = 10_000
PREFIX = "svc-mcp --http:"


def with_subject_key(settings: OAuthSettings) -> OAuthSettings:
    """`settings` with the key that names e-mail subjects, made once and kept in the state
    directory; a key of this process only (and a line saying so) when the file cannot be had."""
    path = state_directory() / SUBJECT_KEY_FILE
    try:
        key, _ = ensure_gateway_token(path)
    except (GatewayTokenFileError, OSError) as exc:
        _write(f"svc-mcp: e-mail subjects are named by a key of this process only ({exc})")
        return replace(settings, subject_key=os.urandom(32))
    return replace(settings, subject_key=key.encode())


def shown_subject(subject: str, key: bytes) -> str:
    """The token's subject as logs and spans show it: an e-mail address as `email:` and twelve
    hex digits of its HMAC under `key` (the same person, the same name), anything else as is."""
    local, at, domain = subject.rpartition("@")
    if not (at and local and domain):
        return subject
    digest = hmac.new(key, subject.lower().encode(), hashlib.sha256).hexdigest()
    return f"email:{digest[:12]}"


def timestamp(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def access_line(
    scope: Scope,
    status: int,
    caller: AccessToken,
    call: tuple[str | None, str | None],
    request_id: str,
) -> None:
    """One line per request naming the caller: subject and client id, never the token."""
    method, tool = call
    fields = {
        "http": f"{scope['method']} {scope['path']}",
        "call": method or "-",
        "tool": tool or "-",
        "sub": caller.subject or "-",
        "client_id": caller.client_id or "-",
    }
    quoted = " ".join(f"{name}={safe_json(value)}" for name, value in fields.items())
    _write(f"{PREFIX} {timestamp()} request_id={request_id} status={status} {quoted}")


def _write(line: str) -> None:
    print(visible(line), file=sys.stderr, flush=True)


class RefusalLog:
    """Refused tokens, one line per source and window, the repeats counted; clock injected."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] = _write,
        window_seconds: float = REPEAT_WINDOW_SECONDS,
    ) -> None:
        self.clock = clock
        self.write = write
        self.window = window_seconds
        # source -> (time of its line, repeats since); a fixed window makes insertion order
        # expiry order.
        self._written: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def refused(self, source: str, reason: str) -> None:
        now = self.clock()
        while self._written:
            first, (written_at, repeats) = next(iter(self._written.items()))
            if written_at > now - self.window:
                break
            del self._written[first]
            if repeats:
                self._line(first, "repeated", f" repeats={repeats}")
        last = self._written.get(source)
        if last is not None:
            self._written[source] = (last[0], last[1] + 1)
            return
        while len(self._written) >= MAX_SOURCES:
            self._written.popitem(last=False)
        self._written[source] = (now, 0)
        self._line(source, reason, "")

    def _line(self, source: str, reason: str, extra: str) -> None:
        self.write(
            f"{PREFIX} {timestamp()} token refused source={safe_json(source)} "
            f"reason={safe_json(reason)}{extra}"
        )
