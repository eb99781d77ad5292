"""Which connections a server admits: counts per peer key kept as connections open and close, so
admitting one costs the same with ten or ten thousand open (nothing here iterates connections),
and who gives way at a cap.

At a cap the new connection is not refused while an older one can make way, and closed instead:
first the oldest that has not yet sent a complete request head ("waiting"), then the one that has
rested longest: answered and waiting for its next request, or not reading what it asked for
("resting", as nginx closes idle keep-alive connections to admit new ones). A flood of silent,
half-sent, idle or unread connections then only ever displaces itself, however often each sends
a tiny request, and a client that sends its request at once and reads its answer (every real one)
is served. Only a connection whose request is being worked on is never displaced; the body
deadline (svc_serving.bounded) bounds how long its request takes to arrive.

The peer key is whatever the server passes in (an address, an IPv6 /64, a local user): this table
only counts under it.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

Member = TypeVar("Member", bound=Hashable)

PER_KEY_FULL = "this address or local user has as many connections open as it may; close some first"
TOTAL_FULL = "the server has as many connections open as it takes; retry shortly"


@dataclass(frozen=True)
class Admission(Generic[Member]):
    refusal: str | None
    """Why the new connection is refused (it is no longer counted), or None when admitted."""
    evicted: tuple[Member, ...]
    """Older connections that made way for it (no longer counted): the caller closes them."""


class _Queue(Generic[Member]):
    """Connections in arrival order, in all and per key. OrderedDict, not dict: a dict's first
    entry is found by stepping over the entries deleted before it, an OrderedDict's at once."""

    def __init__(self) -> None:
        self.all: OrderedDict[Member, None] = OrderedDict()
        self.by_key: dict[str, OrderedDict[Member, None]] = {}

    def add(self, member: Member, key: str) -> None:
        self.all[member] = None
        queue = self.by_key.get(key)
        if queue is None:
            queue = self.by_key[key] = OrderedDict()
        queue[member] = None

    def remove(self, member: Member, key: str) -> None:
        if self.all.pop(member, False) is None:
            queue = self.by_key[key]
            del queue[member]
            if not queue:
                del self.by_key[key]

    def oldest(self, key: str | None) -> Member | None:
        queue = self.all if key is None else self.by_key.get(key)
        return next(iter(queue), None) if queue else None


class ConnectionTable(Generic[Member]):
    """The open connections of one server, their count per key, and, oldest first, those that may
    make way: "waiting" and "resting" (the module docstring). Every operation is O(1)."""

    def __init__(self) -> None:
        self._keys: dict[Member, str] = {}
        self._counts: dict[str, int] = {}
        self._waiting: _Queue[Member] = _Queue()
        self._resting: _Queue[Member] = _Queue()

    def __len__(self) -> int:
        return len(self._keys)

    def count(self, key: str) -> int:
        return self._counts.get(key, 0)

    def admit(
        self, member: Member, key: str, *, max_total: int, max_per_key: int
    ) -> Admission[Member]:
        """Counts `member` under `key`, making way at a cap as the module docstring says."""
        self._keys[member] = key
        self._counts[key] = self._counts.get(key, 0) + 1
        self._waiting.add(member, key)
        if self._counts[key] > max_per_key:
            # Making way within the key keeps the total as it was.
            return self._make_way(member, key, PER_KEY_FULL)
        if len(self._keys) > max_total:
            return self._make_way(member, None, TOTAL_FULL)
        return Admission(None, ())

    def _make_way(self, member: Member, key: str | None, refusal: str) -> Admission[Member]:
        oldest = self._waiting.oldest(key)
        if oldest is None or oldest == member:  # `member` is the newest: last when present
            oldest = self._resting.oldest(key)
        if oldest is None:
            self.discard(member)
            return Admission(refusal, ())
        self.discard(oldest)
        return Admission(None, (oldest,))

    def working(self, member: Member) -> None:
        """A request of `member` is being worked on (its head is complete, or it reads its answer
        again): it does not make way for newer connections."""
        key = self._keys.get(member)
        if key is not None:
            self._waiting.remove(member, key)
            self._resting.remove(member, key)

    def resting(self, member: Member) -> None:
        """`member` waits for its next request, or does not read its answer: it makes way, after
        every connection that rested before it."""
        key = self._keys.get(member)
        if key is not None:
            self._waiting.remove(member, key)
            self._resting.remove(member, key)
            self._resting.add(member, key)

    def discard(self, member: Member) -> None:
        """`member` is closed; nothing when it was not counted (refused, evicted, or twice)."""
        key = self._keys.pop(member, None)
        if key is None:
            return
        self._waiting.remove(member, key)
        self._resting.remove(member, key)
        remaining = self._counts[key] - 1
        if remaining:
            self._counts[key] = remaining
        else:
            del self._counts[key]


def address_key(client: tuple[str, int] | None) -> str:
    """The key connections are counted under: the IPv4 address, the IPv6 /64 (one subscriber
    is given a whole /64), or "local" for a Unix socket."""
    if not client:
        return "local"
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return client[0]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
