"""WebAuthn challenges: random, single-use, expiring, and bounded in number.

A challenge is issued for one ceremony (registration or login) and redeemed at most once: redeeming
removes it whether or not the rest of the response verifies, so a captured response cannot be
replayed. Challenges expire CHALLENGE_TTL_SECONDS after they were issued (the clock is injected so
tests move time instead of sleeping). At most MAX_PENDING_CHALLENGES wait at once; issuing another
drops the oldest. Login options pass the login flood limit first, so strangers cannot fill the table
faster than 60 a minute.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from enum import StrEnum

from server_stub.http import Clock

CHALLENGE_TTL_SECONDS = 300
MAX_PENDING_CHALLENGES = 1024
CHALLENGE_BYTES = 32


class Ceremony(StrEnum):
    REGISTER = "register"
    LOGIN = "login"


class ChallengeStore:
    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        ttl_seconds: float = CHALLENGE_TTL_SECONDS,
        max_pending: int = MAX_PENDING_CHALLENGES,
    ) -> None:
        self._clock = clock
        self.ttl_seconds = ttl_seconds
        self._max_pending = max_pending
        # challenge -> (ceremony, expiry); a fixed lifetime makes insertion order expiry order.
        self._pending: OrderedDict[bytes, tuple[Ceremony, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def issue(self, ceremony: Ceremony) -> bytes:
        now = self._clock()
        while self._pending:
            _, (_, expiry) = next(iter(self._pending.items()))
            if now < expiry and len(self._pending) < self._max_pending:
                break
            self._pending.popitem(last=False)
        challenge = secrets.token_bytes(CHALLENGE_BYTES)
        self._pending[challenge] = (ceremony, now + self.ttl_seconds)
        return challenge

    def redeem(self, challenge: bytes, ceremony: Ceremony) -> bool:
        """True when `challenge` was issued for `ceremony` and has not expired; always used up."""
        entry = self._pending.pop(challenge, None)
        return entry is not None and entry[0] is ceremony and self._clock() < entry[1]
