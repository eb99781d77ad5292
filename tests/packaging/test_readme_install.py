"""The README's quick start and the install page (docs/hosts.md, install/README.md) match what the
code does today."""

from __future__ import annotations

import typing

from svc_mcp.hosts.runners import Source
from svc_mcp.hosts.table import HOSTS
from tests.support import ROOT

HOST_NAMES = tuple(HOSTS)

README = (ROOT / "README.md").read_text(encoding="utf-8")
HOSTS_PAGE = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
INSTALL = (ROOT / "install" / "README.md").read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_no_command_that_fails_without_a_release_or_breaks_uv() -> None:
    for text in (README, HOSTS_PAGE, INSTALL):
        assert "uvx svc-mcp install" not in text  # there is no release to fetch
        assert "bin/activate" not in text.replace("do not activate", "")
        assert "python3 -m pip install uv" not in text  # externally managed Pythons refuse it


def test_the_test_command_says_what_it_needs() -> None:
    quick = section(README, "Quick start")
    assert "/usr/bin/chromium" in quick
    assert "apt-get install chromium" in quick
    assert "`.ci/run --deps-only`" in quick
    assert "svc-mcp --version" in quick


def test_every_source_and_host_is_explained() -> None:
    hosts = HOSTS_PAGE
    sources = typing.get_args(Source)
    for source in sources:
        assert f"`{source}`" in hosts + INSTALL, source
    for source in sources:
        assert f"- `{source}`" in INSTALL, source
    for client in HOST_NAMES:
        assert client in hosts
        assert f"| `{client}` |" in INSTALL
    assert "--http URL" in hosts
    assert all(HOSTS[c].label in INSTALL for c in HOST_NAMES)
    assert "trusted folder" in hosts
    assert "/permissions" in INSTALL
