"""MCP Apps views: one self-contained `ui://` HTML document per tool row that names a `view`.

A document is built once, before serving, from `view_assets/`, the product's own files: its
`chart.js` is the data service dashboard's chart module, kept byte for byte the same as the
stub's (tests/views/test_views_documents.py), so the P&L is drawn by one piece of code in both
places. Its script and styles are inline and pinned by hash in its Content-Security-Policy,
which allows no connection, frame, form or base URI: the view talks only to its host, by
postMessage. Each document stays under `BUDGET_BYTES`.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

from svc_mcp.core.toolspec import ToolSpec

VIEW_KINDS = frozenset({"pnl", "table"})
"""What a row's `view` may name: the P&L chart over its table, or a table of a list's records."""

BUDGET_BYTES = 60_000
"""The most one view document may weigh (UTF-8), so a host loads it at once."""

ASSETS = Path(__file__).parent / "view_assets"


@dataclass(frozen=True)
class ViewDocument:
    """The `ui://` resource that shows one tool's result."""

    uri: str
    tool: str
    title: str
    html: str

    @property
    def description(self) -> str:
        return f"Shows the result of {self.tool} (MCP Apps view; no network access)."


def view_uri(tool: str) -> str:
    return f"ui://svc-mcp/{tool}"


def view_documents(specs: Sequence[ToolSpec]) -> dict[str, ViewDocument]:
    """The documents of the rows that name a view, by URI; reads the assets now, before serving."""
    documents: dict[str, ViewDocument] = {}
    if not any(spec.view for spec in specs):
        return documents
    script, style, template_text = load_assets()
    template = Template(template_text)
    for spec in specs:
        if spec.view is None:
            continue
        if spec.view not in VIEW_KINDS or not spec.hints.read_only or not spec.many:
            raise ValueError(f"{spec.name}: a view is one of {sorted(VIEW_KINDS)}, on a list")
        text = template.substitute(
            csp=_policy(script, style),
            title=html.escape(spec.title),
            tool=spec.name,
            view=spec.view,
            style=style,
            script=script,
        )
        size = len(text.encode("utf-8"))
        if size > BUDGET_BYTES:
            raise ValueError(
                f"the {spec.name} view is {size:,} bytes; the budget is {BUDGET_BYTES:,}"
            )
        documents[view_uri(spec.name)] = ViewDocument(
            view_uri(spec.name), spec.name, spec.title, text
        )
    return documents


@cache
def load_assets() -> tuple[str, str, str]:
    """The views' script (the dashboard's chart module, its exports made local, then the view's
    own script), style and page template; read once, before the process confines itself (it
    may read no file of the checkout afterwards)."""
    chart = (ASSETS / "chart.js").read_text(encoding="utf-8").replace("export function", "function")
    script = chart + "\n" + (ASSETS / "view.js").read_text(encoding="utf-8")
    style = (ASSETS / "view.css").read_text(encoding="utf-8")
    return script, style, (ASSETS / "view.html").read_text(encoding="utf-8")


def _policy(script: str, style: str) -> str:
    """Only this script and this style run; nothing is fetched, framed, posted or based."""
    return (
        "default-src 'none'; "
        f"script-src {_hash(script)}; style-src {_hash(style)}; "
        "connect-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
