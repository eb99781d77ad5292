"""The two HTTP backends every tool talks to, declared once: the portal and the data service.

A `Backend` row says which environment variables locate it and hold its token (with their
fallbacks, named in `svc_mcp.core.settings`), its default address, how the token is sent and which
path proves it answers. The MCP server, both CLIs, `doctor`, `install` and `demo` read these rows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from svc_mcp.core.connection import MAX_RESPONSE_BYTES, Connection
from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.settings import (
    INSECURE_HOSTS_VARIABLE,
    MAX_TOKEN_FILE_BYTES,
    PORTAL_BASE_URL_VARIABLE,
    PORTAL_TOKEN_FILE_VARIABLE,
    PORTAL_TOKEN_VARIABLES,
    SERVICE_BASE_URL_VARIABLE,
    SERVICE_TOKEN_FILE_VARIABLE,
    SERVICE_TOKEN_VARIABLES,
    cleartext_host,
)


class Toolset(StrEnum):
    """A group of tools that `--toolsets` selects; each backend serves one."""

    PORTAL = "portal"
    SERVICE = "service"


@dataclass(frozen=True)
class Backend:
    name: str
    """Short name, used in doctor's check names: portal, service."""
    label: str
    """How messages name it: "the portal"."""
    toolset: Toolset
    base_url_variable: str
    default_base_url: str
    token_variables: tuple[str, ...]
    """The variables that may hold its token, the first one set wins."""
    health_path: str
    """A GET that needs no credential and proves the backend answers."""
    token_file_variable: str
    """Names a file holding its token instead (read at each call); not both."""
    renewal: str
    """What renews an expired or refused token, for the message of a 401."""
    token_scheme: str = "Bearer"  # noqa: S105 (a scheme name, not a secret)
    """How the token is sent: `Authorization: <scheme> <token>`."""
    max_answer_bytes: int = MAX_RESPONSE_BYTES
    """The largest answer read from it: the largest page it can send (1,000 records), with a
    margin. Refused on its Content-Length before the body is read, or, without one, as soon as
    more has come (docs/decisions.md, "Answer caps")."""
    slots: int = 16
    """At most this many requests of one server to this backend in flight; more calls wait their
    turn, first come first served, within their own deadline. Each backend has its own, so a hung
    backend holds only its own slots and never delays calls to the other."""

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable this backend's client reads."""
        return (self.base_url_variable, *self.credential_variables)

    @property
    def credential_variables(self) -> tuple[str, ...]:
        """The token variables and the token file's."""
        return (*self.token_variables, self.token_file_variable)

    @property
    def token_names(self) -> str:
        """The token variables as messages name them: "A (or B)"."""
        first, *others = self.token_variables
        return f"{first} (or {', '.join(others)})" if others else first

    def token_source(self, environ: Mapping[str, str]) -> str | None:
        """The variable the token comes from (the file's, for a token file), or None."""
        return next((name for name in self.credential_variables if environ.get(name)), None)

    def address(self, environ: Mapping[str, str] | None = None) -> str:
        """Its base URL as `environ` says (no token read); `Misconfigured` for a bad one."""
        environ = os.environ if environ is None else environ
        return _base_url(self.base_url_variable, environ) or self.default_base_url

    def connect(self, environ: Mapping[str, str] | None = None) -> Connection:
        """Where the backend is and the token to send, as `environ` (default: the process's
        environment, read now) says; `Misconfigured` for a value that cannot be used."""
        environ = os.environ if environ is None else environ
        base_url = self.address(environ)
        source = self.token_source(environ)
        if source:
            self._check_clear_text(base_url, environ)
        from_file = source == self.token_file_variable
        if not from_file and source and environ.get(self.token_file_variable):
            raise Misconfigured(
                f"both {source} and {self.token_file_variable} are set: keep one (the file, for a "
                "token that is renewed)",
                hint=self.token_file_variable,
            )
        if from_file:
            token: str | None = _token_from_file(
                self.token_file_variable, environ[self.token_file_variable]
            )
            credential = f"the file {self.token_file_variable} names"
        else:
            token = _token(source, environ[source]) if source else None
            credential = self.token_names
        return Connection(
            service=self.label,
            base_url=base_url,
            base_url_variable=self.base_url_variable,
            token=token,
            token_scheme=self.token_scheme,
            credential_variable=credential,
            max_answer_bytes=self.max_answer_bytes,
            renewal=self.renewal,
        )

    def _check_clear_text(self, base_url: str, environ: Mapping[str, str]) -> None:
        """A token goes over plain http only to loopback or to a host the person named in
        SVC_MCP_INSECURE_HOSTS (as pip's trusted hosts): anyone on the path could read it."""
        host = cleartext_host(base_url, environ)
        if host is None:
            return
        raise Misconfigured(
            f"{self.base_url_variable} is plain http:// to {host}, which is not loopback, and "
            f"{self.token_names} would travel in clear text; use https://, or name the host in "
            f"{INSECURE_HOSTS_VARIABLE} (comma-separated) to allow it",
            hint=INSECURE_HOSTS_VARIABLE,
        )


def _base_url(variable: str, environ: Mapping[str, str]) -> str | None:
    text = environ.get(variable, "").strip()
    if not text:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port  # raises ValueError when it is not a number in range
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise Misconfigured(f"{variable} must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        # Refused rather than stripped: the credentials would otherwise be echoed by every
        # "cannot reach" message; tokens go in the token variables.
        raise Misconfigured(
            f"{variable} must not carry a user name or password (user@host); set the token "
            "variable instead"
        )
    if parts.query or parts.fragment:
        raise Misconfigured(f"{variable} must not carry a query or fragment")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def _token_from_file(variable: str, path: str) -> str:
    """The token in the file `variable` names, read now (a renewed file counts from this call)."""
    try:
        with open(path.strip(), "rb") as file:
            raw = file.read(MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise Misconfigured(
            f"{variable} names a file that cannot be read ({exc.strerror or type(exc).__name__}): "
            "check the path and that this process may read it",
            hint=variable,
        ) from None
    if len(raw) > MAX_TOKEN_FILE_BYTES or not raw.strip():
        raise Misconfigured(
            f"the file {variable} names is {'empty' if not raw.strip() else 'too large'}; it "
            "must hold the token alone",
            hint=variable,
        )
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        text = "\x00"
    return _token(f"the file {variable} names", text)


def _token(variable: str, text: str) -> str:
    """The token without surrounding white space (a CRLF `.env` file, a paste); refused when it
    still holds a control character or non-ASCII text, which no HTTP header can carry."""
    token = text.strip()
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise Misconfigured(
            f"{variable} holds a control character, a space or non-ASCII text; a token is "
            "printable ASCII: set it again without them"
        )
    return token


PORTAL = Backend(
    name="portal",
    label="the portal",
    toolset=Toolset.PORTAL,
    base_url_variable=PORTAL_BASE_URL_VARIABLE,
    default_base_url="http://127.0.0.1:8081",
    token_variables=PORTAL_TOKEN_VARIABLES,
    health_path="/api/page",
    token_file_variable=PORTAL_TOKEN_FILE_VARIABLE,
    renewal=(
        "a portal session lasts its TTL: issue a new one (on the portal's machine: svc-stub admin "
        "portal issue-session --subject <principal> --ttl 8h) and put it where the token comes "
        f"from; with {PORTAL_TOKEN_FILE_VARIABLE}, replace the file (write a new one and rename "
        "it over the old) and the next call uses it, no restart"
    ),
    # 1,000 of its largest demo record (an audit event, 234 bytes) are 234 kB and the unpaged
    # page layout 823 bytes; ids, names and reasons have no length bound in its data files, so
    # x16 for records longer than the demo's: 4 MiB (the 16 MiB default was 70 such pages).
    max_answer_bytes=4 * 1024 * 1024,
)

SERVICE = Backend(
    name="service",
    label="the data service",
    toolset=Toolset.SERVICE,
    base_url_variable=SERVICE_BASE_URL_VARIABLE,
    default_base_url="http://127.0.0.1:8080",
    token_variables=SERVICE_TOKEN_VARIABLES,
    health_path="/health/live",
    token_file_variable=SERVICE_TOKEN_FILE_VARIABLE,
    renewal=(
        f"the token is the data service's own {SERVICE_TOKEN_VARIABLES[0]}; with "
        f"{SERVICE_TOKEN_FILE_VARIABLE}, replace the file (by rename) and the next call uses it, "
        "no restart"
    ),
    # 1,000 of its largest demo record (an order, 435 bytes) are 0.44 MB. An intel record is
    # bounded by the 64 KiB an envelope can be (the stub's MAX_BODY_BYTES), so a full page of
    # the largest envelopes would be 64 MiB: 16 MiB holds 255 of them, and a fuller page is
    # refused with advice to ask for fewer (`limit`). Kept at 16 MiB rather than raised to 64:
    # 16 calls in flight (`slots`) would then hold a gigabyte.
    max_answer_bytes=16 * 1024 * 1024,
)

BACKENDS: tuple[Backend, ...] = (SERVICE, PORTAL)


def total_slots() -> int:
    """Requests one server may have in flight to all backends at once."""
    return sum(backend.slots for backend in BACKENDS)


def backend_variables() -> tuple[str, ...]:
    """Every variable the client side reads to find and authenticate to its backends."""
    return tuple(name for backend in BACKENDS for name in backend.variables)


def token_variables() -> frozenset[str]:
    return frozenset(name for backend in BACKENDS for name in backend.token_variables)
