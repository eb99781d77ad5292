"""The view documents as built: within budget, locked down by their own CSP (the inline script
and style pinned by hash, nothing else allowed), drawing with the dashboard's own chart code (the
product's copy, the same bytes as the stub's), built from an install of the product alone, and
only ever on a list read."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from svc_mcp.serve import views
from svc_mcp.tools.table import TOOLS
from tests.support import ROOT
from tests.views.conftest import VIEW_TOOLS

DASHBOARD_CHART = ROOT / "server_stub" / "service" / "static" / "chart.js"
PRODUCT = ("svc_mcp", "portal_tools", "svc_serving")
"""The wheel's packages but the stubs: what a user who never runs a stub still needs."""


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


def test_the_products_chart_is_the_dashboards() -> None:
    """One chart in two places: the product serves its own copy, the stub's dashboard its own."""
    assert (views.ASSETS / "chart.js").read_bytes() == DASHBOARD_CHART.read_bytes()


@pytest.mark.e2e
def test_the_views_are_built_from_an_install_of_the_product_alone(tmp_path: Path) -> None:
    """The product's packages copied alone (as a wheel without the stubs installs them), and
    nothing of the checkout on the path: the documents are built all the same."""
    for package in PRODUCT:
        shutil.copytree(ROOT / "src" / package, tmp_path / package)
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        sys.path[:] = [{str(tmp_path)!r}] + [
            p for p in sys.path if p and not p.startswith({str(ROOT)!r})
        ]
        assert importlib.util.find_spec("server_stub") is None
        from svc_mcp.serve import views
        from svc_mcp.tools.table import TOOLS
        assert views.__file__.startswith({str(tmp_path)!r}), views.__file__
        print(sorted(views.view_documents(TOOLS)))
        """
    )
    shown = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == str(sorted(views.view_documents(TOOLS)))


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
