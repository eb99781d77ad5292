"""Whether doctor may start an entry's command as svc-mcp: it has exactly a form install writes,
and its program is a real file outside the project folder (unless it is this installation's own
uv or uvx, beside the Python that runs doctor), not under /proc (where a path such as
/proc/self/cwd names whatever folder doctor runs in). A project's file, which its author wrote, is
held to more: its svc-mcp is this installation's or the one on PATH, its `uv run --project` is this
checkout, its `--default-index` the index this shell names, its uv and uvx the ones on PATH, and
what uvx fetches is this installation's release: `svc-mcp==<this version>`, or from GitHub its tag
or the commit it was built from (never an unpinned release, another version, or any other ref:
GitHub serves a fork's commits through the parent's URL)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from svc_mcp.hosts.runners import (
    DEFAULT_INDEX,
    INDEX_VARIABLES,
    PACKAGE,
    own_version,
    release_commit,
    runs_svc_mcp,
    this_installation,
)
from svc_mcp.hosts.table import Scope

_PROC = Path("/proc")


def not_ours(
    command: str, args: Sequence[str], *, scope: Scope, project: Path, environ: Mapping[str, str]
) -> str | None:
    """None when doctor may start `command args` as svc-mcp; else why not, for the message."""
    if not runs_svc_mcp(command, args):
        return "which is not svc-mcp as install writes it"
    if not os.path.isabs(command):
        return None  # by name: never started (a GUI host may not find it), only advised on
    real = Path(os.path.realpath(command))
    found = this_installation(environ)
    mine = _real(found.script)
    if real == mine:
        return None
    if Path(command).is_relative_to(_PROC) or real.is_relative_to(_PROC):
        return "whose program is under /proc, where a path names whatever folder doctor runs in"
    if real.is_relative_to(project.resolve()) and not _beside_me(real):
        return f"whose program ({real}) is inside this project folder, which its author wrote"
    if scope == "user":
        return None
    program = Path(command).name.removesuffix(".exe")
    rest = list(args)
    if program == PACKAGE:
        on_path = _on_path(PACKAGE, project)
        if real != on_path:
            return (
                f"whose svc-mcp is neither this installation's ({mine or 'none'}) nor the one on "
                f"PATH ({on_path or 'none'})"
            )
        return None
    runner = found.uv if program == "uv" else found.uvx
    expected = {_real(runner), _on_path(program, project)} - {None}
    if real not in expected:
        return f"whose {program} is not the one on PATH ({', '.join(map(str, expected)) or 'none'})"
    if program == "uv":
        checkout = found.checkout.resolve() if found.checkout else None
        if checkout is None or Path(os.path.realpath(rest[2])) != checkout:
            mine_checkout = checkout or "none"
            return f"which runs the checkout {rest[2]}, not this installation's ({mine_checkout})"
    if rest[:1] == ["--default-index"] and rest[1] != _index_here(environ):
        return (
            f"which fetches svc-mcp from {rest[1]}, not from the index this shell names "
            f"({_index_here(environ)}; {', '.join(INDEX_VARIABLES)})"
        )
    if program == "uvx":
        return _other_release(rest)
    return None


def _other_release(rest: Sequence[str]) -> str | None:
    """Why what a project's `uvx` entry fetches is not the svc-mcp running doctor, or None."""
    mine, commit = own_version(), release_commit()
    running = f"you run {mine}" + (f" (commit {commit})" if commit else "")
    if rest[:1] == ["--from"]:
        _, at, ref = rest[1].partition("@")
        if at and ref in {f"v{mine}", commit}:
            return None
        pinned = f"pins the GitHub ref {ref}" if at else "pins no GitHub ref (the newest commit)"
        return f"which {pinned}, {running}"
    spec = rest[2] if rest[:1] == ["--default-index"] else rest[0]  # runs_svc_mcp's form
    _, pins, version = spec.partition("==")
    if pins and version == mine:
        return None
    pinned = f"pins {PACKAGE} {version}" if pins else "pins no version (the newest release)"
    return f"which {pinned}, {running}"


def _beside_me(real: Path) -> bool:
    """Whether the program is the uv or uvx of the venv this svc-mcp runs in: part of this
    installation, which already runs (the quick start's `.venv/bin/uv`, which install writes and
    doctor is run with, in the checkout)."""
    bin_dir = Path(sys.executable).absolute().parent
    return real in {_real(str(bin_dir / name)) for name in ("uv", "uvx")}


def _real(path: str | None) -> Path | None:
    return Path(os.path.realpath(path)) if path else None


def _on_path(program: str, project: Path) -> Path | None:
    """The program PATH finds, when it is a real file outside the project and /proc."""
    real = _real(shutil.which(program))
    if real is None or real.is_relative_to(_PROC) or real.is_relative_to(project.resolve()):
        return None
    return real


def _index_here(environ: Mapping[str, str]) -> str:
    return next((environ[name] for name in INDEX_VARIABLES if environ.get(name)), DEFAULT_INDEX)
