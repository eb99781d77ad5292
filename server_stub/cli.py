"""`svc-stub`: run the stub servers, fill them with demo data, and the local admin commands.

Each stub contributes its commands through a `register` function, so this file only wires them.
"""

from __future__ import annotations

import sys

import typer

from server_stub.intel.cli import intel
from server_stub.portal.cli import register as register_portal
from server_stub.service.cli import register as register_service
from svc_serving.help_style import run_click_app, typer_style

app = typer.Typer(
    name="svc-stub",
    help="Stub servers for the portal API and the data service, for tests and small deployments.",
    no_args_is_help=True,
    add_completion=False,
    **typer_style(),
)
demo_data = typer.Typer(
    help="Write a realistic, deterministic demo data set.", no_args_is_help=True
)
admin = typer.Typer(
    help="Local administration: the only way to change stub state. Never reachable over HTTP.",
    no_args_is_help=True,
)
app.add_typer(demo_data, name="demo-data")
app.add_typer(admin, name="admin")
app.add_typer(intel, name="intel")

register_portal(app, demo_data=demo_data, admin=admin)
register_service(app, demo_data=demo_data, admin=admin)


def main() -> None:
    run_click_app(app, sys.argv[1:], "svc-stub", "svc-stub")
