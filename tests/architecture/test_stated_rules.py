"""Rules that docstrings state, held to the code, so that a docstring cannot drift from what it
describes (one said two modules import `mcp` when eleven did).

An import counts wherever it is (inside a function too), except under `if TYPE_CHECKING:`, which
never runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.architecture.test_imports import MODULES, under

SERVER = MODULES["svc_mcp.serve.server"]
WHO_IMPORTS_MCP = re.compile(r"`mcp` is imported by these only:(.*?);", re.S)
IMPORTS_NOTHING_OF = re.compile(r"imports nothing of `([\w.]+)`")


def runtime_imports(path: Path) -> Iterator[str]:
    """Every module `path` imports when it runs (not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for statement in node.body
        for inner in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def importers_of(library: str) -> set[str]:
    return {
        name
        for name, path in MODULES.items()
        if any(under(module, library) for module in runtime_imports(path))
    }


def stated_mcp_importers() -> set[str]:
    docstring = ast.get_docstring(ast.parse(SERVER.read_text(encoding="utf-8"))) or ""
    sentence = WHO_IMPORTS_MCP.search(docstring)
    assert sentence, f"{SERVER}: the sentence on who imports `mcp` is gone"
    return set(re.findall(r"`([\w.]+)`", sentence[1]))


def test_the_modules_that_import_mcp_are_the_ones_the_server_says() -> None:
    stated = stated_mcp_importers()
    importers = importers_of("mcp")
    assert {"svc_mcp.serve.server", "svc_mcp.serve.gateway.app"} <= importers
    unsaid = {name for name in importers if not any(under(name, place) for place in stated)}
    assert not unsaid, f"these import `mcp` and the server's docstring does not say so: {unsaid}"
    stale = {place for place in stated if not any(under(name, place) for name in importers)}
    assert not stale, f"the server's docstring names these, which import no `mcp`: {stale}"


SAYS_IMPORTS_NOTHING_OF = sorted(
    (name, library)
    for name, path in MODULES.items()
    for library in IMPORTS_NOTHING_OF.findall(path.read_text(encoding="utf-8"))
)


def test_the_statements_were_read() -> None:
    assert ("svc_mcp.serve.caller", "mcp") in SAYS_IMPORTS_NOTHING_OF
    assert stated_mcp_importers() >= {"svc_mcp.serve"}


@pytest.mark.parametrize(("name", "library"), SAYS_IMPORTS_NOTHING_OF)
def test_a_module_that_says_it_imports_nothing_of_a_library_does_not(
    name: str, library: str
) -> None:
    found = [module for module in runtime_imports(MODULES[name]) if under(module, library)]
    assert found == [], f"{name} says it imports nothing of `{library}`, and imports {found}"


def test_an_import_under_type_checking_does_not_count(tmp_path: Path) -> None:
    code = tmp_path / "m.py"
    code.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mcp\n"
        "def f():\n    from httpx import Client\n",
        encoding="utf-8",
    )
    assert set(runtime_imports(code)) == {"typing", "httpx"}


STDIO_ENTRY = ("svc_mcp.serve.server", "svc_mcp.serve.confinement")
"""What `svc-mcp` (stdio) imports of the MCP face (svc_mcp.cli.main's `_serve`)."""


def runtime_closure(names: tuple[str, ...]) -> set[str]:
    """The project modules `names` load when they run, through every runtime import."""
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for module in runtime_imports(MODULES[name]):
            pending += [m for m in (module, *_submodules_named(name, module)) if m in MODULES]
    return seen


def _submodules_named(name: str, module: str) -> list[str]:
    """`from svc_mcp.serve import untrusted` loads svc_mcp.serve.untrusted: the names imported."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return [
        f"{module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    ]


def test_the_stdio_server_loads_nothing_of_the_gateway_or_oauth() -> None:
    """docs/architecture.md: the stdio path reads no OAuth settings and builds no gateway."""
    loaded = runtime_closure(STDIO_ENTRY)
    assert "svc_mcp.serve.spans" in loaded  # the closure was followed
    assert "svc_mcp.serve.untrusted" in loaded
    beyond = sorted(
        name
        for name in loaded
        if under(name, "svc_mcp.serve.oauth") or under(name, "svc_mcp.serve.gateway")
    )
    assert beyond == []
