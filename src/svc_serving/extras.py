"""The command that installs one of svc-mcp's extras where this process runs.

`pip install 'svc-mcp[otel]'` works for nobody yet (no index has svc-mcp): in a checkout, `uv run
--extra otel` adds the extra to the checkout's environment; anywhere else the extra's packages are
installed by name into the environment this process runs in (read from the installed metadata, so
the names and bounds are always the current ones).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shlex
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "svc-mcp"


def extra_requirements(extra: str) -> list[str]:
    """The requirements `extra` adds, as the installed metadata lists them."""
    try:
        listed = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = f"extra == '{extra}'"
    return [line.split(";", 1)[0].strip() for line in listed if marker in line.replace('"', "'")]


def checkout() -> Path | None:
    """The checkout this installation runs from (an editable install), if it does."""
    try:
        said = importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        direct = json.loads(said or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    if not direct.get("dir_info", {}).get("editable"):
        return None
    path = Path(unquote(urlsplit(str(direct.get("url", ""))).path))
    return path if (path / "pyproject.toml").is_file() else None


def install_hint(extra: str, prog: str) -> str:
    """How to get `extra` here: `uv run --extra` in a checkout, else its packages by name."""
    if (root := checkout()) is not None:
        return f"in the checkout ({root}), run `uv run --extra {extra} {prog} ...`"
    packages = " ".join(shlex.quote(package) for package in extra_requirements(extra))
    python = shlex.quote(sys.executable)
    if importlib.util.find_spec("pip") is not None:
        return f"install its packages: `{python} -m pip install {packages}`"
    return f"install its packages: `uv pip install --python {python} {packages}`"
