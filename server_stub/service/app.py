"""Builds the data service's ASGI application."""

from __future__ import annotations

import time

from starlette.applications import Starlette

from server_stub.hosts import HostAllowList, allowed_hosts
from server_stub.http import Clock
from server_stub.openapi import openapi_route
from server_stub.service import openapi
from server_stub.service.auth import Authenticator
from server_stub.service.db import ServiceDatabase
from server_stub.service.intake import IntelIntake
from server_stub.service.passkeys import PasskeyRoutes
from server_stub.service.routes import ServiceRoutes
from server_stub.service.settings import ServiceSettings, WithoutGroupBy
from server_stub.stack import stub_app
from svc_serving.contracts import MAX_BODY_BYTES


def create_app(
    settings: ServiceSettings,
    *,
    clock: Clock = time.monotonic,
    wall_clock: Clock = time.time,
    authenticator: Authenticator | None = None,
    bound_host: str | None = None,
    without_group_by: WithoutGroupBy | None = None,
) -> Starlette:
    """The service app; `clock` drives the guard and the sessions, `wall_clock` (seconds since
    the epoch) judges intel freshness and dates passkeys. Tests pass fake ones. `bound_host`, the
    address served on, is one of the `Host` names answered (server_stub/hosts.py);
    `without_group_by` plays a data service that does not group (`WithoutGroupBy`). Raises
    StartupRefused when the passkey file or a WebAuthn setting is unusable."""
    auth = authenticator if authenticator is not None else Authenticator(settings, clock=clock)
    intake = IntelIntake(settings.db_path, settings.intel_key(), wall_clock)
    routes = ServiceRoutes(auth, ServiceDatabase(settings.db_path), intake, without_group_by)
    passkeys = PasskeyRoutes.from_settings(settings, auth, clock=clock, wall_clock=wall_clock)
    hosts = HostAllowList(
        allowed_hosts(
            settings.allowed_host_names,
            webauthn_origin=settings.webauthn_origin,
            webauthn_rp_id=settings.webauthn_rp_id,
            bound_host=bound_host,
        ),
        setting="SERVICE_ALLOWED_HOSTS",
    )
    app = stub_app(
        [*routes.routes(), *passkeys.routes(), openapi_route(openapi.document(auth.auth_required))],
        hosts,
        max_body_bytes=MAX_BODY_BYTES,
    )
    app.state.authenticator = auth
    app.state.passkeys = passkeys
    return app
