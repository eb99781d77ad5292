"""The in-process brute-force guard (docs/api-service.md).

Per client address: 8 counted failures within a rolling 15 minutes lock the address for 15 minutes.
Across all addresses: at most 60 login POSTs are admitted per rolling minute, at most 10 of them
from one address. Passkey login options (a challenge, no credential) are charged to their sender
only: at most 10 per address and rolling minute, never from the shared 60 (`SenderLimit`). All
take an injected clock (seconds, monotonic by default), so tests move time instead of sleeping.

Memory is bounded: at most `max_tracked` addresses are remembered, counting and locked together.
When a new address must be tracked and the table is full, expired entries go first, then the
counting address whose last failure is oldest, and only when every tracked address is locked, the
lockout closest to its end (logged as `lockout_evicted`).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from server_stub.http import Clock
from server_stub.service.client_ip import is_loopback_key
from server_stub.service.security_log import SecurityLog

MAX_FAILURES = 8
FAILURE_WINDOW_SECONDS = 15 * 60
LOCKOUT_SECONDS = 15 * 60
LOGIN_FLOOD_LIMIT = 60
LOGIN_FLOOD_WINDOW_SECONDS = 60
LOGIN_LIMIT_PER_ADDRESS = 10
MAX_TRACKED_ADDRESSES = 100_000


def whole_seconds_until(deadline: float, now: float) -> int:
    # Rounded first: 900 s plus a float hair must be announced as 900, not 901.
    return max(1, math.ceil(round(deadline - now, 6)))


@dataclass(frozen=True)
class FailureOutcome:
    failures: int
    """Failures of this address inside the window, this one included."""
    retry_after: int | None
    """Set when this failure locked the address: seconds until it is unlocked."""


class BruteForceGuard:
    """Failure counters and lockouts per client address."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        max_failures: int = MAX_FAILURES,
        window_seconds: float = FAILURE_WINDOW_SECONDS,
        lockout_seconds: float = LOCKOUT_SECONDS,
        max_tracked: int = MAX_TRACKED_ADDRESSES,
        log: SecurityLog | None = None,
    ) -> None:
        self._clock = clock
        self.log = log if log is not None else SecurityLog(clock)
        self._max_failures = max_failures
        self._window = window_seconds
        self._lockout = lockout_seconds
        self._max_tracked = max_tracked
        # address -> failure times inside the window, oldest first; ordered by latest failure.
        self._counting: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        # address -> unlock time; the lockout length is fixed, so insertion order is unlock order.
        self._locked: OrderedDict[str, float] = OrderedDict()
        # How many of them are loopback keys (a local user's, or the shared `loopback`).
        self._loopback_locked = 0

    @property
    def has_locks(self) -> bool:
        """False when no address is locked, so callers may skip resolving the client address."""
        return bool(self._locked)

    @property
    def has_loopback_locks(self) -> bool:
        """False when no loopback key is locked, so callers may skip asking the kernel which local
        user owns a loopback peer's socket just to find it unlocked."""
        return self._loopback_locked > 0

    @property
    def tracked(self) -> int:
        return len(self._counting) + len(self._locked)

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until `address` is unlocked, or None when it is not locked."""
        locked_until = self._locked.get(address)
        if locked_until is None:
            return None
        now = self._clock()
        if now >= locked_until:
            self._unlock(address)
            self.log.event("unlock", address, "lockout_expired")
            return None
        return whole_seconds_until(locked_until, now)

    def record_failure(
        self, address: str, *, via: str, reason: str = "wrong_credential"
    ) -> FailureOutcome:
        """Counts one failed credential. Callers refuse locked addresses before checking anything,
        so a failure is never recorded for a locked address and a lockout is never extended."""
        now = self._clock()
        self._forget_expired(now)
        if address in self._locked:
            return FailureOutcome(0, whole_seconds_until(self._locked[address], now))
        history = self._counting.pop(address, ())
        recent = (*(t for t in history if now - t < self._window), now)
        self.log.event("auth_failure", address, reason, via=via, failures=len(recent))
        if len(recent) >= self._max_failures:
            self._make_room()
            locked_until = now + self._lockout
            self._locked[address] = locked_until
            self._loopback_locked += is_loopback_key(address)
            retry_after = whole_seconds_until(locked_until, now)
            self.log.event(
                "lockout",
                address,
                "too_many_failures",
                failures=len(recent),
                retry_after=retry_after,
            )
            return FailureOutcome(len(recent), retry_after)
        if not history:
            self._make_room()
        self._counting[address] = recent
        return FailureOutcome(len(recent), None)

    def record_success(self, address: str) -> None:
        """Clears the address's failure counter. A lockout stays: only time lifts it."""
        self._counting.pop(address, None)

    def failures(self, address: str) -> int:
        now = self._clock()
        return sum(1 for t in self._counting.get(address, ()) if now - t < self._window)

    def _forget_expired(self, now: float) -> None:
        while self._locked:
            address, locked_until = next(iter(self._locked.items()))
            if now < locked_until:
                break
            self._unlock(address)
            self.log.event("unlock", address, "lockout_expired")
        while self._counting:
            address, history = next(iter(self._counting.items()))
            if now - history[-1] < self._window:
                break
            del self._counting[address]

    def _unlock(self, address: str) -> None:
        del self._locked[address]
        self._loopback_locked -= is_loopback_key(address)

    def _make_room(self) -> None:
        while self.tracked >= self._max_tracked:
            if self._counting:
                self._counting.popitem(last=False)
            else:
                address = next(iter(self._locked))
                self._unlock(address)
                self.log.event("lockout_evicted", address, "guard_table_full")


@dataclass(frozen=True)
class LoginRefused:
    retry_after: int
    """Whole seconds until the next attempt would be admitted."""
    by_address: bool
    """True when this address has spent its own share, False when the whole server's budget is
    spent."""


class LoginFloodLimit:
    """At most `limit` login POSTs admitted per rolling `window_seconds`, all addresses together,
    and at most `per_address` of them from one client address (an IPv6 /64), so a single source
    can never spend the whole budget and close logins for everyone.

    Refused attempts are not counted, so the limit admits exactly `limit` per window even under a
    sustained flood, and it reopens as soon as the oldest admitted attempt leaves the window.
    """

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        limit: int = LOGIN_FLOOD_LIMIT,
        per_address: int = LOGIN_LIMIT_PER_ADDRESS,
        window_seconds: float = LOGIN_FLOOD_WINDOW_SECONDS,
        log: SecurityLog | None = None,
    ) -> None:
        self._clock = clock
        self._limit = limit
        self._per_address = per_address
        self._window = window_seconds
        self.log = log if log is not None else SecurityLog(clock)
        # (time, address) of each admitted attempt inside the window, oldest first; at most `limit`.
        self._admitted: deque[tuple[float, str]] = deque()
        self._flooding = False

    def admit(self, address: str) -> LoginRefused | None:
        """None when admitted, else why not and for how long."""
        now = self._clock()
        while self._admitted and now - self._admitted[0][0] >= self._window:
            self._admitted.popleft()
        if len(self._admitted) >= self._limit:
            retry_after = whole_seconds_until(self._admitted[0][0] + self._window, now)
            if not self._flooding:
                self._flooding = True
                self.log.event("flood_limit", address, "login_flood", retry_after=retry_after)
            return LoginRefused(retry_after, by_address=False)
        own = [admitted for admitted, source in self._admitted if source == address]
        if len(own) >= self._per_address:
            retry_after = whole_seconds_until(own[0] + self._window, now)
            self.log.event("login_limit", address, "address_share_spent", retry_after=retry_after)
            return LoginRefused(retry_after, by_address=True)
        self._flooding = False
        self._admitted.append((now, address))
        return None


class SenderLimit:
    """At most `per_address` requests per rolling `window_seconds` from one client address,
    charged to that address alone: however many addresses send, nobody else's allowance moves.
    For requests that present no credential (passkey login options), so they can neither spend
    the shared login budget nor count as failures.

    Memory is bounded: at most `max_tracked` addresses, the least recently seen forgotten first.
    Each address's first refusal in a window is logged (`options_limit`) with how many addresses
    are being refused in that window, which is what a flood from many addresses looks like.
    """

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        per_address: int = LOGIN_LIMIT_PER_ADDRESS,
        window_seconds: float = LOGIN_FLOOD_WINDOW_SECONDS,
        max_tracked: int = MAX_TRACKED_ADDRESSES,
        log: SecurityLog | None = None,
    ) -> None:
        self._clock = clock
        self._per_address = per_address
        self._window = window_seconds
        self._max_tracked = max_tracked
        self.log = log if log is not None else SecurityLog(clock)
        # address -> admitted times inside the window, oldest first; least recently seen first.
        self._admitted: OrderedDict[str, deque[float]] = OrderedDict()
        # address -> time of its first refusal in the current window.
        self._refusing: OrderedDict[str, float] = OrderedDict()

    @property
    def tracked(self) -> int:
        return len(self._admitted)

    def admit(self, address: str) -> LoginRefused | None:
        now = self._clock()
        while self._refusing and now - next(iter(self._refusing.values())) >= self._window:
            self._refusing.popitem(last=False)
        times = self._admitted.pop(address, None) or deque()
        while times and now - times[0] >= self._window:
            times.popleft()
        self._admitted[address] = times
        if len(times) >= self._per_address:
            retry_after = whole_seconds_until(times[0] + self._window, now)
            if address not in self._refusing:
                self._refusing[address] = now
                if len(self._refusing) > self._max_tracked:
                    self._refusing.popitem(last=False)
                self.log.event(
                    "options_limit",
                    address,
                    "address_share_spent",
                    retry_after=retry_after,
                    addresses_refused=len(self._refusing),
                )
            return LoginRefused(retry_after, by_address=True)
        times.append(now)
        while len(self._admitted) > self._max_tracked:
            self._admitted.popitem(last=False)
        return None
