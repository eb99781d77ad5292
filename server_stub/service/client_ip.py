"""Which address a request is counted under by the brute-force guard (docs/api-service.md).

With proxy trust off, only the TCP peer counts and `X-Forwarded-For` is ignored entirely. With it
on, the header counts only from a peer among the trusted proxies (SERVICE_TRUSTED_PROXY_ADDRESSES;
every peer when none are configured), and all `X-Forwarded-For` headers are joined into one append
chain and the entry `hops` from the right is used: entries left of it may be written by anyone and
are ignored. A missing or too short
chain, or a selected entry that is not an IP address, falls back to the peer (the proxy), so those
clients share one bucket: fail closed.

The bucket of an IPv4 address is the address; the bucket of an IPv6 address is its /64, since one
subscriber is routinely given a whole /64 and could otherwise spread guesses over 2**64 buckets.
IPv4-mapped IPv6 addresses count as their IPv4 address.

Loopback is not the operator: every local user, every SSH-tunnel client and the gateway arrive
from 127.0.0.1. So the whole loopback range (127.0.0.0/8 and ::1) is one address, and a loopback
peer is keyed by the local user that owns its socket (`loopback:uid=N`, asked of the kernel by
`svc_serving.peer_owner`), so one user's wrong tokens lock only that user. When the owner cannot
be known (the peer's socket is already gone), or for a loopback address a proxy forwarded, the key
is `loopback`: one bucket for all of them, never a guessed user.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterable

FORWARDED_FOR = b"x-forwarded-for"
LOOPBACK = "loopback"
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_networks(value: str) -> tuple[IPNetwork, ...]:
    """The networks of a comma-separated list of addresses and CIDRs; ValueError names a bad
    entry's position, never more of it."""
    networks = []
    for position, entry in enumerate((e.strip() for e in value.split(",") if e.strip()), 1):
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
        except ValueError:
            raise ValueError(
                f"entry {position} is not an IP address or CIDR network (e.g. 10.0.0.5, "
                "10.0.0.0/8, ::1)"
            ) from None
    return tuple(networks)


@functools.lru_cache(maxsize=4096)
def normalize_address(entry: str) -> str | None:
    """One canonical text per address, or None when `entry` is not one.

    Accepts `1.2.3.4`, `1.2.3.4:5678`, `::1`, `[::1]`, `[::1]:443`, IPv4-mapped IPv6 (reported as
    IPv4) and zone ids (dropped, so one host cannot spread itself over many buckets).
    """
    text = entry.strip()
    if text.startswith("["):
        closing = text.find("]")
        if closing == -1 or not _is_port_suffix(text[closing + 1 :]):
            return None
        text = text[1:closing]
    elif text.count(":") == 1:
        text, _, port = text.partition(":")
        if not port.isascii() or not port.isdigit():
            return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        if address.scope_id is not None:
            address = ipaddress.IPv6Address(int(address))
    return str(address)


@functools.lru_cache(maxsize=4096)
def bucket_key(address: str) -> str:
    """The guard's key for a normalised address: IPv4 as it is, IPv6 as its /64 network, the
    loopback range as one."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.is_loopback:
        return LOOPBACK
    if parsed.version == 4:
        return address
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def is_loopback_key(key: str) -> bool:
    return key == LOOPBACK or key.startswith(f"{LOOPBACK}:")


def loopback_user(uid: int | None) -> str:
    """The key of a loopback peer whose socket `uid` owns (None: not known)."""
    return LOOPBACK if uid is None else f"{LOOPBACK}:uid={uid}"


def _is_port_suffix(rest: str) -> bool:
    if not rest:
        return True
    return rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()


def forwarded_chain(header_values: Iterable[str]) -> list[str]:
    """All `X-Forwarded-For` values as one list, in order; empty elements are ignored (RFC 9110)."""
    return [item for value in header_values for item in value.split(",") if item.strip()]


def client_address(
    peer: str | None,
    forwarded_for: Iterable[str],
    *,
    trust_proxy: bool,
    hops: int,
    trusted_proxies: tuple[IPNetwork, ...] | None = None,
    loopback_owner: Callable[[], int | None] | None = None,
) -> str:
    """The guard's bucket key for one request. `loopback_owner` names the uid that owns the
    peer's socket; it is asked only when the peer is on loopback and its key is used."""
    if trust_proxy and _is_trusted(peer, trusted_proxies):
        chain = forwarded_chain(forwarded_for)
        selected = normalize_address(chain[-hops]) if 1 <= hops <= len(chain) else None
        if selected is not None:
            return bucket_key(selected)
    return _peer_key(peer, loopback_owner)


def _is_trusted(peer: str | None, trusted_proxies: tuple[IPNetwork, ...] | None) -> bool:
    if trusted_proxies is None:
        return True
    address = normalize_address(peer) if peer else None
    if address is None:
        return False
    parsed = ipaddress.ip_address(address)
    return any(parsed in network for network in trusted_proxies)


def _peer_key(peer: str | None, loopback_owner: Callable[[], int | None] | None) -> str:
    if not peer:
        return "unknown"
    # The peer comes from the socket, not from the client, so a non-IP value (a test client's
    # name, a unix socket) is still a fair, stable key.
    address = normalize_address(peer)
    if address is None:
        return peer
    key = bucket_key(address)
    if key == LOOPBACK and loopback_owner is not None:
        return loopback_user(loopback_owner())
    return key


def forwarded_for_values(raw_headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    return [value.decode("latin-1") for key, value in raw_headers if key == FORWARDED_FOR]
