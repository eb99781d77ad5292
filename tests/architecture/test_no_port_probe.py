"""No test, benchmark or script probes a port and releases it for a server to bind later (another
process may take it in between): a server binds a port tests.support.reserved_port holds, or
running_server reserves one where PORT stands; a URL nothing answers is a held closed_port."""

from __future__ import annotations

import ast

from tests.support import ROOT

SCANNED = ("tests", "bench", "scripts")


def probes_and_releases(source: str) -> list[str]:
    """The functions in `source` that return a socket's port number from inside the `with` that closes
    the socket (a context manager that yields it, holding the socket, is the right way)."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in ast.walk(function):
            if not isinstance(block, ast.With) or not any(
                "socket" in ast.unparse(item.context_expr) for item in block.items
            ):
                continue
            returns = [node for node in ast.walk(block) if isinstance(node, ast.Return)]
            if any("getsockname()[1]" in ast.unparse(node) for node in returns):
                found.append(function.name)
    return found


def test_the_check_sees_a_probe_and_release() -> None:
    probe = (
        "def free_port():\n"
        "    with socket.socket() as sock:\n"
        "        sock.bind(('127.0.0.1', 0))\n"
        "        return sock.getsockname()[1]\n"
    )
    held = probe.replace("def free_port", "def held").replace("return", "yield")
    assert probes_and_releases(probe) == ["free_port"]
    assert probes_and_releases(held) == []


def test_no_module_probes_a_port_and_releases_it() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in probes_and_releases(path.read_text(encoding="utf-8"))
    }
    assert found == set(), "hold the port instead (tests.support.reserved_port, closed_port)"
