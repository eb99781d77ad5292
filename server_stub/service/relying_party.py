"""Which relying party a passkey ceremony is for: its RP id and the origin the browser must report.

`SERVICE_WEBAUTHN_RP_ID` (a host name) and `SERVICE_WEBAUTHN_ORIGIN` (an http(s) origin) win when
set; an origin alone also fixes the RP id (its host). Whatever is not configured comes from the
request: the `Host` header, accepted only as a DNS host name with an optional port (no user info,
path, query or IP literal), and the scheme of the connection. With only the RP id configured, the
request's host must be that name or one of its subdomains.

Browsers refuse an IP address as RP id, so a request by IP address gets a clear 400 telling the
operator to use a host name such as `localhost`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from server_stub.http import ApiError
from server_stub.service.auth import DEFAULT_PORTS, origin_key
from server_stub.service.settings import StartupRefused

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_HOST_HEADER = re.compile(r"([A-Za-z0-9.-]{1,253})(?::([0-9]{1,5}))?")


@dataclass(frozen=True)
class RelyingParty:
    rp_id: str
    origin: str


def is_host_name(name: str) -> bool:
    """A lower-case DNS name (not an IPv4 address: the last label is not all digits)."""
    labels = name.split(".")
    return (
        0 < len(name) <= 253
        and all(_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def serialize_origin(scheme: str, host: str, port: int) -> str:
    """The origin as browsers write it into clientDataJSON: the default port left out."""
    return f"{scheme}://{host}" if DEFAULT_PORTS[scheme] == port else f"{scheme}://{host}:{port}"


def _names_an_address(host_header: str) -> bool:
    try:
        ipaddress.ip_address(urlsplit("//" + host_header).hostname or "")
    except ValueError:
        return False
    return True


def _covers(rp_id: str, host: str) -> bool:
    return host == rp_id or host.endswith("." + rp_id)


class RelyingPartyResolver:
    def __init__(self, rp_id: str | None, origin: str | None) -> None:
        """Raises StartupRefused for a configured value that cannot work."""
        self._rp_id = self._configured_rp_id(rp_id) if rp_id else None
        self._origin: str | None = None
        if origin:
            self._origin, origin_host = self._configured_origin(origin)
            if self._rp_id is None:
                self._rp_id = origin_host
            elif not _covers(self._rp_id, origin_host):
                raise StartupRefused(
                    "SERVICE_WEBAUTHN_RP_ID must be the host of SERVICE_WEBAUTHN_ORIGIN or a "
                    "parent domain of it"
                )

    @staticmethod
    def _configured_rp_id(value: str) -> str:
        rp_id = value.strip().lower()
        if not is_host_name(rp_id):
            raise StartupRefused(
                "SERVICE_WEBAUTHN_RP_ID must be a host name only, such as example.com "
                "(no scheme, port, path or IP address)"
            )
        return rp_id

    @staticmethod
    def _configured_origin(value: str) -> tuple[str, str]:
        """(the origin as browsers write it, its host)."""
        key = origin_key(value)
        if key is None or not is_host_name(key[1]):
            raise StartupRefused(
                "SERVICE_WEBAUTHN_ORIGIN must be the page origin, such as https://svc.example.com "
                "(http or https, a host name, an optional port, no path)"
            )
        return serialize_origin(*key), key[1]

    def resolve(self, scheme: str, host_header: str | None) -> RelyingParty:
        """The relying party for a request; 400 when its `Host` cannot name one."""
        if self._origin is not None and self._rp_id is not None:
            return RelyingParty(self._rp_id, self._origin)
        host, port = self._parse_host(host_header or "", scheme)
        if self._rp_id is not None and not _covers(self._rp_id, host):
            raise ApiError(
                400,
                "bad_request",
                f"this address is not covered by SERVICE_WEBAUTHN_RP_ID ({self._rp_id}); "
                "open the dashboard under that name",
            )
        return RelyingParty(self._rp_id or host, serialize_origin(scheme, host, port))

    @staticmethod
    def _parse_host(host_header: str, scheme: str) -> tuple[str, int]:
        match = _HOST_HEADER.fullmatch(host_header)
        host = match.group(1).lower() if match else ""
        port = int(match.group(2)) if match and match.group(2) else DEFAULT_PORTS[scheme]
        if match and is_host_name(host) and 0 < port < 65536:
            return host, port
        if _names_an_address(host_header):
            raise ApiError(
                400,
                "bad_request",
                "passkeys need a host name, not an IP address: open the dashboard at "
                "http://localhost:PORT or under its DNS name (or sign in with the token)",
            )
        raise ApiError(400, "bad_request", "the Host header is not a valid host name and port")
