"""Rules that exist once: each is written in one module of `svc_serving`, which both the client
side and the stubs read, so the two sides cannot drift apart."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.support import ROOT

SOURCES = (ROOT / "src", ROOT / "server_stub")


def modules() -> Iterator[tuple[str, ast.Module]]:
    for base in SOURCES:
        for path in base.rglob("*.py"):
            name = path.relative_to(ROOT).as_posix()
            yield name, ast.parse(path.read_text(encoding="utf-8"), filename=name)


def reads_otel_setting(node: ast.AST) -> bool:
    """`<mapping>.get("OTEL_...")` or `<mapping>["OTEL_..."]`, the name written out or built by an
    f-string (`f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"`): a module reading the setting."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        key = node.args[0] if node.func.attr == "get" and node.args else None
    elif isinstance(node, ast.Subscript):
        key = node.slice
    else:
        return False
    if isinstance(key, ast.JoinedStr) and key.values:
        key = key.values[0]
    return isinstance(key, ast.Constant) and str(key.value).startswith("OTEL_")


def test_one_opentelemetry_settings_reader() -> None:
    readers = {name for name, tree in modules() if any(map(reads_otel_setting, ast.walk(tree)))}
    assert readers == {"src/svc_serving/otel_settings.py"}


def test_one_loopback_rule() -> None:
    defined = {
        name
        for name, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "is_loopback"
    }
    assert defined == {"src/svc_serving/loopback.py"}


def test_one_secret_name_rule() -> None:
    """No module but svc_serving.secret_names compiles a pattern of secret words."""
    patterns = {
        name
        for name, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "compile"
        and any(
            isinstance(arg, ast.Constant | ast.JoinedStr) and "password" in ast.unparse(arg)
            for arg in node.args
        )
    }
    assert patterns == set()
