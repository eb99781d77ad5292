"""The import structure: the parts docs/architecture.md draws and who may import whom (read from
its table, so the page and the rule cannot drift apart), no cycles, and every backend variable
named in one module only.

Every `import` counts, also one inside a function or under TYPE_CHECKING: a cycle through a lazy
import is still two modules that cannot be understood one without the other.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from svc_mcp.core.backends import backend_variables
from tests.support import ROOT

PACKAGES = {
    "portal_tools": ROOT / "src",
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


def find_cycle(graph: dict[str, set[str]] = GRAPH) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_was_read() -> None:
    assert "svc_mcp.tools.table" in GRAPH["svc_mcp.cli.main"]
    assert "server_stub.service.settings" in GRAPH["server_stub.service.cli"]


def test_no_import_cycles() -> None:
    assert find_cycle() is None, " -> ".join(find_cycle() or [])


def folder_of(module: str) -> str:
    """The folder a module sits in, as a drawing of the house shows rooms: each top-level package,
    and each folder (or loose module) of `svc_mcp`."""
    parts = module.split(".")
    return ".".join(parts[:2] if parts[0] == "svc_mcp" and len(parts) > 1 else parts[:1])


def folder_graph() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {folder_of(name): set() for name in GRAPH}
    for name, targets in GRAPH.items():
        folders[folder_of(name)] |= {folder_of(t) for t in targets} - {folder_of(name)}
    return folders


def test_no_folder_imports_one_that_imports_it_back() -> None:
    """Every arrow between folders points down: no folder imports, through any of its modules,
    a folder that imports it back (no arrow up a floor, no circle of folders), also where each
    module of a folder keeps its part's rules (`portal_tools` once held the `svc-portal` CLI)."""
    assert find_cycle(folder_graph()) is None, " -> ".join(find_cycle(folder_graph()) or [])


def test_an_arrow_back_up_would_be_found() -> None:
    GRAPH["portal_tools.tools"].add("svc_mcp.cli.commands")
    try:
        assert find_cycle(folder_graph()) is not None
    finally:
        GRAPH["portal_tools.tools"].discard("svc_mcp.cli.commands")


def test_a_cycle_would_be_found() -> None:
    GRAPH["svc_mcp.core.backends"].add("svc_mcp.cli.main")
    try:
        assert find_cycle() is not None
    finally:
        GRAPH["svc_mcp.core.backends"].discard("svc_mcp.cli.main")


@dataclass(frozen=True)
class Part:
    name: str
    folders: tuple[str, ...]
    """Module name prefixes: `svc_mcp.hosts` holds `svc_mcp.hosts` and every module below it."""
    may_import: frozenset[str]


def read_parts(page: str) -> dict[str, Part]:
    """The parts table of docs/architecture.md, between its `parts: begin` and `end` markers."""
    table = page.split("<!-- parts: begin -->")[1].split("<!-- parts: end -->")[0]
    parts = {}
    for line in table.strip().splitlines()[2:]:  # below the header and its rule
        name, folders, may_import = (cell.strip() for cell in line.strip("|").split("|"))
        parts[name] = Part(
            name,
            tuple(folder.strip(" `") for folder in folders.split(",")),
            frozenset(part.strip() for part in may_import.split(",") if part.strip()),
        )
    return parts


PARTS = read_parts(ARCHITECTURE.read_text(encoding="utf-8"))


def under(module: str, folder: str) -> bool:
    return module == folder or module.startswith(f"{folder}.")


def part_of(module: str) -> str:
    """The part whose folder is the longest prefix of `module`'s name."""
    held = [
        (len(folder), part.name)
        for part in PARTS.values()
        for folder in part.folders
        if under(module, folder)
    ]
    assert held, f"{module} is in no part: place it in {ARCHITECTURE}"
    return max(held)[1]


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
    assert {"core", "tools", "serve", "hosts", "demo", "cli", "shared", "stubs"} == set(PARTS)
    assert PARTS["stubs"].may_import == {"shared"}
    assert part_of("svc_mcp.hosts.doctor") == "hosts"
    assert part_of("svc_mcp.cli.portal") == "cli"
    assert part_of("portal_tools.tools") == "tools"
    for part in PARTS.values():
        assert part.may_import <= set(PARTS), part.name


def test_each_folder_is_named_once() -> None:
    folders = [folder for part in PARTS.values() for folder in part.folders]
    assert len(folders) == len(set(folders))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_is_in_a_part(name: str) -> None:
    assert part_of(name) in PARTS


def test_svc_mcp_holds_only_its_part_folders() -> None:
    """A module sits in its part's folder: beside the folders, the package holds only its entry."""
    loose = {
        name
        for name, path in MODULES.items()
        if name.count(".") == 1 and name.startswith("svc_mcp.") and path.name != "__init__.py"
    }
    assert loose == {"svc_mcp.__main__"}
    folders = {name for name in MODULES if name.count(".") == 1 and name.startswith("svc_mcp.")}
    named = {folder for part in PARTS.values() for folder in part.folders}
    assert folders - {"svc_mcp.__main__"} <= named


def test_the_wheel_ships_the_four_packages() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert sorted(Path(package).name for package in shipped) == sorted(PACKAGES)


def test_each_part_imports_only_what_the_page_allows() -> None:
    assert forbidden_imports() == []


@pytest.mark.parametrize(
    ("importer", "imported", "found"),
    [
        ("server_stub.serve", "svc_mcp.core.client", "(stubs) imports svc_mcp.core.client (core)"),
        (
            "svc_mcp.core.calls",
            "svc_mcp.serve.server",
            "(core) imports svc_mcp.serve.server (serve)",
        ),
        (
            "svc_mcp.serve.gateway.app",
            "svc_mcp.hosts.table",
            "(serve) imports svc_mcp.hosts.table (hosts)",
        ),
    ],
)
def test_a_forbidden_import_would_be_found(importer: str, imported: str, found: str) -> None:
    GRAPH[importer].add(imported)
    try:
        assert forbidden_imports() == [f"{importer} {found}"]
    finally:
        GRAPH[importer].discard(imported)


def test_nothing_in_the_product_but_the_demo_names_the_stubs() -> None:
    """Not by import, nor by `find_spec`, a path or a word: an install without the stubs works."""
    naming = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "src").rglob("*"))
        if path.is_file()
        and path.suffix != ".pyc"
        and not under(".".join(path.relative_to(ROOT / "src").parts), "svc_mcp.demo")
        and "server_stub" in path.read_text(encoding="utf-8")
    ]
    assert naming == []


@pytest.mark.parametrize("variable", backend_variables())
def test_each_backend_variable_is_named_in_one_client_module(variable: str) -> None:
    naming = [
        name
        for name, path in MODULES.items()
        if not name.startswith(("server_stub", SHARED))
        and re.search(rf"\b{variable}\b", path.read_text(encoding="utf-8"))
    ]
    assert naming == ["svc_mcp.core.settings"]
