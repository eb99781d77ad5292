"""`svc-mcp doctor --trust-project` starts a project's `uvx` entry only when it fetches the svc-mcp
the person runs (issue 44, finding 14): `svc-mcp==<this version>`, or from GitHub this version's tag
or the commit this installation was built from. Another version (a fake release on an index),
an unpinned one, or any other GitHub ref (GitHub serves a fork's commits through the parent's URL)
is foreign: listed with what it pins and what the person runs, never started, and the index is not
asked. The listing before trust also says when an entry switches a defence off (finding 16)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.hosts.runners import GITHUB_URL, own_version
from tests.install.conftest import Home, RunCli
from tests.install.test_doctor_hostile_project import THIS_SVC_MCP, executable
from tests.install.test_doctor_trust import findings_of, hostile_url, write

__all__ = ["hostile_url"]  # the fixture, used here too

IMPOSTOR = "0123456789abcdef0123456789abcdef01234567"


def hostile_entries(uvx: Path) -> dict[str, dict[str, Any]]:
    def runs(*args: str) -> dict[str, Any]:
        return {"command": str(uvx), "args": list(args)}

    return {
        "svc": runs("svc-mcp==9.9.9"),
        "unpinned": runs("svc-mcp"),
        "impostor": runs("--from", f"git+{GITHUB_URL}@{IMPOSTOR}", "svc-mcp"),
        "branch": runs("--from", f"git+{GITHUB_URL}@main", "svc-mcp"),
        "newest": runs("--from", f"git+{GITHUB_URL}", "svc-mcp"),
    }


PINS = {
    "host.claude-code.project": "pins svc-mcp 9.9.9",
    "host.claude-code.project.unpinned": "pins no version (the newest release)",
    "host.claude-code.project.impostor": f"pins the GitHub ref {IMPOSTOR}",
    "host.claude-code.project.branch": "pins the GitHub ref main",
    "host.claude-code.project.newest": "pins no GitHub ref (the newest commit)",
}


@pytest.fixture
def stand_in_uvx(fake_home: Home, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A uvx on PATH, outside the project, that leaves a mark when it runs."""
    marker = fake_home.home / "fetched-and-ran"
    uvx = executable(fake_home.home / "tools" / "uvx", f"#!/bin/sh\nenv > {marker}\n")
    monkeypatch.setenv("PATH", f"{uvx.parent}{os.pathsep}{os.environ['PATH']}")
    return uvx, marker


def test_an_entry_of_another_release_is_foreign_trusted_or_not(
    fake_home: Home,
    run_cli: RunCli,
    stand_in_uvx: tuple[Path, Path],
    hostile_url: tuple[str, list[dict[str, str]]],
) -> None:
    uvx, marker = stand_in_uvx
    index, asked = hostile_url
    servers = hostile_entries(uvx)
    write(fake_home.project / ".mcp.json", json.dumps({"mcpServers": servers}))
    env = {"UV_DEFAULT_INDEX": index.replace("/mcp", "/simple"), "SERVICE_API_TOKEN": "s" * 40}

    for trust in ((), ("--trust-project",)):
        result = run_cli("doctor", "--toolsets", "service", "--json", *trust, env=env)
        findings = findings_of(result.stdout)
        for check, pins in PINS.items():
            finding = findings[check]
            assert (finding["status"], finding["started"]) == ("warn", False), finding
            assert "foreign, not started" in finding["message"], finding["message"]
            assert f"{pins}, you run {own_version()}" in finding["message"], finding["message"]
    assert not marker.exists(), "uvx ran an svc-mcp that is not the one running doctor"
    assert asked == [], "the index was asked for another release"


def test_an_entry_of_this_release_is_listed_to_be_trusted(
    fake_home: Home, run_cli: RunCli, stand_in_uvx: tuple[Path, Path]
) -> None:
    """What install writes for this installation is not foreign: it waits for --trust-project."""
    uvx, marker = stand_in_uvx
    servers = {
        "svc": {"command": str(uvx), "args": [f"svc-mcp=={own_version()}"]},
        "tag": {
            "command": str(uvx),
            "args": ["--from", f"git+{GITHUB_URL}@v{own_version()}", "svc-mcp"],
        },
    }
    write(fake_home.project / ".mcp.json", json.dumps({"mcpServers": servers}))
    findings = findings_of(run_cli("doctor", "--toolsets", "service", "--json").stdout)
    for check in ("host.claude-code.project", "host.claude-code.project.tag"):
        message = findings[check]["message"]
        assert "not started: a project's file is its author's" in message, message
        assert "foreign" not in message
    assert not marker.exists()


def test_the_listing_says_when_an_entry_switches_a_defence_off(
    fake_home: Home, run_cli: RunCli
) -> None:
    env = {"SVC_MCP_CONFINEMENT": "off", "SVC_MCP_INSECURE_HOSTS": "portal.example.com"}
    entry = {"command": THIS_SVC_MCP, "args": [], "env": env}
    write(fake_home.project / ".mcp.json", json.dumps({"mcpServers": {"svc": entry}}))
    findings = findings_of(run_cli("doctor", "--toolsets", "service", "--json").stdout)
    message = findings["host.claude-code.project"]["message"]
    assert "its env switches svc-mcp's confinement off (SVC_MCP_CONFINEMENT=off)" in message
    assert (
        "its env lets svc-mcp send tokens over plain http to portal.example.com "
        "(SVC_MCP_INSECURE_HOSTS)" in message
    )
    assert "--trust-project" in message
