"""Distribution files: the MCP Registry's `server.json` and a Claude Desktop bundle (`.mcpb`).

    uv run scripts/distribution.py server-json        # rewrite server.json (a test keeps it equal)
    uv run scripts/distribution.py mcpb [--out DIR]   # write DIR/svc-mcp-<version>.mcpb (dist/)

Both are derived from pyproject.toml and `svc_mcp.core.backends` (the variables an entry may set),
never spelled out here. The bundle is a `uv`-type MCPB: a manifest, pyproject.toml and the source;
Claude Desktop installs the dependencies with uv and runs `svc-mcp`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from svc_mcp.core.backends import BACKENDS  # noqa: E402
from svc_mcp.hosts.entries import EXTRA_ENV  # noqa: E402
from svc_mcp.hosts.runners import GITHUB_URL  # noqa: E402

REGISTRY_NAME = "io.github.svc-mcp/svc-mcp"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
MCPB_SCHEMA = (
    "https://raw.githubusercontent.com/modelcontextprotocol/mcpb/main/schemas/"
    "mcpb-manifest-v0.4.schema.json"
)
DESCRIPTION = (
    "Read the service portal and the data service from AI agents: MCP tools, stdio or HTTP"
)


def project() -> dict[str, Any]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert isinstance(data, dict)
    return data


def variables() -> list[tuple[str, str, bool]]:
    """(name, description, secret) for each variable an entry may set."""
    rows = []
    for backend in BACKENDS:
        rows.append(
            (
                backend.base_url_variable,
                f"URL of {backend.label} ({backend.default_base_url})",
                False,
            )
        )
        for name in backend.token_variables:
            rows.append((name, f"token for {backend.label}", True))
        rows.append(
            (
                backend.token_file_variable,
                f"file holding the token for {backend.label}, read at each call",
                False,
            )
        )
    rows.append((EXTRA_ENV[0], "CA bundle to trust for HTTPS backends", False))
    rows.append((EXTRA_ENV[1], "request timeout in seconds", False))
    return rows


def server_json() -> dict[str, Any]:
    version = project()["version"]
    return {
        "$schema": SCHEMA,
        "name": REGISTRY_NAME,
        "description": DESCRIPTION,
        "version": version,
        "repository": {"url": GITHUB_URL, "source": "github"},
        "websiteUrl": f"{GITHUB_URL}#readme",
        "packages": [
            {
                "registryType": "pypi",
                "identifier": project()["name"],
                "version": version,
                "runtimeHint": "uvx",
                "transport": {"type": "stdio"},
                "environmentVariables": [
                    {"name": name, "description": text, "isSecret": secret, "isRequired": False}
                    for name, text, secret in variables()
                ],
            }
        ],
    }


def mcpb_manifest() -> dict[str, Any]:
    meta = project()
    config = {
        name.lower(): {
            "type": "string",
            "title": name,
            "description": text,
            "sensitive": secret,
            "required": False,
        }
        for name, text, secret in variables()
    }
    return {
        "$schema": MCPB_SCHEMA,
        "manifest_version": "0.4",
        "name": meta["name"],
        "display_name": "svc-mcp",
        "version": meta["version"],
        "description": meta["description"][:200],
        "author": {"name": "The svc-mcp authors", "url": GITHUB_URL},
        "repository": {"type": "git", "url": GITHUB_URL},
        "homepage": f"{GITHUB_URL}#readme",
        "license": meta["license"],
        "server": {
            "type": "uv",
            "entry_point": "src/svc_mcp/__main__.py",
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--frozen", "--directory", "${__dirname}", "svc-mcp"],
                "env": {name: "${user_config." + name.lower() + "}" for name, _, _ in variables()},
            },
        },
        "user_config": config,
        "compatibility": {"runtimes": {"python": meta["requires-python"]}},
    }


def build_mcpb(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"svc-mcp-{project()['version']}.mcpb"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(mcpb_manifest(), indent=2) + "\n")
        for name in ("pyproject.toml", "uv.lock", "README.md", "LICENSE"):
            archive.write(ROOT / name, name)
        for package in (
            "src/svc_mcp",
            "src/portal_tools",
            "src/svc_serving",
            "server_stub",
        ):
            for path in sorted((ROOT / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, str(path.relative_to(ROOT)))
    return bundle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("server-json", help="rewrite server.json")
    mcpb = commands.add_parser("mcpb", help="build the Claude Desktop bundle")
    mcpb.add_argument("--out", type=Path, default=ROOT / "dist")
    options = parser.parse_args()
    if options.command == "server-json":
        (ROOT / "server.json").write_text(json.dumps(server_json(), indent=2) + "\n")
        print(ROOT / "server.json")
    else:
        print(build_mcpb(options.out))


if __name__ == "__main__":
    main()
