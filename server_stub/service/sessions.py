"""Server-side browser sessions behind the `svc_session` cookie.

A session id is `secrets.token_urlsafe(32)` (256 random bits). The store keeps only the SHA-256 of
each id, so a memory dump does not hand out live cookies. Sessions last SESSION_LIFETIME_SECONDS
from login (absolute, not sliding); at most MAX_SESSIONS live at once, the oldest dropped first.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict

from server_stub.http import Clock

SESSION_COOKIE = "svc_session"
SESSION_LIFETIME_SECONDS = 12 * 60 * 60
MAX_SESSIONS = 10_000
MAX_SESSION_ID_LENGTH = 128


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()


class SessionStore:
    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        lifetime_seconds: float = SESSION_LIFETIME_SECONDS,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self._clock = clock
        self.lifetime_seconds = lifetime_seconds
        self._max_sessions = max_sessions
        # digest -> expiry; the lifetime is fixed, so insertion order is expiry order.
        self._expiry: OrderedDict[bytes, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._expiry)

    def create(self) -> str:
        now = self._clock()
        self._drop_expired(now)
        while len(self._expiry) >= self._max_sessions:
            self._expiry.popitem(last=False)
        session_id = secrets.token_urlsafe(32)
        self._expiry[_digest(session_id)] = now + self.lifetime_seconds
        return session_id

    def is_valid(self, session_id: str) -> bool:
        if not session_id or len(session_id) > MAX_SESSION_ID_LENGTH:
            return False
        expiry = self._expiry.get(_digest(session_id))
        return expiry is not None and self._clock() < expiry

    def end(self, session_id: str) -> bool:
        """Forgets the session; True when it was live."""
        if len(session_id) > MAX_SESSION_ID_LENGTH:
            return False
        expiry = self._expiry.pop(_digest(session_id), None)
        return expiry is not None and self._clock() < expiry

    def _drop_expired(self, now: float) -> None:
        while self._expiry:
            digest, expiry = next(iter(self._expiry.items()))
            if now < expiry:
                break
            del self._expiry[digest]
