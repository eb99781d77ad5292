"""The authorization server's signing keys, as the gateway's token verifier holds them.

One task (`KeySet.run`, started with the gateway) reads the issuer's metadata and key set
(svc_mcp.serve.oauth.discovery: a deadline and a size cap per document) at start, every
`max_age` seconds, and when a request brings a key id the set lacks. No request waits on the
network for a key that is held, and none holds a lock: a read in progress blocks no one.

A key id the set lacks waits for the next read, at most `patience` seconds. Reads start at least
`spacing` seconds apart whoever asks, so a stream of made-up key ids costs the authorization
server one small read per spacing, and a real new key (a rotation) waits about that long
whatever was asked just before it. An id a read did not find is refused at once for `absent`
seconds (bounded memory). While the issuer cannot be read (down, slow, stopped), a key id the
set lacks raises `IssuerUnavailable`: the token may well be valid, and the gateway answers 503.
A failed read does not delay the next: the first one after the issuer answers again succeeds.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import jwt

from svc_mcp.core.safe_text import visible
from svc_mcp.serve.oauth.discovery import DiscoveryFailed, discover, fetch_json

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
ABSENT_KIDS = 4096


class IssuerUnavailable(Exception):
    """The issuer's metadata or keys cannot be read now: not the token's fault."""


@dataclass(frozen=True)
class KeyTimes:
    spacing: float = 2.0
    """The least time between two reads' starts."""
    max_age: float = 300.0
    """A key set older than this is read again: a key the issuer withdrew stops working."""
    retry: float = 10.0
    """After a failed read, the next one even if no request asks for it."""
    absent: float = 5.0
    """How long a key id a read did not find is refused without waiting for another."""
    patience: float = 5.0
    """How long a request waits for a read before its answer (503 if the read did not end)."""


def _announce(line: str) -> None:
    print(visible(f"svc-mcp: {line}"), file=sys.stderr, flush=True)


class KeySet:
    def __init__(
        self,
        issuer: str,
        http: httpx.AsyncClient,
        clock: Clock,
        times: KeyTimes = KeyTimes(),
        sleep: Sleep = anyio.sleep,
        announce: Callable[[str], None] = _announce,
    ) -> None:
        self.issuer = issuer
        self.http = http
        self.clock = clock
        self.times = times
        self.sleep = sleep
        self.announce = announce
        self.keys: dict[str, jwt.PyJWK] = {}
        self.metadata: dict[str, Any] | None = None
        self.fetched_at = -math.inf
        self.problem: str | None = "not read yet"
        """Why the last read failed; None when it succeeded."""
        self.reads = 0
        self._started_at = -math.inf
        self._wanted = anyio.Event()
        self._next = anyio.Event()
        """Set when the next read to start has ended."""
        self._reading: anyio.Event | None = None
        """Set when the read under way has ended; None between reads."""
        self._absent: OrderedDict[str, float] = OrderedDict()

    def held(self, kid: str) -> jwt.PyJWK | None:
        """The key if the set holds it, without waiting; a set past its age is read again."""
        if self.clock() - self.fetched_at >= self.times.max_age:
            self._wanted.set()
        return self.keys.get(kid)

    async def key(self, kid: str) -> jwt.PyJWK | None:
        """The key `kid` names, None when the issuer does not publish it; `IssuerUnavailable`
        when that cannot be told now."""
        if (key := self.held(kid)) is not None:
            return key
        found_absent = self._absent.get(kid)
        if found_absent is not None and self.clock() - found_absent < self.times.absent:
            return None
        ended = False
        with anyio.move_on_after(self.times.patience):
            if (reading := self._reading) is not None:
                # A read under way (the one at start, say) may bring it: no need for the next.
                await reading.wait()
                if (key := self.keys.get(kid)) is not None:
                    return key
            await self._ask().wait()
            ended = True
        if not ended:
            raise IssuerUnavailable(f"no key set from {self.issuer} within the wait")
        if (key := self.keys.get(kid)) is not None:
            return key
        if self.problem is not None:
            raise IssuerUnavailable(self.problem)
        self._absent[kid] = self.clock()
        self._absent.move_to_end(kid)
        while len(self._absent) > ABSENT_KIDS:
            self._absent.popitem(last=False)
        return None

    async def next_read(self) -> bool:
        """Asks for a read that starts from now and waits for it, at most `patience`; whether
        it ended."""
        done = self._ask()
        with anyio.move_on_after(self.times.patience):
            await done.wait()
        return done.is_set()

    def _ask(self) -> anyio.Event:
        """Asks for a read that starts from now; the event set when it has ended."""
        self._wanted.set()
        return self._next

    async def run(self) -> None:
        """Reads the set at start, then whenever asked or due, `spacing` apart at least."""
        while True:
            due = self.times.retry if self.problem is not None else self.times.max_age
            with anyio.move_on_after(max(0.0, self._started_at + due - self.clock())):
                await self._wanted.wait()
            wait = self._started_at + self.times.spacing - self.clock()
            if wait > 0:
                await self.sleep(wait)
            done, self._next, self._wanted = self._next, anyio.Event(), anyio.Event()
            self._started_at, self._reading = self.clock(), done
            await self._read()
            self._reading = None
            done.set()

    async def _read(self) -> None:
        """On a failure the kept keys stay (an outage does not lock out tokens of known keys)."""
        self.reads += 1
        try:
            if self.metadata is None:
                self.metadata = await discover(self.issuer, self.http)
            keys = signing_keys(await fetch_json(self.http, self.metadata["jwks_uri"]))
        except Exception as exc:  # a failed read of any kind; the reader lives on
            problem = str(exc) if isinstance(exc, DiscoveryFailed) else type(exc).__name__
            if self.problem is None or self.reads == 1:
                self.announce(
                    f"the OAuth issuer {self.issuer} cannot be read ({problem}): tokens whose key "
                    "is not known yet are answered 503 with Retry-After until it answers; retrying"
                )
            self.problem = problem
            return
        first = self.reads == 1
        if self.problem is not None and not first:
            self.announce(f"the OAuth issuer {self.issuer} answers again ({len(keys)} keys)")
        elif first:
            self.announce(f"OAuth: {len(keys)} signing keys read from {self.issuer}")
        self.keys, self.fetched_at, self.problem = keys, self.clock(), None


def signing_keys(document: Any) -> dict[str, jwt.PyJWK]:
    """The keys with a `kid` that PyJWT can use; `DiscoveryFailed` when none is."""
    if not isinstance(document, dict):
        raise DiscoveryFailed("the key set is not a JSON object")
    try:
        found = jwt.PyJWKSet.from_dict(document)
    except (jwt.PyJWKSetError, jwt.PyJWKError, ValueError, TypeError):
        raise DiscoveryFailed("the key set holds no usable key") from None
    keys = {key.key_id: key for key in found.keys if isinstance(key.key_id, str)}
    if not keys:
        raise DiscoveryFailed("the key set holds no key with a kid")
    return keys
