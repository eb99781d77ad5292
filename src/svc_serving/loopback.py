"""The one loopback rule, for the gateway's bind checks, the client's cleartext check, the stubs'
settings and Host allowlist, and the peer owner lookup (svc_serving.peer_owner).

Loopback is a literal loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, brackets and an
IPv6 zone allowed) or the name `localhost` in any case, with or without a trailing dot. Nothing
else: a subdomain of `localhost` is resolved over DNS by the system resolver here, so it may reach
another machine.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() in ("localhost", "localhost."):
        return True
    address = literal_address(host)
    return address is not None and address.is_loopback


def literal_address(host: str) -> IPAddress | None:
    """The address `host` spells (brackets and a zone dropped; an IPv4-mapped IPv6 address as its
    IPv4 address, as a dual-stack listener's IPv4 client is), or None for anything else."""
    try:
        address = ipaddress.ip_address(host.strip("[]").partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
