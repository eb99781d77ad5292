"""`svc-stub demo`: the portal stub on loopback with fresh demo data and an auditor session."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import typer

from server_stub.portal.admin import issue_session
from server_stub.portal.app import create_app
from server_stub.portal.demo_data import write_demo_data
from server_stub.serve import serve


def demo(port: int = 8081) -> None:
    """Serve the portal with demo data in a temporary directory, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="svc-stub-demo-") as temp:
        data = Path(temp) / "portal"
        write_demo_data(data)
        token = issue_session(data, "alice", timedelta(hours=8))
        base = f"http://127.0.0.1:{port}"
        typer.echo(
            "\n".join(
                [
                    f"Portal stub with demo data on {base} (Ctrl-C stops it and removes the data).",
                    "An auditor session for this run only:",
                    f"  export PORTAL_API_BASE={base}",
                    f"  export PORTAL_SESSION_TOKEN={token}",
                    "Try:",
                    f"  curl -s {base}/api/catalog",
                    f'  curl -s -H "Authorization: Bearer $PORTAL_SESSION_TOKEN" {base}/api/whoami',
                    "",
                ]
            ),
            err=True,
        )
        serve(create_app(data), "127.0.0.1", port, log_level="warning")
