"""Our subsets of the published server.json and MCPB manifest rules reject what those rules reject
(README.md here says where each rule is published). Each case breaks one rule of a valid document."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

HERE = Path(__file__).parent
Document = dict[str, Any]


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((HERE / name).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


SERVER = validator("server-json-rules.schema.json")
MCPB = validator("mcpb-manifest-rules.schema.json")

VALID_SERVER: Document = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
    "name": "io.github.example/weather",
    "description": "Weather forecasts",
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "pypi",
            "identifier": "weather-mcp",
            "version": "1.0.2",
            "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "named", "name": "--units", "value": "metric"},
                {"type": "positional", "valueHint": "city"},
            ],
            "environmentVariables": [{"name": "WEATHER_TOKEN", "isSecret": True}],
        }
    ],
    "remotes": [{"type": "streamable-http", "url": "https://weather.example/mcp"}],
}

VALID_MANIFEST: Document = {
    "manifest_version": "0.4",
    "name": "weather",
    "version": "1.0.2",
    "description": "Weather forecasts",
    "author": {"name": "Example"},
    "server": {
        "type": "python",
        "entry_point": "server.py",
        "mcp_config": {"command": "python", "args": ["server.py"], "env": {"A": "b"}},
    },
    "user_config": {"token": {"type": "string", "title": "Token", "description": "API token"}},
}


def changed(document: Document, edit: Callable[[Document], object]) -> Document:
    copied = copy.deepcopy(document)
    edit(copied)
    return copied


def package(document: Document) -> Document:
    found: Document = document["packages"][0]
    return found


SERVER_BREAKS: dict[str, Callable[[Document], object]] = {
    "another schema version": lambda d: d.update({"$schema": "https://example.com/s.json"}),
    "a name without a namespace": lambda d: d.update({"name": "weather"}),
    "a description over 100 characters": lambda d: d.update({"description": "x" * 101}),
    "no version": lambda d: d.pop("version"),
    "a version range": lambda d: d.update({"version": "^1.2.3"}),
    "a wildcard version": lambda d: d.update({"version": "1.x"}),
    "a package at latest": lambda d: package(d).update({"version": "latest"}),
    "a package at >=": lambda d: package(d).update({"version": ">=1.0"}),
    "an unknown package field": lambda d: package(d).update({"extra": 1}),
    "an unknown registry type": lambda d: package(d).update({"registryType": "cpan"}),
    "a package without transport": lambda d: package(d).pop("transport"),
    "a short file hash": lambda d: package(d).update({"fileSha256": "abc"}),
    "a variable without a name": lambda d: package(d)["environmentVariables"][0].pop("name"),
    "a named argument without a name": lambda d: package(d)["packageArguments"][0].pop("name"),
    "a positional argument without value or hint": lambda d: package(d)["packageArguments"][1].pop(
        "valueHint"
    ),
    "an HTTP remote without url": lambda d: d["remotes"][0].pop("url"),
    "a stdio remote": lambda d: d.update({"remotes": [{"type": "stdio"}]}),
    "a repository without source": lambda d: d.update({"repository": {"url": "https://x.y"}}),
}

MANIFEST_BREAKS: dict[str, Callable[[Document], object]] = {
    "another manifest version": lambda d: d.update({"manifest_version": "0.3"}),
    "an unknown field": lambda d: d.update({"extra": 1}),
    "no author": lambda d: d.pop("author"),
    "an author without a name": lambda d: d.update({"author": {"url": "https://x.y"}}),
    "an unknown server type": lambda d: d["server"].update({"type": "ruby"}),
    "a python server without mcp_config": lambda d: d["server"].pop("mcp_config"),
    "an mcp_config without command": lambda d: d["server"]["mcp_config"].pop("command"),
    "an unknown mcp_config field": lambda d: d["server"]["mcp_config"].update({"cwd": "/"}),
    "an env value that is not text": lambda d: d["server"]["mcp_config"]["env"].update({"A": 1}),
    "a setting without a title": lambda d: d["user_config"]["token"].pop("title"),
    "a setting of an unknown type": lambda d: d["user_config"]["token"].update({"type": "date"}),
    "an unknown platform": lambda d: d.update({"compatibility": {"platforms": ["beos"]}}),
}


def test_the_valid_documents_are_valid() -> None:
    assert list(SERVER.iter_errors(VALID_SERVER)) == []
    assert list(MCPB.iter_errors(VALID_MANIFEST)) == []
    uv_server = changed(
        VALID_MANIFEST, lambda d: d.update({"server": {"type": "uv", "entry_point": "s.py"}})
    )
    assert list(MCPB.iter_errors(uv_server)) == []  # a uv bundle may leave the command to the host


@pytest.mark.parametrize("break_", SERVER_BREAKS.values(), ids=SERVER_BREAKS.keys())
def test_server_json_rules_reject(break_: Callable[[Document], object]) -> None:
    assert list(SERVER.iter_errors(changed(VALID_SERVER, break_)))


@pytest.mark.parametrize("break_", MANIFEST_BREAKS.values(), ids=MANIFEST_BREAKS.keys())
def test_manifest_rules_reject(break_: Callable[[Document], object]) -> None:
    assert list(MCPB.iter_errors(changed(VALID_MANIFEST, break_)))
