"""Which connections a server admits: counts per peer key kept as connections open and close, so
admitting one costs the same with ten or ten thousand open (nothing here iterates connections),
and who gives way at a cap.

At a cap the new connection is not refused while an older one can make way: first the oldest
connection that has not yet sent a complete request head, then the oldest that sits answered
between requests (idle keep-alive, as nginx closes at its cap). A flood of silent, half-sent or
keep-alive connections then only ever displaces itself, and a client that sends its request at
once (every real one) is served. Only a connection whose request is being read or answered is
never displaced; the body deadline (svc_serving.bounded) bounds how long that lasts.

The peer key is whatever the server passes in (`peer_key`: an address, an IPv6 /64, or, on
loopback, the local user who owns the peer's socket): this table only counts under it.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from svc_serving.loopback import ip_address
from svc_serving.peer_owner import loopback_user

Member = TypeVar("Member", bound=Hashable)

PER_KEY_FULL = "this address has as many connections open as it may; close some first"
TOTAL_FULL = "the server has as many connections open as it takes; retry shortly"


@dataclass(frozen=True)
class Admission(Generic[Member]):
    refusal: str | None
    """Why the new connection is refused (it is no longer counted), or None when admitted."""
    evicted: tuple[Member, ...]
    """Older connections that made way for it (no longer counted): the caller closes them."""


class _Oldest(Generic[Member]):
    """Members in the order they joined, overall and per key. Every operation is O(1).
    OrderedDict, not dict: a dict's first entry is found by stepping over the entries deleted
    before it, an OrderedDict's at once."""

    def __init__(self) -> None:
        self._all: OrderedDict[Member, None] = OrderedDict()
        self._by_key: dict[str, OrderedDict[Member, None]] = {}

    def add(self, member: Member, key: str) -> None:
        self._all[member] = None
        members = self._by_key.get(key)
        if members is None:
            members = self._by_key[key] = OrderedDict()
        members[member] = None

    def remove(self, member: Member, key: str) -> None:
        if self._all.pop(member, False) is None:
            members = self._by_key[key]
            del members[member]
            if not members:
                del self._by_key[key]

    def oldest(self, key: str | None) -> Member | None:
        members = self._all if key is None else self._by_key.get(key)
        return next(iter(members), None) if members else None


class ConnectionTable(Generic[Member]):
    """The open connections of one server, their count per key, and, oldest first, those that have
    not yet sent a complete request head ("waiting") and those answered and idle between
    requests. Every operation is O(1)."""

    def __init__(self) -> None:
        self._keys: dict[Member, str] = {}
        self._counts: dict[str, int] = {}
        self._waiting: _Oldest[Member] = _Oldest()
        self._idle: _Oldest[Member] = _Oldest()

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
            oldest = self._idle.oldest(key)
        if oldest is None:
            self.discard(member)
            return Admission(refusal, ())
        self.discard(oldest)
        return Admission(None, (oldest,))

    def sent_a_request(self, member: Member) -> None:
        """`member` sent a complete request head: it does not give way while it is answered."""
        key = self._keys.get(member)
        if key is not None:
            self._waiting.remove(member, key)
            self._idle.remove(member, key)

    def idle(self, member: Member) -> None:
        """`member` was answered and waits for its next request: it gives way again."""
        key = self._keys.get(member)
        if key is not None:
            self._idle.remove(member, key)
            self._idle.add(member, key)

    def discard(self, member: Member) -> None:
        """`member` is closed; nothing when it was not counted (refused, evicted, or twice)."""
        key = self._keys.pop(member, None)
        if key is None:
            return
        self._waiting.remove(member, key)
        self._idle.remove(member, key)
        remaining = self._counts[key] - 1
        if remaining:
            self._counts[key] = remaining
        else:
            del self._counts[key]


def peer_key(client: tuple[str, int] | None, loopback_uid: int | None = None) -> str:
    """The key connections are counted under: the IPv4 address, the IPv6 /64 (one subscriber
    is given a whole /64), "local" for a Unix socket, and on loopback (the whole range, which
    every local user reaches) the local user who owns the peer's socket: `loopback:uid=N`, or
    `loopback` when the kernel could not say."""
    if not client:
        return "local"
    address = ip_address(client[0])
    if address is None:
        return client[0]
    if address.is_loopback:
        return loopback_user(loopback_uid)
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
