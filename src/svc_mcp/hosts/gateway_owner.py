"""Whose gateway a URL reaches: the local user that owns the socket listening on its loopback port,
as the kernel says in /proc/net/tcp and tcp6. The gateway's kept token goes only to a gateway this
user runs: a port a project's file names may be any local user's listener."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

_LISTEN = "0A"
_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def listener_uids(url: str, tables: tuple[Path, ...] = _TABLES) -> set[int] | None:
    """The uids owning a socket that listens where `url` connects: an http(s) URL on a loopback
    address or `localhost`; None when the URL is not one, or the kernel's tables cannot be read
    (not Linux)."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    addresses = _loopback_addresses(host)
    if parts.scheme not in ("http", "https") or not addresses:
        return None
    uids: set[int] = set()
    for table in tables:
        try:
            lines = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            return None if table == tables[0] else uids
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != _LISTEN:
                continue
            address, _, port_hex = fields[1].partition(":")
            if int(port_hex, 16) == port and _reaches(_decode(address), addresses):
                uids.add(int(fields[7]))
    return uids


def runs_here(url: str) -> bool:
    """Whether the only listener `url` reaches is this user's."""
    uids = listener_uids(url)
    return bool(uids) and uids == {os.getuid()}


def _loopback_addresses(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    if host == "localhost":
        return {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return set()
    return {address} if address.is_loopback else set()


def _decode(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp{,6} writes it: 32-bit words in the host's byte order."""
    raw = bytes.fromhex(text)
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    ordered = b"".join(word[::-1] for word in words) if sys.byteorder == "little" else raw
    address = ipaddress.ip_address(ordered)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _reaches(
    listening: ipaddress.IPv4Address | ipaddress.IPv6Address,
    wanted: set[ipaddress.IPv4Address | ipaddress.IPv6Address],
) -> bool:
    """A socket bound to the address, or to every address of its family (0.0.0.0, ::)."""
    if listening.is_unspecified:
        return any(
            address.version == listening.version or listening.version == 6 for address in wanted
        )
    return listening in wanted
