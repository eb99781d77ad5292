"""Doctor's findings: one per check, shown as a rich line on a terminal or as JSON lines."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console
from rich.text import Text

from svc_mcp.core.errors import CallError
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.safe_text import safe_json, visible

Status = Literal["ok", "info", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    message: str
    kind: FailureKind | None = None
    """For a failure: its kind, which sets the exit code."""
    data: Mapping[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        kind = {"kind": self.kind} if self.kind else {}
        return {
            "check": self.check,
            "status": self.status,
            "message": self.message,
            **kind,
            **self.data,
        }


def failure(check: str, kind: FailureKind, message: str, **data: object) -> Finding:
    return Finding(check, "fail", message, kind, data)


def failed(check: str, error: CallError) -> Finding:
    if error.retry_after is not None:
        return failure(check, error.kind, str(error), retry_after=error.retry_after)
    return failure(check, error.kind, str(error))


def exit_code(findings: Sequence[Finding]) -> int:
    """0 when nothing failed, else the exit code of the first failure's kind."""
    return next((f.kind.exit_code for f in findings if f.kind), 0)


_MARKS: dict[Status, tuple[str, str]] = {
    "ok": ("✓", "green"),
    "info": ("·", "cyan"),
    "warn": ("!", "yellow"),
    "fail": ("✗", "bold red"),
}


def print_findings(findings: Sequence[Finding], *, as_json: bool) -> None:
    """JSON lines (one object per finding) unless on a terminal; there, one rich line each."""
    if as_json or not sys.stdout.isatty():
        for finding in findings:
            print(safe_json(finding.as_json()))
        return
    render(findings, Console(highlight=False))


def render(findings: Sequence[Finding], console: Console) -> None:
    for finding in findings:
        mark, style = _MARKS[finding.status]
        label = finding.data.get("environment")
        where = f" ({visible(str(label))})" if label else ""
        # Every part may quote a file someone else wrote (an entry's name, its URL): a line end
        # in it would forge a line of its own, an escape sequence would rewrite the terminal.
        line = Text.assemble(
            (f"{mark} ", style),
            (visible(finding.check), "bold"),
            where,
            "  ",
            visible(finding.message),
        )
        console.print(line, soft_wrap=True)
    failures = sum(1 for finding in findings if finding.kind)
    verdict = (
        Text("everything needed works", "green")
        if not failures
        else Text(f"{failures} needed check(s) failed: fix the lines marked ✗", "bold red")
    )
    console.print(verdict)
