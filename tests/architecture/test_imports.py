"""The import structure: no cycles, the client side independent of the stub servers, the client
core (svc_client) below the backends' rows (portal_tools, service_tools) below the faces, and every
backend variable named in one module only.

Every `import` counts, also one inside a function or under TYPE_CHECKING: a cycle through a lazy
import is still two modules that cannot be understood one without the other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_client.backends import backend_variables
from tests.support import ROOT

PACKAGES = {
    "svc_client": ROOT / "src",
    "portal_tools": ROOT / "src",
    "service_tools": ROOT / "src",
    "svc_mcp": ROOT / "src",
    "svc_serving": ROOT / "src",
    "server_stub": ROOT,
}
SHARED = "svc_serving"
"""What both sides may import: the HTTP serving parts the stubs and the gateway share."""
DEMO_LAUNCHER = {"svc_mcp.demo", "svc_mcp.demo_stubs"}
"""The only client modules that start stub servers, and so may import them."""


def project_modules() -> dict[str, Path]:
    modules = {}
    for package, root in PACKAGES.items():
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


MODULES = project_modules()


def imports_of(name: str, path: Path) -> Iterator[str]:
    """The project modules `name` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from a import b` imports a.b when b is a module, else a.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


GRAPH = {name: set(imports_of(name, path)) for name, path in MODULES.items()}


def find_cycle() -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(GRAPH):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_was_read() -> None:
    assert "svc_mcp.table" in GRAPH["svc_mcp.cli"]
    assert "server_stub.service.settings" in GRAPH["server_stub.service.cli"]


def test_no_import_cycles() -> None:
    assert find_cycle() is None, " -> ".join(find_cycle() or [])


def test_a_cycle_would_be_found() -> None:
    GRAPH["svc_client.backends"].add("svc_mcp.cli")
    try:
        assert find_cycle() is not None
    finally:
        GRAPH["svc_client.backends"].discard("svc_mcp.cli")


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not n.startswith("server_stub")))
def test_the_client_does_not_depend_on_the_stubs(name: str) -> None:
    stubs = sorted(target for target in GRAPH[name] if target.startswith("server_stub"))
    assert not stubs or name in DEMO_LAUNCHER, f"{name} imports {stubs}"


def test_the_stubs_do_not_depend_on_the_client() -> None:
    for name, targets in GRAPH.items():
        if name.startswith("server_stub"):
            assert not {t for t in targets if not t.startswith(("server_stub", SHARED))}, name


def test_the_shared_part_depends_on_neither_side() -> None:
    for name, targets in GRAPH.items():
        if name.startswith(SHARED):
            assert not {t for t in targets if not t.startswith(SHARED)}, name


@pytest.mark.parametrize("variable", backend_variables())
def test_each_backend_variable_is_named_in_one_client_module(variable: str) -> None:
    naming = [
        name
        for name, path in MODULES.items()
        if not name.startswith(("server_stub", SHARED))
        and re.search(rf"\b{variable}\b", path.read_text(encoding="utf-8"))
    ]
    assert naming == ["svc_client.settings"]


CORE = "svc_client"
ROWS = ("portal_tools", "service_tools")


def test_the_client_core_depends_on_no_backend_rows_and_no_face() -> None:
    for name, targets in GRAPH.items():
        if name.startswith(CORE):
            assert not {t for t in targets if not t.startswith(CORE)}, name


def test_the_backend_rows_depend_only_on_the_core() -> None:
    for name, targets in GRAPH.items():
        if name.startswith(ROWS):
            package = name.partition(".")[0]
            assert not {t for t in targets if not t.startswith((CORE, package))}, name
