"""The one loopback rule, for the gateway's bind checks, the client's cleartext check and the
stubs' settings and Host allowlist.

Loopback is a literal loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, brackets allowed)
or the name `localhost` in any case, with or without a trailing dot. Nothing else: a subdomain of
`localhost` is resolved over DNS by the system resolver here, so it may reach another machine.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """A loopback address or the name `localhost` (what a person may write in a URL)."""
    if host.strip("[]").lower() in ("localhost", "localhost."):
        return True
    return is_loopback_address(host)


def is_loopback_address(host: str) -> bool:
    """A literal loopback address only (what a socket reports for a peer); never a name."""
    address = ip_address(host)
    return address is not None and address.is_loopback


def ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `host` writes (brackets and a zone id allowed; IPv4-mapped IPv6 as its IPv4),
    or None when it is not one."""
    try:
        address = ipaddress.ip_address(host.strip("[]").partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # A dual-stack listener sees an IPv4 client as ::ffff:a.b.c.d; its socket is IPv4.
        return address.ipv4_mapped
    return address
