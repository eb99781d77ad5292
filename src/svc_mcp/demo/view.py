"""How `svc-mcp demo` shows what it does: rich tables, panels and a live progress display on a
terminal; plain, aligned text lines otherwise (CI, a pipe, a file), flushed as they come.

Both views take the same calls, so the demo itself never asks where its output goes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

Advance = Callable[[], None]


class View(Protocol):
    def step(self, description: str, total: int) -> contextlib.AbstractContextManager[Advance]:
        """A unit of work with `total` parts; the context yields a function to count one."""
        ...

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None: ...

    def panel(self, title: str, lines: Sequence[str]) -> None: ...

    def block(self, title: str, text: str, language: str | None = None) -> None:
        """Text to copy as it is (shell lines, JSON): never wrapped or framed."""
        ...

    def line(self, text: str) -> None: ...

    def finish(self) -> None:
        """No more steps: stop any live display."""
        ...


class PlainView:
    """Lines of text: `== title` opens a section, rows are indented and aligned."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or _print_flushed

    @contextlib.contextmanager
    def step(self, description: str, total: int) -> Iterator[Advance]:
        self._write(f"-- {description}")
        yield lambda: None

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self._write(f"== {title}")
        cells = [list(columns), *(list(row) for row in rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
        for row in cells:
            padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
            self._write(("  " + "  ".join(padded)).rstrip())

    def panel(self, title: str, lines: Sequence[str]) -> None:
        self._write(f"== {title}")
        for text in lines:
            self._write(f"  {text}")

    def block(self, title: str, text: str, language: str | None = None) -> None:
        self._write(f"== {title}")
        self._write(text.rstrip("\n"))

    def line(self, text: str) -> None:
        self._write(text)

    def finish(self) -> None:
        pass


class RichView:
    """Tables and panels printed above a live progress display of the steps."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self._progress.start()

    @contextlib.contextmanager
    def step(self, description: str, total: int) -> Iterator[Advance]:
        task = self._progress.add_task(description, total=total)
        yield lambda: self._progress.advance(task)
        self._progress.update(task, completed=total)

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, title_style="bold")
        for index, column in enumerate(columns):
            table.add_column(column, style="cyan" if index == 0 else None, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        self._console.print(table)

    def panel(self, title: str, lines: Sequence[str]) -> None:
        body = Text("\n".join(lines))
        self._console.print(Panel(body, title=title, title_align="left", expand=False))

    def block(self, title: str, text: str, language: str | None = None) -> None:
        self._console.print(Rule(title, align="left"))
        if language:
            self._console.print(Syntax(text.rstrip("\n"), language, word_wrap=False))
        else:
            self._console.print(Text(text.rstrip("\n")), soft_wrap=True)

    def line(self, text: str) -> None:
        self._console.print(Text(text))

    def finish(self) -> None:
        self._progress.stop()


@contextlib.contextmanager
def open_view(terminal: bool | None = None) -> Iterator[View]:
    """A rich view on a terminal, a plain one otherwise; its live display ends with the block."""
    if terminal is None:
        terminal = sys.stdout.isatty()
    if not terminal:
        yield PlainView()
        return
    view = RichView(Console(highlight=False))
    try:
        yield view
    finally:
        view.finish()


def _print_flushed(text: str) -> None:
    print(text, flush=True)


# ------------------------------------------------------------------------------ summaries

_PREFERRED = (
    "id",
    "name",
    "title",
    "symbol",
    "date",
    "mode",
    "status",
    "role",
    "kind",
    "side",
    "quantity",
    "equity",
    "net_pnl",
    "utilization",
    "subject",
    "decision",
    "trail",
    "level",
    "message",
)
_FIELDS = 4
_WIDTH = 28


def summarize(structured: Mapping[str, Any] | None) -> str:
    """One line about a tool's structured result: how many records and the first one's key
    fields for a list; the key fields for an object."""
    if structured is None:
        return "(no structured result)"
    # The label of text written by others (svc_mcp.serve.untrusted) is not a field to show.
    structured = {name: value for name, value in structured.items() if name != "untrusted"}
    records = structured.get("result")
    if isinstance(records, list) and set(structured) <= {"result", "next_cursor"}:
        more = ", more on the next page" if "next_cursor" in structured else ""
        count = f"{len(records)} record{'' if len(records) == 1 else 's'}{more}"
        first = records[0] if records else None
        return f"{count}; first: {brief(first)}" if isinstance(first, dict) else count
    return brief(structured)


def brief(record: Mapping[str, Any]) -> str:
    """A few `field=value` pairs, the telling fields first, long values cut short."""
    names = [name for name in _PREFERRED if name in record]
    names += [name for name in record if name not in names]
    shown = [f"{name}={_short(record[name])}" for name in names[:_FIELDS]]
    return " ".join(shown)


def _short(value: Any) -> str:
    if isinstance(value, list):
        return f"[{len(value)} item{'' if len(value) == 1 else 's'}]"
    if isinstance(value, dict):
        return "{...}"
    text = str(value)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."
