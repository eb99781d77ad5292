"""A benchmark's figures travel as JSON rows (bench/_rows.py), and bench/results.md is built from
those rows alone (bench/run_all.py), whatever the benchmark printed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import ROOT

sys.path.append(str(ROOT / "bench"))  # after everything else: bench/ has names like context.py

import _rows
import run_all


def test_rows_written_by_a_benchmark_make_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench/portal_stub.py", "--seconds", "1", "--json", "x"])
    figures = [
        _rows.versus("GET /api/catalog", 4222.1, 5240.2, "req/s", "bare route", ">= 0.8"),
        _rows.Figure("tools/list: whole result", 19198, "chars", target="<= 20,000"),
    ]
    _rows.write(tmp_path / "portal_stub.json", figures)
    rows = _rows.read(tmp_path / "portal_stub.json")
    assert rows[0]["command"] == "python bench/portal_stub.py --seconds 1"
    assert rows[0]["ratio"] == pytest.approx(4222.1 / 5240.2)
    text = run_all.table(rows, {})
    assert (
        "| portal_stub | GET /api/catalog | 4,222 req/s | 5,240 req/s (bare route) | 0.81 "
        "| >= 0.8 |  |"
    ) in text
    assert "| portal_stub | tools/list: whole result | 19,198 chars |  |  | <= 20,000 |  |" in text
    assert "`python bench/portal_stub.py --seconds 1`" in text
