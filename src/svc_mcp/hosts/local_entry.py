"""The local (stdio) entry install writes: which svc-mcp it runs, and with which env."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from svc_mcp.core.backends import backend_variables
from svc_mcp.hosts.entries import MACHINE_KEYS, install_env, server_entry
from svc_mcp.hosts.errors import IndexUnreachable, InstallError
from svc_mcp.hosts.report import say
from svc_mcp.hosts.runners import (
    PACKAGE,
    Runners,
    Source,
    check_on_index,
    find_checkout,
    index_args,
    index_url,
    launch_command,
    own_version,
    release_commit,
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
        # A project's file is shared: this installation's paths exist on this machine only.
        shared_index = index_url(index_option, os.environ)
        command = ["uvx", *index_args(shared_index), f"{PACKAGE}=={own_version()}", *selection]
        if check:
            released_on(shared_index)
        say(
            f"a project's file is shared, so the entry runs svc-mcp {own_version()} from the "
            f"package index {shared_index} by `uvx` on each teammate's PATH, not this installation "
            "(--source pypi or github to choose)"
        )
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


def released_on(index: str) -> None:
    """Refused unless `index` has this version: teammates run whatever that name resolves to
    there, with their tokens, so an unpublished name must never go into a shared file."""
    try:
        check_on_index(index, version=own_version())
    except IndexUnreachable:
        raise
    except InstallError:
        raise InstallError(
            f"the package index {index} has no {PACKAGE} {own_version()}, and a project's file "
            "is shared: its entry would run that name from the index on each teammate's machine; "
            "publish the release first, or pass --index-url with your team's own index that has "
            "it, or use --source github (pinned to the release tag)"
        ) from None


def tag_note(source: Source, unpinned: bool) -> None:
    """Says, once the entry is written, that a github entry pinned to a tag may run other code."""
    if source == "github" and not unpinned and release_commit() is None:
        say(
            f"the entry runs the tag v{own_version()}, which whoever controls the repository could "
            "move; an installation made from git (its commit in its metadata) pins that commit"
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
