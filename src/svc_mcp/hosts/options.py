"""The options install, uninstall and doctor share, and how their help names hosts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from svc_mcp.hosts.table import HOSTS, Host, Scope, hosts_help

FLAG = ""
"""A flag's metavar: it takes no value, so help shows none (not `<bool>`)."""

MORE = (
    "Which source to pick, every host's form, and what doctor checks: "
    "https://github.com/svc-mcp/svc-mcp#readme (install/README.md in a checkout)."
)
"""The epilog of install's and doctor's help."""

ClientOption = Annotated[
    str,
    typer.Option("--client", metavar="HOST", help=f"The MCP host: {hosts_help()}."),
]


def labels(which: Callable[[Host], bool]) -> str:
    """The hosts `which` picks, by label, for a help text."""
    return ", ".join(host.label for host in HOSTS.values() if which(host))


ScopeOption = Annotated[
    Scope, typer.Option("--scope", help="Your user configuration, or this project's.")
]
NameOption = Annotated[str, typer.Option("--name", help="The server's name in the host.")]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Use this file instead of the host's usual one."),
]
