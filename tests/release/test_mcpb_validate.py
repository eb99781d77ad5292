"""The `.mcpb` bundle scripts/distribution.py builds passes the official `mcpb validate`
(`@anthropic-ai/mcpb` from npm, installed into a temporary prefix, run with no network), and the
validator does reject a broken manifest. The bundle runs as its manifest says, `uv run --frozen`
on the uv.lock it carries: with no network at all, from a uv cache that holds exactly the locked
files (filled once per uv.lock, the only step with network), and the lock is left as it was."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e import e2e_fixture
from tests.parallel import one_at_a_time
from tests.release.loopback_index import BIN, UV
from tests.support import ROOT
from tests.support_npm import npm

sys.path.insert(0, str(ROOT / "scripts"))
import distribution

MCPB_PACKAGE = "@anthropic-ai/mcpb@2.1.2"  # the same as .github/workflows/release.yml runs
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"


@e2e_fixture(scope="session")
def mcpb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("mcpb")
    npm("install", "--prefix", str(prefix), "--no-audit", "--no-fund", MCPB_PACKAGE)
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


@e2e_fixture(scope="session")
def locked_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A uv cache holding what the bundle's uv.lock names, filled once per lock (with network,
    from the lock's own URLs), kept in the git-ignored test-artifacts/."""
    lock = (ROOT / "uv.lock").read_bytes()
    cache = ROOT / "test-artifacts" / "bundle-uv-cache" / hashlib.sha256(lock).hexdigest()[:16]
    with one_at_a_time(cache):
        if not (cache / "complete").exists():
            _fill(cache, tmp_path_factory)
    return cache


def _fill(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    filled_from = tmp_path_factory.mktemp("filled-from")  # uv refuses a project in its cache
    with zipfile.ZipFile(distribution.build_mcpb(filled_from / "out")) as archive:
        archive.extractall(filled_from / "bundle")
    subprocess.run(
        [UV, "sync", "--frozen", "--quiet", "--directory", str(filled_from / "bundle")],
        env={**_uv_env(cache), "HOME": str(filled_from), "UV_SYSTEM_CERTS": "1"},
        check=True,
        timeout=600,
    )
    (cache / "complete").write_text("")


def _uv_env(cache: Path) -> dict[str, str]:
    return {
        "HOME": str(cache),
        "PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]),
        "UV_CACHE_DIR": str(cache),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": getattr(sys, "_base_executable", sys.executable),
    }


def test_the_bundle_runs_frozen_to_its_lock_with_no_network(
    locked_cache: Path, tmp_path: Path
) -> None:
    bundle = distribution.build_mcpb(tmp_path / "out")
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        archive.extractall(tmp_path / "bundle")
    config = manifest["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(tmp_path / "bundle")) for a in config["args"]]
    lock = (tmp_path / "bundle" / "uv.lock").read_bytes()
    ran = subprocess.run(
        [UNSHARE, "--net", "--", UV, *args[:1], "--offline", *args[1:], "--version"],
        env={**_uv_env(locked_cache), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"svc-mcp {distribution.project()['version']}\n"
    assert (tmp_path / "bundle" / "uv.lock").read_bytes() == lock
