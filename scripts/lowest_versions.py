"""The lowest versions pyproject.toml allows, installed and tested: every lower bound is one CI ran.

Installs the project with each direct dependency at its floor (`uv pip install --resolution
lowest-direct`, dev extras included) into `.venv-lowest`, beside the locked `.venv` and without
touching `uv.lock`, then runs the unit tests and real round trips (stdio, the gateway, the stubs
on uvicorn's fast stack) there. Run it with `.venv/bin/uv run --locked --extra dev
scripts/lowest_versions.py [pytest args...]`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-lowest"
PYTHON = VENV / "bin" / "python"
TESTS = [
    "tests/architecture",
    "tests/fuzz/test_parsers.py",
    "tests/hardening/test_http_limits.py",
    "tests/install/test_doctor.py",
    "tests/install/test_install.py",
    "tests/install/test_install_files.py",
    "tests/install/test_small_fixes.py",
    "tests/intel/test_envelope.py",
    "tests/intel/test_intake.py",
    "tests/mcp/test_mcp_client.py",
    "tests/mcp/test_mcp_protocol.py",
    "tests/mcp/test_mcp_server.py",
    "tests/mcp/test_mcp_table.py",
    "tests/mcp/test_mcp_wire_snapshot.py",
    "tests/openapi/test_documents.py",
    "tests/portal/test_store.py",
    "tests/service/test_guard.py",
    "tests/service/test_passkey_parts.py",
    "tests/service/test_sessions.py",
]
"""Fast, and between them touching every direct dependency: the tool table and both clients
(httpx, pydantic, respx), install and doctor (typer, tomlkit), the MCP server over stdio and HTTP
(mcp, starlette, uvicorn with httptools and uvloop), the stubs' parsers and passkeys (webauthn,
pyjwt, rfc8785), and hypothesis properties."""


def run(command: list[str]) -> None:
    print("==", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def main() -> int:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    run([uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(VENV)])
    install = [uv, "pip", "install", "--quiet", "--python", str(PYTHON)]
    run([*install, "--resolution", "lowest-direct", "--editable", ".[dev]"])
    # The install tests run `uv` from beside the interpreter, as an installed svc-mcp would.
    version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True)
    run([*install, f"uv=={version.stdout.split()[1]}"])
    run([uv, "pip", "list", "--python", str(PYTHON)])
    tests = [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS, *sys.argv[1:]]
    return subprocess.call(tests, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
