"""Where the previous file goes when install or uninstall rewrites a host's file.

A backup that holds a token in plain text never stays inside a project folder or a git work tree
(where it would be committed): it goes to svc-mcp's state directory. When the new file holds no
token in plain text and the old one did, no backup is kept at all (the point of the change was to
get the token out), and an older backup beside the file goes too. Every backup is 0600.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from svc_mcp.core.settings import state_directory


@dataclass(frozen=True)
class BackupPlan:
    to: Path | None
    """Where the old file is copied; None: no backup is kept."""
    holds_tokens: bool
    stale: Path | None = None
    """An older backup beside the file, to delete: it may hold a token the change removed."""


def plan_backup(
    path: Path,
    *,
    old_holds: bool,
    new_holds: bool,
    project: Path | None,
    environ: Mapping[str, str],
) -> BackupPlan:
    """Where to keep the old file at `path` (which exists; followed if a link, but for a file
    inside `project`, which is written only by name, never through a link)."""
    inside = project is not None and path.is_relative_to(project)
    resolved = path if inside else path.resolve()
    beside = resolved.with_name(resolved.name + ".bak")
    stale = beside if beside.exists() else None
    if not old_holds:
        return BackupPlan(beside, holds_tokens=False)
    if not new_holds:
        return BackupPlan(None, holds_tokens=True, stale=stale)
    if _shared(resolved, project):
        digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
        backups = state_directory(environ) / "backups"
        return BackupPlan(backups / f"{digest}-{resolved.name}.bak", holds_tokens=True, stale=stale)
    return BackupPlan(beside, holds_tokens=True)


def _shared(path: Path, project: Path | None) -> bool:
    """Inside the project folder, or inside a git work tree (a dotfiles repository too)."""
    if project is not None and path.is_relative_to(project.resolve()):
        return True
    return any((folder / ".git").exists() for folder in path.parents)


def write_backup(source: Path, to: Path) -> None:
    """Copies `source` to `to`, readable by its owner only (the folder too, if made here)."""
    save_backup(source.read_bytes(), to)


def save_backup(data: bytes, to: Path) -> None:
    """Writes `data` to `to`, readable by its owner only (the folder too, if made here)."""
    to.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    to.unlink(missing_ok=True)
    fd = os.open(to, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
