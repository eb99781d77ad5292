"""What ships: server.json for the MCP Registry (checked against our subset of its published rules,
server-json-rules.schema.json: tests have no network), the Claude Desktop bundle's manifest, the
wheel's contents, --version, and what the checkout keeps out of git and the sdist."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import jsonschema
import pytest

from svc_mcp.hosts.entries import ENV_KEYS, SECRET_KEYS
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import distribution

HERE = Path(__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# Our own subsets of the published rules (tests have no network): see README.md here.
SERVER_SCHEMA = json.loads((HERE / "server-json-rules.schema.json").read_text(encoding="utf-8"))
MCPB_SCHEMA = json.loads((HERE / "mcpb-manifest-rules.schema.json").read_text(encoding="utf-8"))


def test_server_json_is_generated_and_valid_against_the_registry_schema() -> None:
    document = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    assert document == distribution.server_json(), "run: uv run scripts/distribution.py server-json"
    assert document["$schema"] == SERVER_SCHEMA["properties"]["$schema"]["const"]
    validator = jsonschema.Draft7Validator(SERVER_SCHEMA, format_checker=jsonschema.FormatChecker())
    assert list(validator.iter_errors(document)) == []
    broken = document | {"name": "no slash"}
    assert list(validator.iter_errors(broken))  # the schema does reject
    (package,) = document["packages"]
    assert package["version"] == PYPROJECT["project"]["version"]
    variables = {v["name"]: v["isSecret"] for v in package["environmentVariables"]}
    assert list(variables) == list(ENV_KEYS)
    assert {name for name, secret in variables.items() if secret} == SECRET_KEYS
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {document['name']}" in readme


def test_the_mcpb_bundle_is_built_with_a_valid_manifest(tmp_path: Path) -> None:
    bundle = distribution.build_mcpb(tmp_path)
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
    validator = jsonschema.Draft7Validator(MCPB_SCHEMA, format_checker=jsonschema.FormatChecker())
    assert list(validator.iter_errors(manifest)) == []
    assert manifest["$schema"].endswith("/mcpb-manifest-v0.4.schema.json")
    assert manifest["server"]["entry_point"] in names
    assert {"pyproject.toml", "uv.lock", "LICENSE", "server_stub/cli.py"} <= names
    # The bundled uv.lock decides what runs: uv neither re-resolves nor rewrites it.
    assert manifest["server"]["mcp_config"]["args"][:2] == ["run", "--frozen"]
    env = manifest["server"]["mcp_config"]["env"]
    assert list(env) == list(ENV_KEYS)
    for value in env.values():
        assert value.removeprefix("${user_config.").removesuffix("}") in manifest["user_config"]
    sensitive = {k for k, v in manifest["user_config"].items() if v["sensitive"]}
    assert sensitive == {name.lower() for name in SECRET_KEYS}
    assert list(validator.iter_errors(manifest | {"manifest_version": "9"}))  # it does reject
    assert list(validator.iter_errors(manifest | {"unknown": 1}))


def test_the_build_backend_is_pinned() -> None:
    """An sdist built anywhere is built by the same backend, not whatever is newest that day."""
    (requirement,) = PYPROJECT["build-system"]["requires"]
    name, equals, version = requirement.partition("==")
    assert (name, equals) == ("hatchling", "=="), requirement
    assert version.count(".") == 2, requirement


@pytest.mark.e2e
def test_project_metadata_license_and_version() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert {"Homepage", "Repository", "Issues"} <= set(urls)
    assert PYPROJECT["project"]["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    for package in ("svc_mcp", "portal_tools"):
        assert (ROOT / "src" / package / "py.typed").exists()
    svc_mcp = Path(sys.executable).parent / "svc-mcp"
    shown = subprocess.run([str(svc_mcp), "--version"], capture_output=True, text=True, check=True)
    assert shown.stdout == f"svc-mcp {PYPROJECT['project']['version']}\n"


GENERATED = [
    "svc.db",
    "svc.db-journal",
    "svc.db.webauthn",
    "svc.db.private/webauthn.journal",
    "envelope.json",
    "portal-data/catalog.json",
]


@pytest.mark.e2e
def test_generated_data_is_ignored_and_left_out_of_the_sdist(tmp_path: Path) -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *GENERATED], cwd=ROOT, capture_output=True, text=True
    )
    assert ignored.stdout.split() == GENERATED
    excluded = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["exclude"]
    assert {"*.db", "envelope.json", "portal-data/"} <= set(excluded)
    uv = [os.environ.get("UV") or shutil.which("uv") or "uv"]
    subprocess.run([*uv, "build", "--sdist", "-q", "-o", str(tmp_path)], cwd=ROOT, check=True)
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("/LICENSE") for name in names)
    assert not [n for n in names if n.endswith(".db") or "portal-data" in n or "envelope.json" in n]
