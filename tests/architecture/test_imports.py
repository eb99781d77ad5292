"""The import structure: the parts docs/architecture.md draws and who may import whom (read from
its table, so the page and the rule cannot drift apart), no cycles, and every backend variable
named in one module only.

Every `import` counts, also one inside a function or under TYPE_CHECKING: a cycle through a lazy
import is still two modules that cannot be understood one without the other.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from svc_client.backends import backend_variables
from tests.support import ROOT

PACKAGES = {
    "portal_tools": ROOT / "src",
    "service_tools": ROOT / "src",
    "svc_client": ROOT / "src",
    "svc_mcp": ROOT / "src",
    "svc_serving": ROOT / "src",
    "server_stub": ROOT,
}
SHARED = "svc_serving"
"""What both sides may import: the HTTP serving parts the stubs and the gateway share."""
ARCHITECTURE = ROOT / "docs" / "architecture.md"


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


@dataclass(frozen=True)
class Part:
    name: str
    modules: tuple[str, ...]
    """Module names, or patterns such as `server_stub.*`."""
    may_import: frozenset[str]

    def holds(self, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, pattern) for pattern in self.modules)


def read_parts(page: str) -> dict[str, Part]:
    """The parts table of docs/architecture.md, between its `parts: begin` and `end` markers."""
    table = page.split("<!-- parts: begin -->")[1].split("<!-- parts: end -->")[0]
    parts = {}
    for line in table.strip().splitlines()[2:]:  # below the header and its rule
        name, modules, may_import = (cell.strip() for cell in line.strip("|").split("|"))
        parts[name] = Part(
            name,
            tuple(module.strip(" `") for module in modules.split(",")),
            frozenset(part.strip() for part in may_import.split(",") if part.strip()),
        )
    return parts


PARTS = read_parts(ARCHITECTURE.read_text(encoding="utf-8"))


def part_of(module: str) -> str:
    (part,) = [part.name for part in PARTS.values() if part.holds(module)]
    return part


def forbidden_imports() -> list[str]:
    found = []
    for name, targets in GRAPH.items():
        part = PARTS[part_of(name)]
        for target in sorted(targets):
            other = part_of(target)
            if other != part.name and other not in part.may_import:
                found.append(f"{name} ({part.name}) imports {target} ({other})")
    return found


def test_the_parts_table_was_read() -> None:
    assert {"client core", "tool table", "host table", "MCP face", "stubs"} <= set(PARTS)
    assert PARTS["stubs"].may_import == {"shared serving"}
    for part in PARTS.values():
        assert part.may_import <= set(PARTS), part.name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_is_in_exactly_one_part(name: str) -> None:
    holding = [part.name for part in PARTS.values() if part.holds(name)]
    assert len(holding) == 1, f"{name} is in {holding or 'no part'}: place it in {ARCHITECTURE}"


def test_each_part_imports_only_what_the_page_allows() -> None:
    assert forbidden_imports() == []


def test_a_forbidden_import_would_be_found() -> None:
    GRAPH["server_stub.serve"].add("svc_client.client")
    try:
        assert forbidden_imports() == [
            "server_stub.serve (stubs) imports svc_client.client (client core)"
        ]
    finally:
        GRAPH["server_stub.serve"].discard("svc_client.client")


@pytest.mark.parametrize("variable", backend_variables())
def test_each_backend_variable_is_named_in_one_client_module(variable: str) -> None:
    naming = [
        name
        for name, path in MODULES.items()
        if not name.startswith(("server_stub", SHARED))
        and re.search(rf"\b{variable}\b", path.read_text(encoding="utf-8"))
    ]
    assert naming == ["svc_client.settings"]
