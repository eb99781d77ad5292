"""`svc-stub portal`, `svc-stub demo-data portal` and `svc-stub admin portal ...`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal, NoReturn

import typer

from server_stub.duration import parse_duration
from server_stub.portal import admin as portal_admin
from server_stub.portal.models import PrincipalKind, Role
from server_stub.portal.store import DataError
from svc_serving.startup import long_lived_imports

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Portal data directory. [env: PORTAL_DATA_DIR]", show_default=False
    ),
]
Roles = Literal["reader", "maintainer", "auditor"]


def _fail(message: str) -> NoReturn:
    typer.echo(f"svc-stub: {message}", err=True)
    raise typer.Exit(2)


def _data_dir(data: Path | None) -> Path:
    from server_stub.portal.settings import PortalSettings

    resolved = data or PortalSettings().data_dir
    if resolved is None:
        _fail("give the data directory with --data DIR or PORTAL_DATA_DIR")
    return resolved


def serve_portal(
    data: DataOption = None,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8081,
) -> None:
    """Serve the read-only portal REST API from a data directory (never written)."""
    with long_lived_imports():
        from pydantic import ValidationError

        from server_stub.confinement import confine_portal
        from server_stub.portal.app import create_app
        from server_stub.portal.settings import PortalSettings
        from server_stub.serve import serve, stub_protocol

    data_dir = _data_dir(data)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from server_stub.telemetry import setup

    try:
        settings = PortalSettings()
    except ValidationError as exc:
        problems = "; ".join(
            f"PORTAL_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        )
        _fail(f"invalid configuration: {problems}")
    try:
        app = create_app(
            data_dir,
            access_proxy=settings.access_proxy(),
            allowed_hosts=settings.allowed_host_names,
            bound_host=host,
        )
        http = stub_protocol()
    except (DataError, ValueError) as exc:
        _fail(f"cannot start the portal: {exc}")
    confine_portal(data_dir, port)
    setup("svc-stub portal")  # after confinement, which must find one thread
    serve(app, host, port, http)


def demo_portal(
    directory: Annotated[Path, typer.Argument(help="Directory to fill (created if missing).")],
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same files.")] = 7,
) -> None:
    """Write a realistic, deterministic portal data set."""
    from server_stub.portal.demo_data import write_demo_data

    counts = write_demo_data(directory, seed=seed)
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    typer.echo(f"wrote {directory}: {summary}", err=True)


admin_portal = typer.Typer(
    help="Change the portal's data directory: sessions, credentials and roles.",
    no_args_is_help=True,
)


@admin_portal.command("issue-session")
def issue_session(
    subject: Annotated[str, typer.Option(help="Principal id the session is for.")],
    ttl: Annotated[str, typer.Option(help="Lifetime: 90s, 30m, 8h, 7d.")] = "8h",
    data: DataOption = None,
) -> None:
    """Issue a session; prints its bearer token once (only its hash is stored)."""
    try:
        token = portal_admin.issue_session(_data_dir(data), subject, parse_duration(ttl))
    except (portal_admin.AdminError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(token)


@admin_portal.command("revoke-session")
def revoke_session(
    session_id: Annotated[str, typer.Option("--id", help="Session record id (ses_...).")],
    data: DataOption = None,
) -> None:
    """Revoke a session by its record id."""
    try:
        portal_admin.revoke_session(_data_dir(data), session_id)
    except portal_admin.AdminError as exc:
        _fail(str(exc))


@admin_portal.command("issue-credential")
def issue_credential(
    subject: Annotated[str, typer.Option(help="Principal id the credential is for.")],
    issuer: Annotated[str, typer.Option(help="Who issues it.")] = "portal-admin",
    data: DataOption = None,
) -> None:
    """Issue a credential; prints its record id, then the secret once."""
    try:
        credential_id, secret = portal_admin.issue_credential(_data_dir(data), subject, issuer)
    except portal_admin.AdminError as exc:
        _fail(str(exc))
    typer.echo(credential_id)
    typer.echo(secret)


@admin_portal.command("revoke-credential")
def revoke_credential(
    credential_id: Annotated[str, typer.Option("--id", help="Credential record id (cred_...).")],
    reason: Annotated[str, typer.Option(help="Why, for the audit trail.")],
    by: Annotated[str, typer.Option(help="Who revokes it.")] = "portal-admin",
    data: DataOption = None,
) -> None:
    """Revoke a credential; appends a credential-revoke record."""
    try:
        portal_admin.revoke_credential(_data_dir(data), credential_id, by, reason)
    except portal_admin.AdminError as exc:
        _fail(str(exc))


@admin_portal.command("grant")
def grant(
    subject: Annotated[str, typer.Option(help="Principal id.")],
    role: Annotated[Roles, typer.Option(help="Role to grant.")],
    kind: Annotated[
        Literal["human", "service", "agent"] | None,
        typer.Option(help="Kind, to create a principal that does not exist yet."),
    ] = None,
    by: Annotated[str, typer.Option(help="Who grants it.")] = "portal-admin",
    data: DataOption = None,
) -> None:
    """Grant a role (creating the principal with --kind); appends a grant record."""
    role_value: Role = role
    kind_value: PrincipalKind | None = kind
    try:
        portal_admin.grant(_data_dir(data), subject, role_value, by, kind=kind_value)
    except portal_admin.AdminError as exc:
        _fail(str(exc))


@admin_portal.command("revoke")
def revoke(
    subject: Annotated[str, typer.Option(help="Principal id.")],
    role: Annotated[Roles, typer.Option(help="Role to take away (falls back to reader).")],
    reason: Annotated[str, typer.Option(help="Why, for the audit trail.")],
    by: Annotated[str, typer.Option(help="Who revokes it.")] = "portal-admin",
    data: DataOption = None,
) -> None:
    """Revoke a role; appends an identity revoke record."""
    role_value: Role = role
    try:
        portal_admin.revoke(_data_dir(data), subject, role_value, by, reason)
    except portal_admin.AdminError as exc:
        _fail(str(exc))


def register(app: typer.Typer, *, demo_data: typer.Typer, admin: typer.Typer) -> None:
    """Adds the portal's commands to `svc-stub`."""
    app.command("portal")(serve_portal)
    demo_data.command("portal")(demo_portal)
    admin.add_typer(admin_portal, name="portal")
