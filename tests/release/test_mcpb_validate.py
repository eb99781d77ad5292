"""The `.mcpb` bundle scripts/distribution.py builds passes the official `mcpb validate`
(`@anthropic-ai/mcpb` from npm, installed into a temporary prefix, run with no network), runs
frozen to the uv.lock it carries, and the validator does reject a broken manifest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e import e2e_fixture
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import distribution

MCPB_PACKAGE = "@anthropic-ai/mcpb@2.1.2"  # the same as .github/workflows/release.yml runs
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"


@e2e_fixture(scope="session")
def mcpb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: install nodejs and npm (.ci/run does)")
    prefix = tmp_path_factory.mktemp("mcpb")
    subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", MCPB_PACKAGE],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return prefix / "node_modules" / ".bin" / "mcpb"


def _validate(mcpb: Path, manifest: Path) -> subprocess.CompletedProcess[str]:
    # In a network namespace of its own: the check needs nothing from outside.
    return subprocess.run(
        [UNSHARE, "--net", "--", str(mcpb), "validate", str(manifest)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_bundle_passes_mcpb_validate_and_runs_frozen(mcpb: Path, tmp_path: Path) -> None:
    bundle = distribution.build_mcpb(tmp_path / "out")
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        archive.extract("manifest.json", tmp_path)
    checked = _validate(mcpb, tmp_path / "manifest.json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "validation passes" in checked.stdout
    assert manifest["server"]["mcp_config"]["args"][:2] == ["run", "--frozen"]

    broken = tmp_path / "broken" / "manifest.json"
    broken.parent.mkdir()
    del manifest["server"]["entry_point"]
    broken.write_text(json.dumps(manifest))
    refused = _validate(mcpb, broken)
    assert refused.returncode != 0
    assert "entry_point" in refused.stdout + refused.stderr
