"""Security events as one JSON line each on the `server_stub.security` logger.

Only the event name, the client address, a fixed reason and small numbers are ever written: callers
pass no credential, token, cookie or digest, and this module accepts only int, bool and short
fixed strings as extra fields.
"""

from __future__ import annotations

import json
import logging
import time

security_log = logging.getLogger("server_stub.security")
_WARNINGS = frozenset({"lockout", "flood_limit", "lockout_evicted"})


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
