"""One version everywhere: pyproject.toml, `svc-mcp --version`, server.json (both fields), the
`.mcpb` manifest and CHANGELOG.md. The release workflow runs it on a tag before building.

    uv run scripts/release_check.py            # the files agree (CHANGELOG: the version's own
                                               # section, or only [Unreleased] before its release)
    uv run scripts/release_check.py --tag v1.2.3   # also: the tag is v<version> and CHANGELOG.md
                                               # has `## [1.2.3] - YYYY-MM-DD`
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))

import distribution

ROOT = distribution.ROOT
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.M)


def changelog_versions(text: str) -> list[tuple[str, str | None]]:
    """The (version, date) of each `## [...]` heading, newest first; Unreleased has no date."""
    return [(m["version"], m["date"]) for m in HEADING.finditer(text)]


def versions(svc_mcp: str | None = None) -> dict[str, str]:
    """Where the version is written, and what each place says."""
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    found = {
        "pyproject.toml": distribution.project()["version"],
        "server.json version": server["version"],
        "server.json packages[0].version": server["packages"][0]["version"],
        ".mcpb manifest.json version": distribution.mcpb_manifest()["version"],
    }
    if svc_mcp is not None:
        shown = subprocess.run([svc_mcp, "--version"], capture_output=True, text=True, check=True)
        found["svc-mcp --version"] = shown.stdout.strip().removeprefix("svc-mcp ")
    return found


def problems(tag: str | None = None, svc_mcp: str | None = None) -> list[str]:
    """What disagrees, each in one line; none when the release may be built."""
    found = versions(svc_mcp)
    version = found["pyproject.toml"]
    said = [f"{where} says {value}, pyproject.toml {version}" for where, value in found.items()]
    wrong = [line for line, value in zip(said, found.values(), strict=True) if value != version]
    headings = changelog_versions((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    if not headings or headings[0] != ("Unreleased", None):
        wrong.append("CHANGELOG.md must start with a `## [Unreleased]` section")
    released = dict(headings[1:])
    if released and Version(next(iter(released))) > Version(version):
        wrong.append(
            f"CHANGELOG.md's newest release is {next(iter(released))}, newer than {version}"
        )
    if tag is not None:
        if tag != f"v{version}":
            wrong.append(f"the tag {tag} is not v{version}")
        if not released.get(version):
            wrong.append(f"CHANGELOG.md has no `## [{version}] - YYYY-MM-DD` section to release")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", help="the tag being released (v<version>)")
    parser.add_argument("--svc-mcp", help="an installed svc-mcp whose --version must agree")
    options = parser.parse_args()
    wrong = problems(options.tag, options.svc_mcp)
    for line in wrong:
        print(f"release check: {line}", file=sys.stderr)
    if not wrong:
        print(f"release check: {versions()['pyproject.toml']} everywhere")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
