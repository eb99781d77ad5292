"""Security events as one JSON line each on the `server_stub.security` logger.

Only the event name, the client address, a fixed reason and small numbers are ever written: callers
pass no credential, token, cookie or digest, and this module accepts only int, bool and short
fixed strings as extra fields.

`SecurityLog` keeps the log's growth bounded whatever a client sends: of each event that a client
can repeat at will (REPEATABLE: a wrong credential, a refused origin, a spent login share), only the
first per client address and REPEAT_WINDOW_SECONDS is written; the repeats are counted, and once
the window has passed one more line (reason `repeated`) says how many were left out. So one address
adds at most two such lines per event and window, however fast it tries. Every other event
(lockouts, unlocks, logins, ...) is always written; each needs a credential or a lockout first.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict

from server_stub.http import Clock

security_log = logging.getLogger("server_stub.security")
_WARNINGS = frozenset({"lockout", "flood_limit", "lockout_evicted", "challenge_flood"})
REPEATABLE = frozenset(
    {"auth_failure", "origin_refused", "login_limit", "options_limit", "challenge_flood"}
)
"""Events a client can cause at will, with no credential; every other event is always written."""
REPEAT_WINDOW_SECONDS = 15 * 60
MAX_REPEAT_KEYS = 10_000


def security_event(event: str, client: str, reason: str, **fields: int | str) -> None:
    level = logging.WARNING if event in _WARNINGS else logging.INFO
    if not security_log.isEnabledFor(level):
        return
    record: dict[str, object] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "event": event,
        "client": client,
        "reason": reason,
        **fields,
    }
    security_log.log(level, json.dumps(record, separators=(",", ":")))


class SecurityLog:
    """`security_event` with repeats per (event, client) folded; the clock is injected."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        window_seconds: float = REPEAT_WINDOW_SECONDS,
        max_keys: int = MAX_REPEAT_KEYS,
    ) -> None:
        self._clock = clock
        self._window = window_seconds
        self._max_keys = max_keys
        # (event, client) -> (time of the last line written, repeats left out since); a fixed
        # window makes insertion order expiry order.
        self._written: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()

    def event(self, event: str, client: str, reason: str, **fields: int | str) -> None:
        now = self._clock()
        self._forget_before(now - self._window)
        if event not in REPEATABLE:
            security_event(event, client, reason, **fields)
            return
        key = (event, client)
        last = self._written.get(key)
        if last is not None:
            self._written[key] = (last[0], last[1] + 1)
            return
        while len(self._written) >= self._max_keys:
            self._written.popitem(last=False)
        self._written[key] = (now, 0)
        security_event(event, client, reason, **fields)

    def _forget_before(self, cutoff: float) -> None:
        while self._written:
            key, (written_at, repeats) = next(iter(self._written.items()))
            if written_at > cutoff:
                break
            del self._written[key]
            if repeats:
                event, client = key
                security_event(event, client, "repeated", repeats=repeats)
