"""The FastMCP peer's throwaway virtual environment: `fastmcp` (pinned) from PyPI, installed
with uv once into a cache folder outside the checkout, never into svc-mcp's own environment.

`peer_python()` returns its interpreter, making it on first use (`SVC_BENCH_PEER_PYTHON` names
another one, e.g. on a machine without uv).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FASTMCP = "fastmcp==4.2.3"
"""The release the issue's figures were measured against."""
HTTPX = "httpx==0.28.1"
"""The peer's tool makes its GET with the client svc-mcp and the floor use (fastmcp itself
brings httpx2 only)."""


def _uv() -> str:
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        raise SystemExit("the FastMCP peer needs uv (or SVC_BENCH_PEER_PYTHON): pip install uv")
    return found


def peer_python() -> Path:
    named = os.environ.get("SVC_BENCH_PEER_PYTHON")
    if named:
        return Path(named)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "svc-mcp-bench" / f"{FASTMCP}-{HTTPX}".replace("==", "-")
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making the peer's environment ({FASTMCP}) in {venv}", file=sys.stderr)
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        subprocess.run([_uv(), "venv", "-q", "--python", version, str(venv)], check=True)
        subprocess.run(
            [_uv(), "pip", "install", "-q", "--python", str(python), FASTMCP, HTTPX], check=True
        )
    return python
