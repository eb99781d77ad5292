"""Modules by job: no module of `src/` or `server_stub/` grows past `MAX_LINES`; one that does
has more than one job, and is split along them."""

from __future__ import annotations

import pytest

from tests.support import ROOT

MAX_LINES = 400
FOLDERS = ("src", "server_stub")


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_is_over_the_limit(folder: str) -> None:
    base = ROOT / folder
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in base.rglob("*.py")
    }
    assert sizes, f"no module found under {folder}/"
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not over, f"split these along their jobs: {over}"
