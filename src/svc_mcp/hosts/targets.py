"""Where install and uninstall write: the hosts `--client` means, the file of each, and the
project a project's file belongs to."""

from __future__ import annotations

import os
from pathlib import Path

from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.report import say
from svc_mcp.hosts.table import Host, Scope, current_platform, find_hosts


def chosen_hosts(client: str, config: Path | None, *, remote: bool) -> list[Host]:
    """The hosts `--client` means here; a shorthand's choice is said on stderr."""
    hosts, chosen = find_hosts(
        client, home=Path.home(), platform=current_platform(), environ=os.environ
    )
    if len(hosts) > 1 and remote:
        hosts = [host for host in hosts if host.url_key] or hosts
        chosen = f"{chosen}; --http is for {', '.join(host.label for host in hosts)} only"
    if len(hosts) > 1 and config is not None:
        names = " or ".join(f"--client {host.name}" for host in hosts)
        raise InstallError(f"--config names one file, and --client {client} means two: use {names}")
    if chosen:
        say(chosen)
    return hosts


def project_folder(scope: Scope) -> Path | None:
    """The project a `scope` file belongs to (none for the user's)."""
    return Path.cwd() if scope == "project" else None


def config_path(host: Host, scope: Scope, config: Path | None) -> Path:
    """`--config`, else the host's file for `scope`; a project's file only inside the project."""
    if config is not None:
        return config.absolute()
    path = host.config_path(
        scope,
        home=Path.home(),
        cwd=Path.cwd(),
        platform=current_platform(),
        environ=os.environ,
    )
    try:
        leads_to, project = path.resolve(), Path.cwd().resolve()
    except OSError as exc:  # a link changed while it was followed (Python 3.11's realpath)
        raise InstallError(
            f"{path} changed while install read it ({exc.strerror}): run it again"
        ) from None
    if scope == "project" and not leads_to.is_relative_to(project):
        raise InstallError(
            f"{path} leads to {leads_to}, outside the project {project}: a project's file is "
            "written only inside the project; remove the link, or pass --config with the file "
            "you mean"
        )
    return path
