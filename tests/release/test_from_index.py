"""A release proven from an index, short of publishing it: the wheel and sdist `uv build` makes
pass `twine check --strict`; served with every dependency from a real PyPI-compatible index
(pypiserver) in a network namespace where only loopback is up, `uvx svc-mcp==<version>` runs, and
the entry `svc-mcp install --source pypi --index-url <it>` writes starts and lists the tools as
its host starts it: through `svc-mcp doctor`, and through real Claude Code's `claude mcp list`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import e2e_fixture
from tests.release.loopback_index import (
    BIN,
    INDEX,
    UV,
    Namespace,
    dependency_wheels,
    index_namespace,
)
from tests.support import ROOT
from tests.support_claude_code import QUIET_CLAUDE_CODE, claude_code  # noqa: F401

pytestmark = pytest.mark.e2e

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
SERVICE_TOKEN = "svc-release-service-token-5b1e9c3a7d2f"
STUB_PORT = 8081


@e2e_fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([UV, "build", "--quiet", "--out-dir", str(out)], cwd=ROOT, check=True)
    built = sorted(out.glob("svc_mcp-*"))
    assert [p.name for p in built] == [
        f"svc_mcp-{VERSION}-py3-none-any.whl",
        f"svc_mcp-{VERSION}.tar.gz",
    ]
    checked = subprocess.run(
        [str(BIN / "twine"), "check", "--strict", *map(str, built)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return built


@e2e_fixture(scope="module")
def index(dists: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Namespace]:
    packages = tmp_path_factory.mktemp("packages")
    for wheel in dependency_wheels().glob("*.whl"):
        (packages / wheel.name).symlink_to(wheel)
    for dist in dists:
        shutil.copy(dist, packages)
    with index_namespace(packages, tmp_path_factory.mktemp("index") / "pypiserver.log") as ns:
        yield ns


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's own uv cache: filled from the index by the first uvx, so a host's start-up
    limit is not spent on a cold install under a loaded machine."""
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture
def isolated(tmp_path: Path, uv_cache: Path) -> dict[str, str]:
    """A home and tool folder of the test's own; uv reads no configuration of the machine's and
    downloads no Python."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
        "UV_CACHE_DIR": str(uv_cache),
        "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": getattr(sys, "_base_executable", sys.executable),
    }


def test_uvx_runs_the_release_from_the_index(index: Namespace, isolated: dict[str, str]) -> None:
    uvx = str(Path(UV).with_name("uvx"))
    ran = index.run(
        [uvx, "--default-index", INDEX, f"svc-mcp=={VERSION}", "--version"], env=isolated
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"svc-mcp {VERSION}\n"
    # Nothing else is reachable in there: the index had every dependency.
    elsewhere = index.run(
        [uvx, "--default-index", "https://pypi.org/simple", "--refresh", "rich", "--help"],
        env={**isolated, "UV_HTTP_RETRIES": "0"},
    )
    assert elsewhere.returncode != 0
    # A version the index does not hold is refused, not found somewhere else.
    missing = index.run([uvx, "--default-index", INDEX, "svc-mcp==999.0"], env=isolated)
    assert missing.returncode != 0
    assert "999.0" in missing.stderr


def test_the_installed_entry_starts_under_doctor_and_claude_code(
    index: Namespace,
    isolated: dict[str, str],
    claude_code: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    svc_mcp = str(BIN / "svc-mcp")
    db = tmp_path / "service.db"
    made = subprocess.run([str(BIN / "svc-stub"), "demo-data", "service", "--db", str(db)])
    assert made.returncode == 0
    stub = [sys.executable, "-m", "server_stub", "service", "--db", str(db)]
    stub_env = {**isolated, "SERVICE_API_TOKEN": SERVICE_TOKEN}
    base = f"http://127.0.0.1:{STUB_PORT}"
    with index.background(
        [*stub, "--port", str(STUB_PORT)],
        env=stub_env,
        log=tmp_path / "stub.log",
        ready=f"{base}/health/live",
    ):
        installed = index.run(
            [svc_mcp, "install", "--client", "claude-code", "--source", "pypi",
             "--index-url", INDEX, "--env", f"SERVICE_API_BASE={base}",
             "--env", f"SERVICE_API_TOKEN={SERVICE_TOKEN}"],
            env=isolated,
            cwd=Path(isolated["HOME"]),  # not the checkout: doctor starts no program from there
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr
        entry = json.loads((Path(isolated["HOME"]) / ".claude.json").read_text())["mcpServers"]
        assert entry["svc"]["args"] == ["--default-index", INDEX, f"svc-mcp=={VERSION}"]

        doctor = index.run(
            [svc_mcp, "doctor", "--toolsets", "analytics", "--json", "--name", "svc"],
            env=isolated,
            cwd=Path(isolated["HOME"]),
        )
        findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
        assert "host.claude-code.user" in findings, doctor.stdout + doctor.stderr
        proved = findings["host.claude-code.user"]
        assert proved["status"] == "ok", (proved, doctor.stderr)
        assert f"svc-mcp=={VERSION} listed" in proved["message"]
        assert "get_system answered" in proved["message"]

        listed = index.run(
            [str(claude_code), "mcp", "list"],
            env={**isolated, **QUIET_CLAUDE_CODE},
            cwd=Path(isolated["HOME"]),
        )
        assert listed.returncode == 0, listed.stdout + listed.stderr
        (line,) = [x for x in listed.stdout.splitlines() if x.startswith("svc:")]
        assert "Connected" in line, listed.stdout
