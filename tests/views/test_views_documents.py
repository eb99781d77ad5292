"""The view documents as built: within budget, locked down by their own CSP (the inline script
and style pinned by hash, nothing else allowed), drawing with the dashboard's own chart code, and
only ever on a list read."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re

import pytest

from svc_mcp.serve import views
from svc_mcp.tools.table import TOOLS
from tests.support import ROOT
from tests.views.conftest import VIEW_TOOLS

DASHBOARD_CHART = ROOT / "server_stub" / "service" / "static" / "chart.js"


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_one_document_per_view_tool_each_within_budget() -> None:
    documents = views.view_documents(TOOLS)
    assert {view.tool for view in documents.values()} == VIEW_TOOLS
    for uri, view in documents.items():
        assert uri == f"ui://svc-mcp/{view.tool}"
        assert len(view.html.encode()) <= views.BUDGET_BYTES


@pytest.mark.parametrize("tool", sorted(VIEW_TOOLS))
def test_the_policy_allows_only_the_inline_script_and_style(tool: str) -> None:
    html = views.view_documents(TOOLS)[views.view_uri(tool)].html
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    (script,) = re.findall(r"<script type=\"module\">(.*?)</script>", html, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", html, re.S)
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives == {
        "default-src": "'none'",
        "script-src": sha256(script),
        "style-src": sha256(style),
        "connect-src": "'none'",
        "frame-src": "'none'",
        "form-action": "'none'",
        "base-uri": "'none'",
    }
    # The one URL in a document is SVG's namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}


def test_the_pnl_view_draws_with_the_dashboards_chart_code() -> None:
    html = views.view_documents(TOOLS)[views.view_uri("get_pnl")].html
    chart = DASHBOARD_CHART.read_text().replace("export function", "function")
    assert chart in html


def test_a_view_only_on_a_list_read() -> None:
    write = next(spec for spec in TOOLS if not spec.hints.read_only)
    one_object = next(spec for spec in TOOLS if spec.name == "get_system")
    for row in (write, one_object):
        with pytest.raises(ValueError, match="a view is one of"):
            views.view_documents([dataclasses.replace(row, view="table")])


def test_a_document_over_budget_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "BUDGET_BYTES", 10_000)
    with pytest.raises(ValueError, match="the budget is 10,000"):
        views.view_documents(TOOLS)
