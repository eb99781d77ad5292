"""The install and uninstall plan: the host's file as it would be with (or without) our entry,
merged into what is there (other servers, unknown keys, variables we do not set survive); then
written, or only printed."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from svc_mcp.hosts.backups import plan_backup
from svc_mcp.hosts.entries import ENTRY_KEYS, PROMPT_ID, plain_secrets
from svc_mcp.hosts.errors import InstallError, UnreadableConfig
from svc_mcp.hosts.files import (
    narrow,
    parse,
    plain,
    read_text,
    refuse_comments,
    render,
    servers_of,
    store,
    write_atomically,
)
from svc_mcp.hosts.project_files import (
    narrow_in_project,
    parts_in,
    read_in_project,
    write_in_project,
)
from svc_mcp.hosts.runners import UV_TRUST
from svc_mcp.hosts.table import Host


def _read(path: Path, project: Path | None) -> str:
    """The file's text; a project's file read from the project down, never through a link."""
    parts = parts_in(project, path) if project is not None else None
    return read_text(path) if parts is None or project is None else read_in_project(project, parts)


def _managed_keys(host: Host) -> frozenset[str]:
    """The keys of our entry that installing sets; any other key a user added is kept."""
    optional = (host.url_key, host.headers_key, host.env_vars_key, host.bearer_variable_key)
    return frozenset(
        {"command", "args", "env", *host.stdio_fields, *host.http_fields}
        | {key for key in optional if key}
    )


def _merged(host: Host, old: Any, new: Mapping[str, Any]) -> dict[str, Any]:
    """`new` over the old entry: keys we do not manage, and env names we do not set, survive."""
    if not isinstance(old, dict):
        return dict(new)
    fresh = dict(new)
    vars_key = host.env_vars_key
    old_env, old_vars = old.get("env"), old.get(vars_key) if vars_key else None
    kept_env = {}
    if isinstance(old_env, dict):
        ours = {*ENTRY_KEYS, *UV_TRUST}
        kept_env = {key: value for key, value in old_env.items() if key not in ours}
    kept_vars = [n for n in old_vars if n not in ENTRY_KEYS] if isinstance(old_vars, list) else []
    if kept_env:
        fresh["env"] = kept_env | fresh.get("env", {})
    if kept_vars and vars_key:
        fresh[vars_key] = kept_vars + fresh.get(vars_key, [])
    managed = _managed_keys(host)
    return {k: v for k, v in old.items() if k not in managed or k in fresh} | fresh


@dataclass(frozen=True)
class Change:
    path: Path
    text: str
    """The whole new file."""
    changed: bool
    backup: Path | None = None
    private: bool = False
    """The file holds a token: it is written readable by its owner only."""
    old_mode: int | None = None
    """The mode the file had before writing narrowed it to 0600."""
    removed: Mapping[str, Any] | None = None
    """Uninstalling: the entry that was removed."""
    old_private: bool = False
    """The old file held a token in plain text."""
    backup_holds_tokens: bool = False
    dropped: Path | None = None
    """An older backup deleted because it may hold a token the new file no longer does."""


def _holds_tokens(servers: Any) -> bool:
    entries = servers.values() if isinstance(servers, dict) else []
    return any(plain_secrets(plain(e)) for e in entries if isinstance(plain(e), dict))


def plan_install(
    host: Host,
    path: Path,
    name: str,
    entry: Mapping[str, Any],
    inputs: Sequence[Mapping[str, Any]] = (),
    project: Path | None = None,
) -> Change:
    """The file as it would be with the entry (and its `inputs`) merged in; nothing is written.
    A file inside `project` is read from it down, never through a link."""
    old_text = _read(path, project)
    document = parse(path, old_text, host)
    refuse_comments(document, path)
    servers = servers_of(document, host, path, create=True)
    old_private = _holds_tokens(servers)
    old_entry = plain(servers.get(name))
    merged = _merged(host, old_entry, entry)
    private = bool(plain_secrets(merged))
    new_inputs = _merged_inputs(document, inputs, path)
    if merged == old_entry and new_inputs is None:
        return Change(path=path, text=old_text, changed=False, private=private)
    store(servers, name, merged)
    private = _holds_tokens(servers)  # ours, or another entry's copy of one of our tokens
    if new_inputs is not None:
        document["inputs"] = new_inputs
    text = render(document, host.file_format)
    text = text if old_text.strip() else text.lstrip("\n")
    return Change(path, text, changed=True, private=private, old_private=old_private)


def _merged_inputs(
    document: Any, inputs: Sequence[Mapping[str, Any]], path: Path
) -> list[Any] | None:
    """The file's `inputs` (prompts) with ours put in by id; None when nothing changes."""
    if not inputs:
        return None
    old = document.get("inputs", [])
    if not isinstance(old, list):
        raise UnreadableConfig(f"{path}: 'inputs' is not a list; it was left untouched")
    ids = {item["id"] for item in inputs}
    kept = [item for item in old if not (isinstance(item, dict) and item.get("id") in ids)]
    new = kept + [dict(item) for item in inputs]
    return None if new == old else new


def plan_uninstall(host: Host, path: Path, name: str, project: Path | None = None) -> Change:
    """The file as it would be without the entry; unchanged when there is none."""
    old_text = _read(path, project)
    document = parse(path, old_text, host)
    refuse_comments(document, path)
    servers = servers_of(document, host, path, create=False)
    if servers is None or name not in servers:
        return Change(path=path, text=old_text, changed=False)
    old_private = _holds_tokens(servers)
    removed = plain(servers.pop(name))
    inputs = document.get("inputs")
    if isinstance(inputs, list) and PROMPT_ID not in json.dumps(servers):
        kept = [i for i in inputs if not (isinstance(i, dict) and i.get("id") == PROMPT_ID)]
        if kept != inputs:
            document["inputs"] = kept
    # A removed TOML table leaves the blank line that separated it behind.
    text = render(document, host.file_format).rstrip("\n") + "\n"
    others = servers_of(document, host, path, create=False) or {}
    private = any(plain_secrets(plain(e)) for e in others.values() if isinstance(e, dict))
    return Change(
        path=path,
        text=text,
        changed=True,
        private=private,
        removed=removed if isinstance(removed, dict) else None,
        old_private=old_private,
    )


def apply(
    change: Change, *, project: Path | None = None, environ: Mapping[str, str] = os.environ
) -> Change:
    """Writes a planned change (atomically, with a 0600 backup where `plan_backup` puts it; a
    `project` folder never gets one that holds a token); an unchanged plan writes nothing, except
    narrowing the mode of a file that holds a token."""
    parts = parts_in(project, change.path) if project is not None else None
    if parts is not None and project is not None:
        return _apply_in_project(change, project, parts, environ)
    try:
        if not change.changed:
            return replace(change, old_mode=narrow(change.path) if change.private else None)
        backup = None
        if change.path.exists():
            backup = plan_backup(
                change.path,
                old_holds=change.old_private,
                new_holds=change.private,
                project=project,
                environ=environ,
            )
        to = backup.to if backup else None
        old_mode = write_atomically(change.path, change.text, private=change.private, backup=to)
        if backup and backup.stale and backup.stale != to:
            backup.stale.unlink(missing_ok=True)
    except OSError as exc:
        raise UnreadableConfig(f"cannot write {change.path} ({exc})") from None
    return replace(
        change,
        backup=to,
        old_mode=old_mode,
        backup_holds_tokens=bool(backup and backup.holds_tokens),
        dropped=backup.stale if backup and backup.stale != to else None,
    )


def _apply_in_project(
    change: Change, project: Path, parts: tuple[str, ...], environ: Mapping[str, str]
) -> Change:
    """`apply` for a file inside the project: every step by name from the project folder down,
    so a folder swapped for a link while this runs cannot send the write elsewhere."""
    try:
        if not change.changed:
            narrowed = narrow_in_project(project, parts) if change.private else None
            return replace(change, old_mode=narrowed)
        backup = None
        if read_in_project(project, parts):
            backup = plan_backup(
                change.path,
                old_holds=change.old_private,
                new_holds=change.private,
                project=project,
                environ=environ,
            )
        old_mode = write_in_project(
            project, parts, change.text, private=change.private, backup=backup
        )
    except OSError as exc:
        raise UnreadableConfig(f"cannot write {change.path} ({exc})") from None
    to = backup.to if backup else None
    return replace(
        change,
        backup=to,
        old_mode=old_mode,
        backup_holds_tokens=bool(backup and backup.holds_tokens),
        dropped=backup.stale if backup and backup.stale != to else None,
    )


def read_entries(host: Host, path: Path) -> dict[str, dict[str, Any]]:
    """Every server entry in the file as plain data, by name; none when the file is missing or
    unreadable."""
    try:
        return entries_of(host, path)
    except InstallError:
        return {}


def entries_of(host: Host, path: Path) -> dict[str, dict[str, Any]]:
    """Every server entry in the file as plain data, by name (none when it is missing);
    `UnreadableConfig`, one line, when it is not a regular file, too large, or does not parse."""
    document = parse(path, read_text(path), host)
    servers = servers_of(document, host, path, create=False)
    entries = {str(name): plain(entry) for name, entry in (servers or {}).items()}
    return {name: dict(entry) for name, entry in entries.items() if isinstance(entry, dict)}


def read_entry(host: Host, path: Path, name: str) -> dict[str, Any] | None:
    """The installed entry called `name` as plain data, or None."""
    return read_entries(host, path).get(name)
