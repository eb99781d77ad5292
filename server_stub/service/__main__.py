"""`python -m server_stub.service ...`: the data service's `svc-stub` commands on their own, with
the same shape (`service`, `demo-data service`, `admin service ...`)."""

from __future__ import annotations

import typer

from server_stub.service.cli import register

app = typer.Typer(name="svc-stub", no_args_is_help=True, add_completion=False)
demo_data = typer.Typer(
    help="Write a realistic, deterministic demo data set.", no_args_is_help=True
)
admin = typer.Typer(help="Local administration, never reachable over HTTP.", no_args_is_help=True)
app.add_typer(demo_data, name="demo-data")
app.add_typer(admin, name="admin")
register(app, demo_data=demo_data, admin=admin)

if __name__ == "__main__":
    app()
