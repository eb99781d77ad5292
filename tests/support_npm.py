"""npm as the tests run it: into a prefix of the test's own, with the machine's own settings.

`npm --prefix <p>` reads its global settings from `<p>/etc/npmrc` instead of the machine's
(`npm config get globalconfig`), so a `cafile` set there for a proxy that re-signs TLS is lost
and every fetch fails `SELF_SIGNED_CERT_IN_CHAIN`. Each run here keeps the machine's global file
and the CA file npm uses without a prefix (else the system's trust store, when there is one).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support import run_checked

SYSTEM_TRUST_STORES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Alpine
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/cert.pem",  # macOS, the BSDs
)


def npm_program() -> str:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: install nodejs and npm (.ci/run --deps-only does)")
    return npm


def _machine_setting(npm: str, name: str) -> str | None:
    shown = run_checked([npm, "config", "get", name], timeout=60).stdout.strip()
    return None if shown in ("", "null", "undefined") else shown


@functools.cache
def machine_settings() -> Mapping[str, str]:
    """The variables that give npm, whatever its `--prefix`, the machine's global settings file
    and CA file (as npm itself sees them with no prefix)."""
    npm = npm_program()
    settings: dict[str, str] = {}
    globalconfig = _machine_setting(npm, "globalconfig")
    if globalconfig is not None:
        settings["npm_config_globalconfig"] = globalconfig
    cafile = _machine_setting(npm, "cafile") or next(
        (store for store in SYSTEM_TRUST_STORES if Path(store).is_file()), None
    )
    if cafile is not None:
        settings["npm_config_cafile"] = cafile
    return settings


def npm_env() -> dict[str, str]:
    return {**os.environ, **machine_settings()}


def npm(
    *args: str, timeout: float = 300, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `npm <args>` with the machine's settings; a failure raises with npm's own words."""
    return run_checked([npm_program(), *args], env=npm_env(), timeout=timeout, cwd=cwd)
