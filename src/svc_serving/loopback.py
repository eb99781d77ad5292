"""The one loopback rule, for the gateway's bind checks, the client's cleartext check and the
stubs' settings and Host allowlist.

Loopback is a literal loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, brackets allowed)
or the name `localhost` in any case, with or without a trailing dot. Nothing else: a subdomain of
`localhost` is resolved over DNS by the system resolver here, so it may reach another machine.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    name = host.strip("[]")
    if name.lower() in ("localhost", "localhost."):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback
