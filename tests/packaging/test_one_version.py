"""One version everywhere: pyproject.toml, `svc-mcp --version`, server.json's two fields, the
`.mcpb` manifest and CHANGELOG.md (scripts/release_check.py, which the release workflow runs on
a tag). Each disagreement is caught, on copies of the real files."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import distribution
import release_check

VERSION = distribution.project()["version"]


@pytest.mark.e2e
def test_the_checkout_has_one_version_everywhere() -> None:
    svc_mcp = Path(sys.executable).parent / "svc-mcp"
    assert release_check.problems(svc_mcp=str(svc_mcp)) == []
    assert set(release_check.versions(str(svc_mcp)).values()) == {VERSION}
    assert len(release_check.versions(str(svc_mcp))) == 5


@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the files that carry the version, which the checks then read."""
    for name in ("pyproject.toml", "server.json", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    monkeypatch.setattr(distribution, "ROOT", tmp_path)
    monkeypatch.setattr(release_check, "ROOT", tmp_path)
    return tmp_path


def test_server_json_disagreeing_is_caught(copy: Path) -> None:
    assert release_check.problems() == []
    server = json.loads((copy / "server.json").read_text())
    server["packages"][0]["version"] = "0.0.9"
    (copy / "server.json").write_text(json.dumps(server))
    assert release_check.problems() == [
        f"server.json packages[0].version says 0.0.9, pyproject.toml {VERSION}"
    ]


def test_pyproject_moving_alone_is_caught_everywhere_else(copy: Path) -> None:
    text = (copy / "pyproject.toml").read_text()
    (copy / "pyproject.toml").write_text(
        text.replace(f'version = "{VERSION}"', 'version = "7.0.0"')
    )
    wrong = release_check.problems()
    assert f"server.json version says {VERSION}, pyproject.toml 7.0.0" in wrong
    # The manifest is built from pyproject.toml: it cannot disagree.
    assert not [line for line in wrong if "mcpb" in line]


def test_a_tag_needs_its_version_and_a_dated_changelog_section(copy: Path) -> None:
    assert release_check.problems(tag=f"v{VERSION}") == [
        f"CHANGELOG.md has no `## [{VERSION}] - YYYY-MM-DD` section to release"
    ]
    changelog = (copy / "CHANGELOG.md").read_text()
    dated = changelog.replace(
        "## [Unreleased]", f"## [Unreleased]\n\n## [{VERSION}] - 2026-11-26", 1
    )
    (copy / "CHANGELOG.md").write_text(dated)
    assert release_check.problems(tag=f"v{VERSION}") == []
    assert release_check.problems(tag="v9.9.9") == [f"the tag v9.9.9 is not v{VERSION}"]
    newer = dated.replace(f"## [{VERSION}] - ", "## [99.0.0] - ")
    (copy / "CHANGELOG.md").write_text(newer)
    assert release_check.problems() == [
        f"CHANGELOG.md's newest release is 99.0.0, newer than {VERSION}"
    ]
    (copy / "CHANGELOG.md").write_text(changelog.replace("## [Unreleased]", "## Next"))
    assert release_check.problems() == ["CHANGELOG.md must start with a `## [Unreleased]` section"]
