"""The release workflow: clean under zizmor (offline, every persona), every action pinned by a full
commit SHA, credentials never persisted by checkout, and the OIDC token (id-token: write) only
for the job that publishes to PyPI, in the `pypi` environment, through pypa's action."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
ZIZMOR = Path(sys.executable).parent / "zizmor"
PINNED = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}")


def _workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _zizmor(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ZIZMOR), "--offline", "--persona=auditor", "--no-progress", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.e2e
def test_zizmor_finds_nothing_and_would_find_a_persisted_checkout(tmp_path: Path) -> None:
    clean = _zizmor(WORKFLOW)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "No findings to report" in clean.stdout + clean.stderr
    loose = tmp_path / "release.yml"
    loose.write_text(WORKFLOW.read_text().replace("persist-credentials: false", "fetch-depth: 1"))
    found = _zizmor(loose)
    assert found.returncode != 0
    assert "artipacked" in found.stdout + found.stderr


def test_every_action_is_pinned_by_a_commit_sha() -> None:
    steps = [step for job in _workflow()["jobs"].values() for step in job["steps"]]
    uses = [step["uses"] for step in steps if "uses" in step]
    assert uses
    assert [u for u in uses if not PINNED.fullmatch(u)] == []
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)


def test_only_the_publish_job_gets_an_oidc_token() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {}
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML reads the key `on` as True
    holders = {
        name: job
        for name, job in workflow["jobs"].items()
        if job.get("permissions", {}).get("id-token") == "write"
    }
    assert list(holders) == ["publish"]
    publish = holders["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    (action,) = [s["uses"] for s in publish["steps"] if "pypi-publish" in s.get("uses", "")]
    assert action.startswith("pypa/gh-action-pypi-publish@")
    assert not [s for s in publish["steps"] if "password" in s.get("with", {})]  # no stored token
