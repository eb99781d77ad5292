"""`svc-stub service ...` commands (the data service stub)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from server_stub.service import admin as admin_commands
from server_stub.service.demo_data import DemoDataExists, write_demo_database
from server_stub.service.settings import (
    StartupRefused,
    WithoutGroupBy,
    check_bind,
    load_settings,
    proxy_trust_warnings,
)
from svc_serving.startup import long_lived_imports

EXIT_REFUSED = 2

DbOption = Annotated[
    Path,
    typer.Option("--db", help="SQLite database file of the data service.", dir_okay=False),
]
ReasonOption = Annotated[
    str | None, typer.Option("--reason", help="Why; recorded in the event log.")
]


def _fail(message: str, code: int = EXIT_REFUSED) -> typer.Exit:
    typer.echo(f"svc-stub: {message}", err=True)
    return typer.Exit(code)


def serve(
    db: Annotated[
        Path | None,
        typer.Option(
            "--db", help="SQLite database file (default: $SERVICE_DB_PATH).", dir_okay=False
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 8080,
    insecure_open: Annotated[
        bool,
        typer.Option(
            "--insecure-open",
            help="Allow a non-loopback bind with auth disabled (empty SERVICE_API_TOKEN).",
        ),
    ] = False,
    access_log: Annotated[
        bool, typer.Option(help="Log one JSON line per request (never credentials).")
    ] = True,
    without_group_by: Annotated[
        WithoutGroupBy | None,
        typer.Option(
            help="Play a data service that does not know group_by: refuse it (400) or ignore "
            "it (raw records)."
        ),
    ] = None,
) -> None:
    """Run the data service stub (HTTP API, auth, brute-force guard, HTML shell)."""
    with long_lived_imports():
        import uvicorn

        from server_stub.confinement import confine_service
        from server_stub.serve import plain_log_lines, stub_protocol
        from server_stub.service.app import create_app

    try:
        settings = load_settings(**({"db_path": db} if db is not None else {}))
        warnings = [
            *check_bind(settings, host, insecure_open=insecure_open),
            *proxy_trust_warnings(settings),
        ]
    except StartupRefused as exc:
        raise _fail(str(exc)) from None
    if settings.db_path is None:
        raise _fail("no database: pass --db PATH or set SERVICE_DB_PATH")
    if not settings.db_path.is_file():
        raise _fail(
            f"no database at {settings.db_path}: check the path, or create one with "
            f"`svc-stub demo-data service --db {settings.db_path}`"
        )
    from server_stub.service.storage import start_problem, use_wal
    from svc_serving.confine_paths import shared_write_scope

    # Before anything is made beside the database; confined or not (SVC_STUB_CONFINEMENT=off),
    # others could plant or swap the files the service writes there.
    if problem := shared_write_scope(settings.db_path):
        typer.echo(f"svc-stub service: refusing to start: {problem}", err=True)
        raise typer.Exit(EXIT_REFUSED)
    if problem := start_problem(settings.db_path):
        raise _fail(problem)
    if problem := use_wal(settings.db_path):
        # Served all the same, in its rollback journal: readers may then wait on a write.
        typer.echo(f"svc-stub: warning: {problem}", err=True)
    for warning in warnings:
        typer.echo(warning, err=True)
    from server_stub.telemetry import setup

    try:
        app = create_app(settings, bound_host=host, without_group_by=without_group_by)
        http = stub_protocol()
    except (StartupRefused, ValueError) as exc:
        raise _fail(str(exc)) from None
    plain_log_lines(logging.getLogger())
    if not access_log:
        logging.getLogger("server_stub.access").setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        # The guard resolves the client address itself (SERVICE_TRUST_PROXY); uvicorn must not
        # rewrite the peer from X-Forwarded-For before it does.
        proxy_headers=False,
        forwarded_allow_ips="",
        server_header=False,
        # uvicorn's access line includes the query string; ours logs no request data that could
        # carry a credential.
        access_log=False,
        log_config=None,
        lifespan="off",
        timeout_graceful_shutdown=5,
        # The fast stack: httptools, bounded in head size and time and in connections.
        http=http,
        loop="auto",
    )
    confine_service(settings.db_path, port)
    setup("svc-stub service")  # after confinement, which must find one thread
    uvicorn.Server(config).run()


def demo(
    db: DbOption,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write the deterministic demo data set of the data service."""
    try:
        summary = write_demo_database(db, force=force)
    except DemoDataExists as exc:
        raise _fail(str(exc), 1) from None
    typer.echo(
        f"wrote {db}: {summary.symbols} symbols, {summary.positions} positions, "
        f"{summary.orders} orders, {summary.fills} fills, {summary.pnl_days} days of P&L, "
        f"{summary.risk_limits} risk limits, {summary.events} events"
    )


def _run_admin(action: str, db: Path, reason: str | None) -> None:
    commands = {
        "pause": admin_commands.pause,
        "resume": admin_commands.resume,
        "flatten": admin_commands.flatten,
    }
    command = commands[action]
    try:
        result = command(db, reason=reason) if reason else command(db)
    except admin_commands.AdminError as exc:
        raise _fail(str(exc), 1) from None
    typer.echo(result.message)


def admin_pause(db: DbOption, reason: ReasonOption = None) -> None:
    """Pause trading: the daemon places no new orders."""
    _run_admin("pause", db, reason)


def admin_resume(db: DbOption, reason: ReasonOption = None) -> None:
    """Resume trading after a pause or flatten."""
    _run_admin("resume", db, reason)


def admin_flatten(db: DbOption, reason: ReasonOption = None) -> None:
    """Cancel working orders, close every position at its mark, and pause trading."""
    _run_admin("flatten", db, reason)


def register(app: typer.Typer, *, demo_data: typer.Typer, admin: typer.Typer) -> None:
    """Adds the data service's commands to `svc-stub`."""
    app.command("service")(serve)
    demo_data.command("service")(demo)
    service_admin = typer.Typer(
        help="Local control of the data service: pause, resume, flatten.", no_args_is_help=True
    )
    service_admin.command("pause")(admin_pause)
    service_admin.command("resume")(admin_resume)
    service_admin.command("flatten")(admin_flatten)
    admin.add_typer(service_admin, name="service")
