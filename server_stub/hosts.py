"""Which `Host` names a stub answers for (the data service and the portal): a defence against
DNS rebinding.

A page on another site can point its own DNS name at 127.0.0.1 and then read the service from the
victim's browser: same origin for the browser, but the request carries the attacker's name as
`Host`. So only these names are answered, with any port: `localhost` and loopback addresses, the
address the server is bound to (unless a wildcard), the hosts of `SERVICE_WEBAUTHN_ORIGIN` and
`SERVICE_WEBAUTHN_RP_ID` (data service), and `SERVICE_ALLOWED_HOSTS` / `PORTAL_ALLOWED_HOSTS` (the
names of a deployment behind the access proxy). Anything else is `421 misdirected_request`.

The health probes stay open to any `Host` (a load balancer may probe by an address the server does
not know as its own; they disclose nothing), and a request without `Host` (HTTP/1.0) passes, since
a browser always sends one.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.responses import Response

from server_stub.http import failure
from svc_serving.loopback import literal_address

OPEN_PATHS = frozenset({"/health/live", "/health/ready"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 (names, not a bind)


def host_name(host: str) -> str | None:
    """The name part of a `Host` value (`name`, `name:port`, `[v6]:port`), lower case, without a
    trailing dot; None when it is not one."""
    text = host.strip().lower()
    if text.startswith("["):
        closing = text.find("]")
        rest = text[closing + 1 :]
        if closing == -1 or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        name = text[1:closing]
    else:
        name, colon, port = text.partition(":")
        if colon and not port.isdigit():
            return None
    name = name.rstrip(".")
    if not name or not all(char.isalnum() or char in "-._:" for char in name):
        return None
    return name


def allowed_hosts(
    configured: Iterable[str],
    *,
    webauthn_origin: str | None = None,
    webauthn_rp_id: str | None = None,
    bound_host: str | None,
) -> frozenset[str]:
    names = {"localhost", "127.0.0.1", "[::1]", *configured}
    if webauthn_origin and (origin_host := urlsplit(webauthn_origin).hostname):
        names.add(origin_host)
    if webauthn_rp_id:
        names.add(webauthn_rp_id)
    bound = (bound_host or "").strip("[]")
    if bound not in WILDCARDS:
        names.add(f"[{bound}]" if ":" in bound else bound)
    return frozenset(name for name in (host_name(n) for n in names) if name)


def host_names(value: str) -> list[str]:
    """The names of a comma-separated setting; ValueError when one is not a host name."""
    names = [entry.strip() for entry in value.split(",") if entry.strip()]
    if any(host_name(name) is None for name in names):
        raise ValueError(
            "give host names or addresses separated by commas (no scheme or path; IPv6 in brackets)"
        )
    return names


class HostAllowList:
    """The `Host` names one server answers for (`allowed_hosts`, plus any loopback address)."""

    _MEMO_LIMIT = 64

    def __init__(self, allowed: frozenset[str], setting: str) -> None:
        self.allowed = allowed
        self.setting = setting
        """The variable that extends the list, named in the refusal."""
        self._decided: dict[bytes, bool] = {}

    def refuses(self, path: str, host: bytes | None) -> bool:
        """Whether a request for `path` with this raw `Host` value is refused (421)."""
        if host is None or path in OPEN_PATHS:
            return False
        # A server sees few distinct Host values: each is parsed once.
        allowed = self._decided.get(host)
        if allowed is None:
            if len(self._decided) >= self._MEMO_LIMIT:
                self._decided.clear()
            allowed = self._decided[host] = self._allows(host.decode("latin-1"))
        return not allowed

    def refusal(self) -> Response:
        return failure(
            421,
            "misdirected_request",
            "this server does not answer for that Host name; open it by a name it is "
            f"configured for (loopback, the bound address, {self.setting})",
        )

    def _allows(self, host: str) -> bool:
        name = host_name(host)
        if name is None:
            return False
        address = literal_address(name)
        return name in self.allowed or (address is not None and address.is_loopback)
