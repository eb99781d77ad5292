"""The local (stdio) entry install writes: which svc-mcp it runs, and with which env."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from svc_client.backends import backend_variables
from svc_mcp.hosts.entries import MACHINE_KEYS, install_env, server_entry
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.report import say
from svc_mcp.hosts.runners import (
    Runners,
    Source,
    check_on_index,
    find_checkout,
    from_index,
    index_url,
    launch_command,
    own_version,
    this_installation,
)
from svc_mcp.hosts.table import Host, Scope


def stdio_entry(
    host: Host,
    source: Source,
    scope: Scope,
    pairs: list[str],
    env_refs: bool | None,
    given: Runners,
    index_option: str | None,
    *,
    check: bool,
    unpinned: bool,
    selection: Sequence[str] = (),
) -> dict[str, Any]:
    """The local entry; with `check` (not for --print, which writes nothing) its command must
    exist and, for pypi, the index must have the package (in the pinned version)."""
    if unpinned and source not in ("pypi", "github"):
        raise InstallError("--unpinned is for --source pypi or github, which fetch svc-mcp")
    found = this_installation(os.environ)
    runners = Runners(
        uvx=given.uvx or found.uvx,
        uv=given.uv or found.uv,
        script=found.script,
        checkout=(
            find_checkout([Path(__file__).resolve().parent, Path.cwd()])
            if source == "local"
            else found.checkout
        ),
    )
    if scope == "project" and source in ("here", "local"):
        # A project's file is shared: this installation's paths exist on this machine only, so
        # teammates get this version from the package index, which must have it: a name nobody
        # published there would run whoever registers it, with every teammate's tokens.
        shared_index = index_url(index_option, os.environ)
        if check:
            check_on_index(shared_index, version=own_version(), instead=PROJECT_INSTEAD)
        say(
            f"a project's file is shared, so the entry runs svc-mcp {own_version()} from the "
            f"package index {shared_index} by `uvx` on each teammate's PATH, not this installation "
            "(--source pypi or github to choose)"
        )
        command = ["uvx", *from_index(shared_index), *selection]
        refs = host.takes_references if env_refs is None else env_refs
        return server_entry(host, command, shared_env(pairs), env_refs=refs)
    index = index_url(index_option, os.environ) if source == "pypi" else None
    command = launch_command(source, runners, index_url=index, check=check, unpinned=unpinned)
    if scope == "project":  # by name: each teammate's own, found on their PATH
        command = [Path(command[0]).name, *command[1:]]
    if runners.checkout is not None and command == [runners.script]:
        # (before the selection is added: it is this installation's own command alone)
        say(
            f"uv is not on PATH, so the entry runs {command[0]}: this editable install's own "
            "command, which runs the checkout as it is"
        )
    if index is not None and check:
        check_on_index(index, version=None if unpinned else own_version())
    if env_refs is None:
        env_refs = scope == "project" and host.takes_references
    command = [*command, *selection]
    env = shared_env(pairs) if scope == "project" else install_env(pairs, os.environ)
    if not any(key in env for key in backend_variables()):
        say(
            f"no backend is set ({', '.join(backend_variables())} are all unset): the entry "
            "starts, but every tool call will say what is missing; export them, or pass --env "
            "KEY=VALUE, and install again"
        )
    return server_entry(host, command, env, env_refs=env_refs)


PROJECT_INSTEAD = (
    "install it per user instead (--scope user, each teammate for themselves), or publish it to "
    "your team's own index and pass --index-url with that index"
)


def shared_env(pairs: list[str]) -> dict[str, str]:
    """The env of a project's entry: without this machine's paths."""
    env = install_env(pairs, os.environ)
    if paths := [key for key in MACHINE_KEYS if key in env]:
        for key in paths:
            del env[key]
        say(
            f"{', '.join(paths)} left out: a path on this machine does not belong in a shared "
            "project file (each teammate sets it in their own environment)"
        )
    return env
