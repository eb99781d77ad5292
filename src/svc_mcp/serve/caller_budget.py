"""A budget per person at the gateway (issue 42): one person's flood of calls cannot starve
another's.

With OAuth on, every tool call is counted against its caller's subject (the token's `sub`): at
most `IN_FLIGHT` of one person's calls run at once (half of a backend's request slots, so the
others always find slots free), and over time at most `RATE` a second with bursts of `BURST` (a
token bucket, read from an injected clock; `SVC_MCP_PERSON_CALLS_PER_SECOND` sets `RATE`, 0 turns
the budget off). A call beyond either is answered at once with the
`rate_limited` kind and `retry_after`, and sends nothing to a backend. Callers without OAuth
(stdio, the static token alone) are one person and have no budget.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from svc_mcp.core.errors import Misconfigured, RateLimited
from svc_mcp.core.settings import PERSON_RATE_VARIABLE
from svc_mcp.serve.caller import CALLER

IN_FLIGHT = 8
RATE = 10.0
BURST = 40
MAX_PEOPLE = 10_000
"""Buckets kept at most; beyond, the idle full ones are dropped (they hold nothing)."""

Clock = Callable[[], float]


@dataclass
class _Bucket:
    tokens: float
    at: float
    in_flight: int = 0


class CallerBudgets:
    """`admit` before a call (None: go ahead, and `release` after; else the refusal)."""

    def __init__(
        self,
        in_flight: int = IN_FLIGHT,
        rate: float = RATE,
        burst: int = BURST,
        clock: Clock = time.monotonic,
    ) -> None:
        self.in_flight = in_flight
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def admit(self, person: str) -> RateLimited | None:
        now = self.clock()
        bucket = self._buckets.get(person)
        if bucket is None:
            self._make_room()
            bucket = self._buckets[person] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.in_flight >= self.in_flight:
            return RateLimited(
                f"you have {bucket.in_flight} calls running at this gateway, as many as it runs "
                "for one person at once: retry after 1 second",
                retry_after=1,
            )
        if bucket.tokens < 1:
            wait = max(1, math.ceil((1 - bucket.tokens) / self.rate))
            return RateLimited(
                f"you have made more calls than this gateway takes from one person ({self.rate:g} "
                f"a second, {self.burst} in a burst): retry after {wait} seconds",
                retry_after=wait,
            )
        bucket.tokens -= 1
        bucket.in_flight += 1
        return None

    def release(self, person: str) -> None:
        bucket = self._buckets.get(person)
        if bucket is not None and bucket.in_flight > 0:
            bucket.in_flight -= 1

    def _make_room(self) -> None:
        if len(self._buckets) < MAX_PEOPLE:
            return
        now = self.clock()
        for person, bucket in list(self._buckets.items()):
            full = bucket.tokens + (now - bucket.at) * self.rate >= self.burst
            if bucket.in_flight == 0 and full:
                del self._buckets[person]


def person_budgets(environ: Mapping[str, str] | None = None) -> CallerBudgets | None:
    """The budgets `SVC_MCP_PERSON_CALLS_PER_SECOND` sets (default `RATE`, bursts of four times
    it); None when it is 0 (no budget: a benchmark, a gateway behind a limiter of its own)."""
    text = (os.environ if environ is None else environ).get(PERSON_RATE_VARIABLE, "").strip()
    try:
        rate = float(text) if text else RATE
    except ValueError:
        rate = math.nan
    if not (math.isfinite(rate) and 0 <= rate <= 100_000):
        raise Misconfigured(
            f"{PERSON_RATE_VARIABLE} must be a number of calls a second, 0 for none"
        )
    return CallerBudgets(rate=rate, burst=max(1, math.ceil(rate * 4))) if rate else None


def caller_key() -> str | None:
    """Whom the call being served counts against: the token's subject (None without OAuth)."""
    caller = CALLER.get()
    if caller is None:
        return None
    subject = (caller.claims or {}).get("sub", caller.subject)
    return f"{caller.client_id}\n" if not subject else str(subject)
