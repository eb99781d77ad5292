"""A token goes over plain `http://` only to loopback, or to a host the person named in
`SVC_MCP_INSECURE_HOSTS` (comma-separated host names), as pip's trusted hosts and Go's insecure
hosts do. The client core applies the same rule when it sends; this is install's and doctor's
copy of the check, to be replaced by the client core's when both are merged."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

INSECURE_HOSTS_VARIABLE = "SVC_MCP_INSECURE_HOSTS"


def insecure_hosts(environ: Mapping[str, str]) -> frozenset[str]:
    names = environ.get(INSECURE_HOSTS_VARIABLE, "").split(",")
    return frozenset(name.strip().lower() for name in names if name.strip())


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cleartext_host(url: str, environ: Mapping[str, str]) -> str | None:
    """The host a token sent to `url` would reach in clear text, unless that is allowed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = parts.hostname or ""
    if parts.scheme != "http" or not host or is_loopback(host):
        return None
    return None if host.lower() in insecure_hosts(environ) else host


def refusal(what: str, url_variable: str, host: str) -> str:
    return (
        f"{what} would go in clear text over http:// to {host} ({url_variable}), which is not "
        f"loopback: use https://, or name the host in {INSECURE_HOSTS_VARIABLE} "
        f"(comma-separated) if the network between is yours"
    )
