"""The portal's read-only REST API as a Starlette app (docs/api-portal.md)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server_stub import access_log, hosts
from server_stub.http import (
    ApiError,
    Clock,
    ok,
    ok_page,
)
from server_stub.openapi import openapi_route
from server_stub.portal import openapi, views
from server_stub.portal.auth import AccessProxyConfig, Caller, identify
from server_stub.portal.store import PortalStore, Snapshot
from server_stub.stack import stub_app

View = Callable[[Snapshot, Caller], Any]

AUDITOR_ONLY = "this endpoint needs the auditor role with a human session"


def _anyone(view: View) -> View:
    return view


def _signed_in(view: View) -> View:
    def gated(snapshot: Snapshot, caller: Caller) -> Any:
        if caller.principal is None:
            raise ApiError(403, "forbidden", "this endpoint needs a signed-in session")
        return view(snapshot, caller)

    return gated


def _auditor(view: Callable[[Snapshot], Any]) -> View:
    def gated(snapshot: Snapshot, caller: Caller) -> Any:
        if not caller.is_human_auditor:
            raise ApiError(403, "forbidden", f"{AUDITOR_ONLY}; the caller is {caller.role}")
        return view(snapshot)

    return gated


def _whoami(_: Snapshot, caller: Caller) -> dict[str, str]:
    assert caller.principal is not None
    return caller.principal.identity()


ENDPOINTS: dict[str, View] = {
    "/api/catalog": _anyone(views.catalog),
    "/api/mcp": _anyone(lambda s, c: views.channel(s, c, "mcp")),
    "/api/web": _anyone(lambda s, c: views.channel(s, c, "web")),
    "/api/cli": _anyone(lambda s, c: views.channel(s, c, "cli")),
    "/api/page": _anyone(views.page),
    "/api/audit": _auditor(views.audit),
    "/api/gateway-audit": _auditor(lambda s: views.trail(s, "gateway-access")),
    "/api/grants": _auditor(lambda s: views.trail(s, "grants")),
    "/api/revokes": _auditor(lambda s: views.trail(s, "revokes")),
    "/api/whoami": _signed_in(_whoami),
    "/api/sessions": _auditor(views.sessions),
    "/api/credentials": _auditor(views.credentials),
    "/api/credential-revokes": _auditor(lambda s: views.trail(s, "credential-revokes")),
}


def _respond(payload: Any, request: Request) -> Response:
    return ok_page(payload, request) if isinstance(payload, list) else ok(payload)


def create_app(
    data_dir: Path,
    *,
    access_proxy: AccessProxyConfig | None = None,
    clock: Clock = time.time,
    allowed_hosts: Iterable[str] = (),
    bound_host: str | None = None,
) -> Starlette:
    """Builds the app; raises `DataError` when the data directory does not load. It answers for
    loopback names, `bound_host` and `allowed_hosts` only (server_stub/hosts.py)."""
    store = PortalStore(data_dir)

    def endpoint(path: str, view: View) -> Callable[[Request], Awaitable[Response]]:
        # Every payload but whoami depends only on the caller's role and kind.
        shared = path != "/api/whoami"

        async def handle(request: Request) -> Response:
            snapshot = store.snapshot()
            caller = identify(request, snapshot, clock, access_proxy)
            if caller.principal is not None:
                request.scope[access_log.PRINCIPAL_KEY] = caller.principal.id
            if not shared:
                return _respond(view(snapshot, caller), request)
            key = (path, caller.role, caller.kind)
            payload = snapshot.memo(key, lambda: view(snapshot, caller))
            if request.scope["query_string"]:
                return _respond(payload, request)
            # The common request, a first page with no parameters, is rendered once per snapshot.
            response: Response = snapshot.memo(
                (*key, "response"), lambda: _respond(payload, request)
            )
            return response

        return handle

    routes = [
        Route(path, endpoint(path, view), methods=["GET"]) for path, view in ENDPOINTS.items()
    ]
    routes.append(openapi_route(openapi.document(access_proxy)))
    allowed = hosts.allowed_hosts(allowed_hosts, bound_host=bound_host)
    return stub_app(
        routes, hosts.HostAllowList(allowed, setting="PORTAL_ALLOWED_HOSTS"), max_body_bytes=None
    )
