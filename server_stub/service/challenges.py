"""WebAuthn challenges: random, single-use, expiring, and bounded in number.

A challenge is issued for one ceremony (registration or login) and one holder, and redeemed at most
once: redeeming removes it whether or not the rest of the response verifies, so a captured response
cannot be replayed. The holder is a secret only the asking browser has (its session id for a
registration, a random nonce cookie for a login); only its SHA-256 is kept, and a challenge
presented with another holder's secret fails, so a challenge cannot be used by another browser.
Challenges expire CHALLENGE_TTL_SECONDS after they were issued (the clock is injected so tests move
time instead of sleeping). At most MAX_PENDING_CHALLENGES wait at once; issuing another
drops the oldest. Login options pass the login flood limit first, so strangers cannot fill the table
faster than 60 a minute.
"""

from __future__ import annotations

import hashlib
import hmac
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
        # challenge -> (ceremony, expiry, holder digest); a fixed lifetime makes insertion order
        # expiry order.
        self._pending: OrderedDict[bytes, tuple[Ceremony, float, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def issue(self, ceremony: Ceremony, holder: str) -> bytes:
        now = self._clock()
        while self._pending:
            _, (_, expiry, _) = next(iter(self._pending.items()))
            if now < expiry and len(self._pending) < self._max_pending:
                break
            self._pending.popitem(last=False)
        challenge = secrets.token_bytes(CHALLENGE_BYTES)
        self._pending[challenge] = (ceremony, now + self.ttl_seconds, _digest(holder))
        return challenge

    def redeem(self, challenge: bytes, ceremony: Ceremony, holder: str | None) -> bool:
        """True when `challenge` was issued for `ceremony` to `holder` and has not expired; always
        used up."""
        entry = self._pending.pop(challenge, None)
        if entry is None or holder is None:
            return False
        issued_for, expiry, holder_digest = entry
        return (
            issued_for is ceremony
            and self._clock() < expiry
            and hmac.compare_digest(holder_digest, _digest(holder))
        )


def _digest(holder: str) -> bytes:
    return hashlib.sha256(holder.encode("utf-8", "surrogatepass")).digest()
