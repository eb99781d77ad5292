"""WebAuthn challenges: random, single-use, expiring, bounded, and out of strangers' reach.

A challenge is issued for one ceremony (registration or login) and one holder, and redeemed at most
once: redeeming removes it whether or not the rest of the response verifies, so a captured response
cannot be replayed. The holder is a secret only the asking browser has (its session id for a
registration, a random nonce cookie for a login); only its SHA-256 is kept, and a challenge
presented with another holder's secret fails, so a challenge cannot be used by another browser.
Challenges expire CHALLENGE_TTL_SECONDS after they were issued (the clock is injected so tests move
time instead of sleeping).

Nobody can push out a challenge somebody else is waiting on:
- registrations have a table of their own, one slot per browser session (a new registration
  replaces only that session's previous one), and need a signed-in session to get one;
- a login challenge is charged to its sender (the guard's client key: an address, an IPv6 /64, or
  a loopback peer's local user): at most PER_SENDER_CHALLENGES wait per sender, a sender's next one
  replacing its own oldest. When all MAX_PENDING_CHALLENGES slots are taken, the sender holding the
  most gives up its oldest, but only when it holds more than the asker will: a sender waiting on
  one challenge keeps it. When every sender holds as few as the asker would, the asker is refused
  (`ChallengeTableFull`, 429 with the seconds until the oldest challenge expires) instead.
So filling the table takes MAX_PENDING_CHALLENGES / PER_SENDER_CHALLENGES senders (each also held
to 10 options a minute by the guard's `SenderLimit`), and even then no pending login is lost. Each
full-table event is written to the security log (`challenge_flood`, folded per sender).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum, StrEnum

from server_stub.http import Clock
from server_stub.service.security_log import SecurityLog

CHALLENGE_TTL_SECONDS = 300
MAX_PENDING_CHALLENGES = 1024
PER_SENDER_CHALLENGES = 4
CHALLENGE_BYTES = 32


class Ceremony(StrEnum):
    REGISTER = "register"
    LOGIN = "login"


class Redeemed(Enum):
    VALID = "valid"
    MISSING = "missing"
    """Unknown, expired or used: nothing presented could verify, so no failed credential."""
    FOREIGN = "foreign"
    """Live, but issued to another holder (another browser's challenge, or no nonce at all)."""


class ChallengeTableFull(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__("too many passkey logins are pending")
        self.retry_after = retry_after


@dataclass(frozen=True)
class _Login:
    expiry: float
    holder: bytes
    sender: str


class ChallengeStore:
    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        ttl_seconds: float = CHALLENGE_TTL_SECONDS,
        max_pending: int = MAX_PENDING_CHALLENGES,
        per_sender: int = PER_SENDER_CHALLENGES,
        log: SecurityLog | None = None,
    ) -> None:
        self._clock = clock
        self.ttl_seconds = ttl_seconds
        self._max_pending = max_pending
        self._per_sender = per_sender
        self.log = log if log is not None else SecurityLog(clock)
        # Login challenges; a fixed lifetime makes insertion order expiry order.
        self._logins: OrderedDict[bytes, _Login] = OrderedDict()
        # sender -> its pending login challenges, oldest first.
        self._by_sender: dict[str, OrderedDict[bytes, None]] = {}
        # how many pending -> the senders holding that many, in the order they got there.
        self._holding: list[dict[str, None]] = [{} for _ in range(per_sender + 1)]
        # session digest -> (challenge, expiry): one pending registration per session.
        self._registrations: OrderedDict[bytes, tuple[bytes, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._logins) + len(self._registrations)

    def pending_for(self, sender: str) -> int:
        return len(self._by_sender.get(sender, ()))

    def issue_registration(self, session_id: str) -> bytes:
        now = self._clock()
        holder = _digest(session_id)
        self._registrations.pop(holder, None)
        while self._registrations and (
            len(self._registrations) >= self._max_pending
            or next(iter(self._registrations.values()))[1] <= now
        ):
            self._registrations.popitem(last=False)
        challenge = secrets.token_bytes(CHALLENGE_BYTES)
        self._registrations[holder] = (challenge, now + self.ttl_seconds)
        return challenge

    def issue_login(self, holder: str, sender: str) -> bytes:
        """A login challenge for `holder`, charged to `sender`; raises ChallengeTableFull."""
        now = self._clock()
        self._forget_expired(now)
        own = self._by_sender.get(sender)
        if own is not None and len(own) >= self._per_sender:
            self._drop(next(iter(own)))
        elif len(self._logins) >= self._max_pending:
            self._make_room(sender, now)
        challenge = secrets.token_bytes(CHALLENGE_BYTES)
        self._logins[challenge] = _Login(now + self.ttl_seconds, _digest(holder), sender)
        self._move(sender, +1)
        self._by_sender.setdefault(sender, OrderedDict())[challenge] = None
        return challenge

    def redeem(self, challenge: bytes, ceremony: Ceremony, holder: str | None) -> Redeemed:
        """Whether `challenge` was issued for `ceremony` to `holder` and is live; always used up."""
        now = self._clock()
        if ceremony is Ceremony.REGISTER:
            slot = self._registrations.pop(_digest(holder), None) if holder else None
            if slot is None or now >= slot[1] or not hmac.compare_digest(slot[0], challenge):
                return Redeemed.MISSING
            return Redeemed.VALID
        entry = self._logins.get(challenge)
        if entry is None:
            return Redeemed.MISSING
        self._drop(challenge)
        if now >= entry.expiry:
            return Redeemed.MISSING
        if holder is None or not hmac.compare_digest(entry.holder, _digest(holder)):
            return Redeemed.FOREIGN
        return Redeemed.VALID

    def _make_room(self, asker: str, now: float) -> None:
        largest = next(count for count in range(self._per_sender, -1, -1) if self._holding[count])
        if largest <= self.pending_for(asker) + 1:
            oldest = next(iter(self._logins.values()))
            retry_after = max(1, math.ceil(oldest.expiry - now))
            self.log.event(
                "challenge_flood",
                asker,
                "challenge_table_full",
                action="refused",
                pending=len(self._logins),
                senders=len(self._by_sender),
            )
            raise ChallengeTableFull(retry_after)
        donor = next(iter(self._holding[largest]))
        self.log.event(
            "challenge_flood",
            asker,
            "challenge_table_full",
            action="took_from_the_largest_holder",
            pending=len(self._logins),
            senders=len(self._by_sender),
        )
        self._drop(next(iter(self._by_sender[donor])))

    def _forget_expired(self, now: float) -> None:
        while self._logins:
            challenge, entry = next(iter(self._logins.items()))
            if now < entry.expiry:
                break
            self._drop(challenge)

    def _drop(self, challenge: bytes) -> None:
        entry = self._logins.pop(challenge)
        self._move(entry.sender, -1)
        own = self._by_sender[entry.sender]
        del own[challenge]
        if not own:
            del self._by_sender[entry.sender]

    def _move(self, sender: str, by: int) -> None:
        count = self.pending_for(sender)
        self._holding[count].pop(sender, None)
        if count + by:
            self._holding[count + by][sender] = None


def _digest(holder: str) -> bytes:
    return hashlib.sha256(holder.encode("utf-8", "surrogatepass")).digest()
