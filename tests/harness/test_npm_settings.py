"""npm run into a prefix of a test's own keeps the machine's CA file (tests/support_npm.py): a
machine behind a proxy that re-signs TLS names its CA in npm's global settings, which
`--prefix` would trade for `<prefix>/etc/npmrc`. Checked by asking npm itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import support_npm
from tests.support import SubprocessFailed, run_checked

pytestmark = pytest.mark.e2e


def _cafile_npm_sees(prefix: Path, env: dict[str, str]) -> str:
    shown = run_checked(
        [support_npm.npm_program(), "config", "get", "cafile", "--prefix", str(prefix)],
        env=env,
        timeout=60,
    )
    return shown.stdout.strip()


def test_a_ca_file_in_the_machines_npm_settings_reaches_npm_with_a_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine whose npm lives under `machine/` (npm's PREFIX) and whose global npmrc names the
    # CA of a re-signing proxy, as the machine had it.
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "machine" / "etc").mkdir(parents=True)
    (tmp_path / "machine" / "etc" / "npmrc").write_text(f"cafile={ca}\n")
    monkeypatch.setenv("PREFIX", str(tmp_path / "machine"))
    for name in ("npm_config_cafile", "NPM_CONFIG_CAFILE", "npm_config_globalconfig"):
        monkeypatch.delenv(name, raising=False)
    prefix = tmp_path / "prefix"

    assert _cafile_npm_sees(prefix, dict(os.environ)) == "null"  # what `--prefix` alone does
    settings = support_npm.machine_settings.__wrapped__()
    assert settings["npm_config_cafile"] == str(ca)
    assert _cafile_npm_sees(prefix, {**os.environ, **settings}) == str(ca)


def test_this_machines_ca_reaches_npm_with_a_prefix(tmp_path: Path) -> None:
    cafile = _cafile_npm_sees(tmp_path / "prefix", support_npm.npm_env())
    assert cafile == support_npm.machine_settings()["npm_config_cafile"]
    assert Path(cafile).is_file()


def test_a_failed_npm_run_shows_what_npm_said(tmp_path: Path) -> None:
    with pytest.raises(SubprocessFailed) as failed:
        support_npm.npm(
            "install", "--offline", "--prefix", str(tmp_path), "@svc-mcp-test/no-such-package"
        )
    assert "exited with code 1" in str(failed.value)
    assert "ENOTCACHED" in str(failed.value)  # npm's own words, from its stderr
