"""Every third-party module the shipped code imports is declared in pyproject.toml: a module that
merely arrives with another dependency (`httpx2` through `mcp`) can leave with its next release.

Read from the code (every `import`, also inside a function or under TYPE_CHECKING) and from the
installed distributions' own lists of the modules they provide."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

SHIPPED = [ROOT / "src", ROOT / "server_stub"]
"""What the wheel installs (the stubs too): each of its imports must be declared."""
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
OWN = {"svc_mcp", "portal_tools", "svc_serving", "server_stub"}


def requirement_name(requirement: str) -> str:
    """`pyjwt[crypto]>=2.10.1; ...` -> `pyjwt`, normalised as PEP 503 does."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group()).lower()


def declared() -> set[str]:
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    shipped_extras = [r for name, rs in extras.items() if name != "dev" for r in rs]
    return {requirement_name(r) for r in [*project["dependencies"], *shipped_extras]}


def imported_top_levels(paths: Iterable[Path]) -> Iterator[tuple[str, Path]]:
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                yield name.partition(".")[0], path


def third_party(paths: Iterable[Path]) -> dict[str, set[str]]:
    """Each imported third-party top-level module, with the files importing it."""
    found: dict[str, set[str]] = {}
    for module, path in imported_top_levels(paths):
        if module in OWN or module in sys.stdlib_module_names or module == "__future__":
            continue
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        found.setdefault(module, set()).add(str(shown))
    return found


@functools.cache
def installed() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def providers(module: str) -> set[str]:
    distributions = installed().get(module, [])
    return {requirement_name(name) for name in distributions}


IMPORTED = third_party(p for root in SHIPPED for p in sorted(root.rglob("*.py")))


def test_the_imports_were_read() -> None:
    assert {"mcp", "httpx", "pydantic", "starlette", "uvicorn"} <= set(IMPORTED)
    assert "json" not in IMPORTED


@pytest.mark.parametrize("module", sorted(IMPORTED))
def test_each_imported_module_is_declared(module: str) -> None:
    provided_by = providers(module)
    assert provided_by, f"no installed distribution provides {module}"
    assert provided_by & declared(), (
        f"{module} (from {', '.join(provided_by)}) is imported by "
        f"{', '.join(sorted(IMPORTED[module]))} but not declared in pyproject.toml"
    )


def test_an_undeclared_import_would_be_found(tmp_path: Path) -> None:
    code = tmp_path / "uses.py"
    code.write_text("def f():\n    import jsonschema\n", encoding="utf-8")
    (module,) = third_party([code])
    assert not providers(module) & declared()
