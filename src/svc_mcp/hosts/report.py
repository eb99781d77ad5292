"""What install and uninstall tell the person on stderr: where the entry went, what to do next, and
where a token sits in plain text."""

from __future__ import annotations

import sys

from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.hosts.plan import Change
from svc_mcp.hosts.table import Host, Scope

PROG = "svc-mcp"


def report_install(
    host: Host, scope: Scope, name: str, change: Change, secrets: list[str], printed: bool
) -> None:
    if not change.changed:
        say(f"{change.path} already has this {name!r} entry; nothing changed")
    elif printed:
        say(f"would write {change.path} (--print: nothing was written)")
    else:
        say(f"installed {name!r} for {host.label} in {change.path}{backup_note(change)}")
        say(f"restart {host.label} (or reload its MCP servers) to start it; its guide: {host.docs}")
        if host.first_steps:
            say(host.first_steps)
    mode_note(change)
    if not secrets:
        return
    one = len(secrets) == 1
    stored = "would be stored" if printed else "is stored" if one else "are stored"
    them = "it" if one else "them"
    advice = (
        f"{host.label} can take it from its own environment instead: drop --http-token plain"
        if GATEWAY_TOKEN_VARIABLE in secrets
        else f"{host.label} can take {them} from its own environment instead: add --env-refs to "
        "write a reference, not the value"
        if host.takes_references
        else f"{host.label} cannot read variables from its environment, so keep this file private"
    )
    if scope == "project":
        advice += "; a project file is often committed: never commit a token"
    say(
        f"warning: {' and '.join(secrets)} {stored} in plain text in {change.path}; anyone who "
        f"can read that file can use {them}. {advice}."
    )


def mode_note(change: Change) -> None:
    if change.old_mode is not None:
        say(
            f"{change.path} was mode {change.old_mode:04o}; it is now 0600 (readable by you only) "
            "because it holds a token"
        )


def backup_note(change: Change) -> str:
    if change.backup and change.backup_holds_tokens:
        return (
            f" (the previous file held a token in plain text; it is kept as {change.backup}, "
            "readable by you only: delete it when you no longer need it)"
        )
    if change.backup:
        return f" (the previous file is kept as {change.backup})"
    if change.dropped:
        return (
            " (no backup kept: the previous file held its token in plain text; "
            f"{change.dropped} removed)"
        )
    if change.old_private and change.changed:
        return " (no backup kept: the previous file held a token in plain text, this one none)"
    return ""


def say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)
