"""Public APIs only, of every library (each dependency and the standard library), outside one fence
module per library.

A name of a library counts as private when a part of it starts with an underscore
(`typer._click`, `server._lowlevel_server`, `argparse._SubParsersAction`, `sys.modules["httpx._main"]`),
or, for the libraries in PUBLIC, when it comes from a module not listed there: the modules they
document for users. An internal class in a module without an underscore (uvicorn's
`protocols.http.httptools_impl`) is private too. So is rewiring a library object: overriding a
method of a library class in a subclass (`Router.app`), or setting an attribute of a library
object (`app.router = ...`), also of one a project function returns (`build_server(...)`'s app).
A library object is followed through imports, assignments, `with ... as`, parameter annotations
and the return annotations of the project's own functions. Where no public route exists, the use
lives in the library's fence module, and tests/architecture/test_fences.py fails clearly when an
upgrade changes what the fence relies on.
"""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.architecture.test_imports import MODULES, PACKAGES

PUBLIC = {
    "mcp": {
        "mcp",
        "mcp.types",
        "mcp.client.streamable_http",
        "mcp.server",
        # The resource server's pieces (TokenVerifier, AccessToken; ProtectedResourceMetadata),
        # in the SDK's docs/run/authorization.md and docs/client/oauth-clients.md.
        "mcp.server.auth.provider",
        "mcp.shared.auth",
        "mcp.server.apps",
        "mcp.server.request_state",
        "mcp.server.stdio",
        "mcp.server.transport_security",
    },
    "typer": {"typer"},
    "uvicorn": {"uvicorn"},
    "starlette": {
        "starlette.applications",
        "starlette.exceptions",
        "starlette.middleware",
        "starlette.requests",
        "starlette.responses",
        "starlette.routing",
        "starlette.types",
    },
}
"""The documented modules this project imports; a module not listed here is reviewed before use:
listed when the library documents it, or kept in the fence."""
DOCUMENTED = {
    "mcp.server.Server.middleware": "the low-level server's list of request middleware",
    "mcp.ClientSession.send_request": "the one method every client request goes through",
    "argparse.Action.__call__": "how a custom action acts (argparse docs, Action classes)",
    "argparse.ArgumentParser.error": "argparse docs: override it to change how errors show",
    "http.server.BaseHTTPRequestHandler.log_message": "its docs: override it to change logging",
    "logging.getLogger.propagate": "a logger's documented switch",
    "logging.logThreads": "the logging docs' Optimization table",
    "logging.logProcesses": "the logging docs' Optimization table",
    "logging.logMultiprocessing": "the logging docs' Optimization table",
    "sqlite3.Connection.row_factory": "sqlite3 docs: how rows are returned",
    "starlette.applications.Starlette.state.authenticator": "Starlette's documented app.state",
    "starlette.applications.Starlette.state.passkeys": "Starlette's documented app.state",
    "ctypes.CDLL.syscall.restype": "ctypes docs: a foreign function's return type",
    "os._exit": "a public function despite its underscore (os docs)",
}
"""Rewiring (or an underscored name) that a library documents as its way to be used: reviewed,
not internals. Each with where it is documented."""
SMALL_REACHES = "svc_serving.fence"
FENCES = {
    "uvicorn": "svc_serving.bounded",
    "starlette": "server_stub.routing",
    "argparse": SMALL_REACHES,
    "http": SMALL_REACHES,
    "logging": SMALL_REACHES,
    "httpx": SMALL_REACHES,
}
"""Per library, the one module that may use its internals (no public route exists): uvicorn's and
Starlette's have their own; the few small reaches of the rest share one."""


def library_of(module: str) -> str | None:
    """The library a dotted name belongs to: every top-level module but the project's own."""
    top = module.partition(".")[0]
    return None if top in PACKAGES or top in {"__future__", ""} else top


def private_names(
    source: str, module: str = "", returns: Mapping[str, str] | None = None
) -> Iterator[str]:
    """Each private name of a library that `source` (the module `module`) uses, as its dotted
    path. `returns`: the project functions that return a library object (`returns_of`), so that
    `app = build_app(); app.router.x = ...` is seen as setting an attribute of that object."""
    tree = ast.parse(source)
    bound = library_names(tree)
    project = _project_names(tree, module)
    for name, path in project.items():
        if path in (returns or {}):
            bound[name] = (returns or {})[path]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if library_of(alias.name):
                    yield from _if_private(alias.name, alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and library_of(node.module):
            yield from _if_private(node.module, node.module)
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield f"{node.module}.{alias.name}"
    _follow_bindings(tree, bound)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            root, chain = _root_and_chain(node)
            if root in bound:
                yield ".".join([bound[root], *chain])
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                root, chain = _root_and_chain(target)
                if isinstance(target, ast.Attribute) and root in bound:
                    yield ".".join([bound[root], *chain])
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                root, chain = _root_and_chain(base)
                if root not in bound:
                    continue
                for item in node.body:
                    if (
                        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                        and item.name != "__init__"
                        and _overrides(".".join([bound[root], *chain]), item.name)
                    ):
                        yield ".".join([bound[root], *chain, item.name])
        elif isinstance(node, ast.Call) and _names_a_module(node):
            (argument, *_) = node.args
            named = argument.value if isinstance(argument, ast.Constant) else None
            if isinstance(named, str) and library_of(named):
                yield from _if_private(named, named)
        elif (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "sys.modules"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and library_of(node.slice.value)
        ):
            yield from _if_private(node.slice.value, node.slice.value)


def library_names(tree: ast.Module) -> dict[str, str]:
    """Each name the module's imports bind to a library, with the dotted path it stands for."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if library_of(alias.name):
                    top = alias.name.partition(".")[0]
                    bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and library_of(node.module):
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


HANDS_BACK_OURS = frozenset({"contextvars.ContextVar.get"})
"""Library calls that return the project's own object, the one it put there: not followed."""


def _follow_bindings(tree: ast.Module, bound: dict[str, str]) -> None:
    """A variable assigned from a library object stands for it too (`server = MCPServer(...)`,
    `with socket.create_connection(...) as sock`), and so does a parameter annotated with a
    library type (`parser: argparse.ArgumentParser`)."""
    for _ in range(3):
        for node in ast.walk(tree):
            for target, value in _bindings(node):
                root, chain = _root_and_chain(value)
                if root in bound and ".".join([bound[root], *chain]) not in HANDS_BACK_OURS:
                    bound[target] = ".".join([bound[root], *chain])


def _project_names(tree: ast.Module, module: str) -> dict[str, str]:
    """Each name bound to a function of the project: imported, or defined in `module` itself."""
    names = {
        node.name: f"{module}.{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not library_of(node.module):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def returns_of(modules: Mapping[str, Path]) -> dict[str, str]:
    """Each project function whose return annotation is a library type, with that type."""
    found = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = library_names(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
                root, chain = _root_and_chain(_yielded(node.returns))
                if root in bound:
                    found[f"{name}.{node.name}"] = ".".join([bound[root], *chain])
    return found


def _yielded(annotation: ast.expr) -> ast.expr:
    """What a generator (a context manager's function) yields, else the annotation itself."""
    if (
        isinstance(annotation, ast.Subscript)
        and ast.unparse(annotation.value).rpartition(".")[2] in GENERATORS
    ):
        element = annotation.slice
        return element.elts[0] if isinstance(element, ast.Tuple) else element
    return annotation


GENERATORS = {"Iterator", "Generator", "AsyncIterator", "AsyncGenerator"}


def _bindings(node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(name, what it stands for) for each name `node` binds to a value or a type."""
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value
    elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
        yield node.optional_vars.id, node.context_expr
    elif isinstance(node, ast.arg) and node.annotation is not None:
        yield node.arg, node.annotation


def _names_a_module(call: ast.Call) -> bool:
    """`sys.modules.setdefault("m", ...)`, `sys.modules.get("m")`, `importlib.import_module("m")`:
    a library module reached by its name as a string."""
    callee = ast.unparse(call.func)
    return bool(call.args) and (
        callee.startswith("sys.modules.") or callee in {"importlib.import_module", "import_module"}
    )


def _overrides(path: str, name: str) -> bool:
    """Whether the library class at `path` has `name` already (a subclass's method of that name
    replaces it); True when the class cannot be found, so an unknown base is looked at."""
    module, _, attribute = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError):
        return True
    return hasattr(found, name)


def _if_private(module: str, path: str) -> Iterator[str]:
    library = library_of(module)
    assert library is not None
    underscored = any(part.startswith("_") for part in module.split("."))
    if underscored or (library in PUBLIC and module not in PUBLIC[library]):
        yield path


def _root_and_chain(node: ast.expr) -> tuple[str | None, list[str]]:
    """The name an attribute chain starts from, and the attributes after it (`a.b().c._d`:
    `a`, `[b, c, _d]`)."""
    chain: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute | ast.Call | ast.Subscript):
        if isinstance(current, ast.Attribute):
            chain.insert(0, current.attr)
            current = current.value
        else:
            current = current.func if isinstance(current, ast.Call) else current.value
    return (current.id if isinstance(current, ast.Name) else None), chain


RETURNS = returns_of(MODULES)


@functools.cache
def uses(name: str, path: Path) -> set[str]:
    return set(private_names(path.read_text(encoding="utf-8"), name, RETURNS))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_library_name_outside_the_fences(name: str) -> None:
    found = {
        path
        for path in uses(name, MODULES[name]) - set(DOCUMENTED)
        if FENCES.get(library_of(path) or "") != name
    }
    assert not found, (
        f"{name} uses {sorted(found)}: use the library's public API, or move the use into "
        f"the library's fence module ({FENCES}) with a test in test_fences.py"
    )


@pytest.mark.parametrize("fence", sorted(set(FENCES.values())))
def test_each_fence_uses_the_internals_of_exactly_its_libraries(fence: str) -> None:
    used = {library_of(path) for path in uses(fence, MODULES[fence]) - set(DOCUMENTED)}
    fenced = {library for library, module in FENCES.items() if module == fence}
    assert used == fenced, f"{fence} reaches into {used}; it is the fence of {fenced}"


def test_each_documented_use_is_still_made() -> None:
    """A reviewed exception that the code no longer makes is struck from DOCUMENTED."""
    made = set().union(*(uses(name, path) for name, path in MODULES.items()))
    assert set(DOCUMENTED) <= made, sorted(set(DOCUMENTED) - made)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from typer._click import exceptions", {"typer._click"}),
        ("import typer._click as click", {"typer._click"}),
        (
            "from mcp.server import MCPServer\nMCPServer()._lowlevel_server",
            {"mcp.server.MCPServer._lowlevel_server"},
        ),
        ("import mcp.server\nmcp.server._otel", {"mcp.server._otel"}),
        (
            "from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase",
            {"mcp.server.mcpserver.utilities.func_metadata"},
        ),
        (
            "from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol",
            {"uvicorn.protocols.http.httptools_impl"},
        ),
        ("from mcp.server import _ping", {"mcp.server._ping"}),
        (
            "from mcp.server import Server\nserver: Server = Server('x')\nserver._request_handlers",
            {"mcp.server.Server._request_handlers"},
        ),
        ("import uvicorn\nuvicorn.Config(app)\nself._head_bytes = 0", set()),
        (
            "from starlette.applications import Starlette\napp = Starlette()\napp.router = r",
            {"starlette.applications.Starlette.router"},
        ),
        (
            "from starlette.routing import Router\nclass R(Router):\n"
            "    def __init__(self): ...\n    async def app(self, s, r, w): ...",
            {"starlette.routing.Router.app"},
        ),
        ("from starlette.routing import Route\nRoute('/', endpoint)", set()),
        ("from mcp.types import Tool\nfrom mcp.server import Server", set()),
        (
            "import argparse\ndef f(parser: argparse.ArgumentParser):\n    parser._actions",
            {"argparse.ArgumentParser._actions"},
        ),
        ("import sys\nsys.modules.setdefault('httpx._main', None)", {"httpx._main"}),
        ("import sys\nsys.modules['pydantic._internal'] = None", {"pydantic._internal"}),
        (
            "import http.client\nwith http.client.HTTPConnection('h') as c:\n    c._sock = 1",
            {"http.client.HTTPConnection._sock"},
        ),
        ("import logging\nlogging._srcfile = None", {"logging._srcfile"}),
        ("from pydantic import BaseModel\nclass M(BaseModel):\n    def total(self): ...", set()),
        (
            "from pydantic import BaseModel\nclass M(BaseModel):\n    def model_dump(self): ...",
            {"pydantic.BaseModel.model_dump"},
        ),
    ],
)
def test_a_private_name_would_be_found(source: str, found: set[str]) -> None:
    assert set(private_names(source)) == found


def test_an_object_a_project_function_returns_is_followed() -> None:
    source = "from svc_mcp.app import make\napp = make()\napp.router.redirect_slashes = False"
    returns = {"svc_mcp.app.make": "starlette.applications.Starlette"}
    assert set(private_names(source, "svc_mcp.gate", returns)) == {
        "starlette.applications.Starlette.router.redirect_slashes"
    }
    assert set(private_names(source, "svc_mcp.gate", {})) == set()
