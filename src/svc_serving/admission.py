"""Which connections a server admits: counts per peer key kept as connections open and close, so
admitting one costs the same with ten or ten thousand open (nothing here iterates connections),
and who gives way at a cap.

At a cap the new connection is not refused while an older one has not yet sent a complete request
head: the oldest such connection is closed instead. A flood of silent or half-sent connections then
only ever displaces itself, and a client that sends its request at once (every real one) is served.
Connections that are being answered or sit between requests are never displaced; the idle and body
deadlines (svc_serving.bounded) bound how long those last.

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

PER_KEY_FULL = "this address has as many connections open as it may; close some first"
TOTAL_FULL = "the server has as many connections open as it takes; retry shortly"


@dataclass(frozen=True)
class Admission(Generic[Member]):
    refusal: str | None
    """Why the new connection is refused (it is no longer counted), or None when admitted."""
    evicted: tuple[Member, ...]
    """Older connections that made way for it (no longer counted): the caller closes them."""


class ConnectionTable(Generic[Member]):
    """The open connections of one server, their count per key, and, oldest first, those that have
    not yet sent a complete request head ("waiting"). Every operation is O(1)."""

    def __init__(self) -> None:
        self._keys: dict[Member, str] = {}
        self._counts: dict[str, int] = {}
        # Oldest first. OrderedDict, not dict: a dict's first entry is found by stepping over the
        # entries deleted before it, an OrderedDict's at once.
        self._waiting: OrderedDict[Member, None] = OrderedDict()
        self._waiting_by_key: dict[str, OrderedDict[Member, None]] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def count(self, key: str) -> int:
        return self._counts.get(key, 0)

    def admit(
        self, member: Member, key: str, *, max_total: int, max_per_key: int
    ) -> Admission[Member]:
        """Counts `member` under `key`, making way at a cap as the module docstring says."""
        self._add(member, key)
        if self._counts[key] > max_per_key:
            # Making way within the key keeps the total as it was.
            return self._make_way(member, self._waiting_by_key.get(key), PER_KEY_FULL)
        if len(self._keys) > max_total:
            return self._make_way(member, self._waiting, TOTAL_FULL)
        return Admission(None, ())

    def _make_way(
        self, member: Member, waiting: OrderedDict[Member, None] | None, refusal: str
    ) -> Admission[Member]:
        oldest = next(iter(waiting), None) if waiting else None
        if oldest is None or oldest == member:  # `member` is the newest: last when present
            self.discard(member)
            return Admission(refusal, ())
        self.discard(oldest)
        return Admission(None, (oldest,))

    def sent_a_request(self, member: Member) -> None:
        """`member` sent a complete request head: it no longer gives way to newer connections."""
        key = self._keys.get(member)
        if key is not None:
            self._forget_waiting(member, key)

    def discard(self, member: Member) -> None:
        """`member` is closed; nothing when it was not counted (refused, evicted, or twice)."""
        key = self._keys.pop(member, None)
        if key is None:
            return
        self._forget_waiting(member, key)
        remaining = self._counts[key] - 1
        if remaining:
            self._counts[key] = remaining
        else:
            del self._counts[key]

    def _add(self, member: Member, key: str) -> None:
        self._keys[member] = key
        self._counts[key] = self._counts.get(key, 0) + 1
        self._waiting[member] = None
        waiting = self._waiting_by_key.get(key)
        if waiting is None:
            waiting = self._waiting_by_key[key] = OrderedDict()
        waiting[member] = None

    def _forget_waiting(self, member: Member, key: str) -> None:
        if self._waiting.pop(member, False) is None:
            waiting = self._waiting_by_key[key]
            del waiting[member]
            if not waiting:
                del self._waiting_by_key[key]


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
