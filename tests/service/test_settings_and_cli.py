"""Start-up configuration: token rules, bind rules, and the CLI's refusals (exit 2, no traceback)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from server_stub.service.demo_data import write_demo_database
from server_stub.service.settings import (
    ServiceSettings,
    StartupRefused,
    check_bind,
    load_settings,
)
from tests.support import ROOT

SHORT_TOKEN = "short-token-of-23-chars"  # 23 characters
TOKEN_24 = "a-token-of-24-characters"
TOKEN_32 = "a-token-of-exactly-32-characters"


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    return subprocess.run(
        [sys.executable, "-m", "server_stub.service", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_token_lengths() -> None:
    assert len(SHORT_TOKEN) == 23
    assert len(TOKEN_24) == 24
    assert len(TOKEN_32) == 32
    with pytest.raises(StartupRefused, match="at least 24"):
        load_settings(api_token=SHORT_TOKEN)
    assert load_settings(api_token=TOKEN_24).auth_enabled
    assert not load_settings(api_token="").auth_enabled
    assert not load_settings(api_token="   ").auth_enabled


def test_token_must_be_visible_ascii() -> None:
    with pytest.raises(StartupRefused, match="visible ASCII"):
        load_settings(api_token="a token with spaces inside it")
    with pytest.raises(StartupRefused, match="visible ASCII"):
        load_settings(api_token="ünïcödé-tøken-of-enough-length")


def test_environment_variables_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SERVICE_API_TOKEN", f"  {TOKEN_32}\n")
    monkeypatch.setenv("SERVICE_TRUST_PROXY", "1")
    monkeypatch.setenv("SERVICE_TRUSTED_PROXY_HOPS", "2")
    monkeypatch.setenv("SERVICE_DB_PATH", str(tmp_path / "x.db"))
    monkeypatch.setenv("SERVICE_WEBAUTHN_RP_ID", "svc.example.org")
    monkeypatch.setenv("SERVICE_WEBAUTHN_ORIGIN", "https://svc.example.org")
    settings = load_settings()
    assert settings.api_token.get_secret_value() == TOKEN_32
    assert settings.trust_proxy is True
    assert settings.trusted_proxy_hops == 2
    assert settings.db_path == tmp_path / "x.db"
    assert settings.webauthn_rp_id == "svc.example.org"
    assert TOKEN_32 not in repr(settings)


def test_proxy_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TRUST_PROXY", "")
    monkeypatch.setenv("SERVICE_TRUSTED_PROXY_HOPS", "")
    settings = load_settings()
    assert settings.trust_proxy is False
    assert settings.trusted_proxy_hops == 1
    monkeypatch.setenv("SERVICE_TRUST_PROXY", "0")
    assert load_settings().trust_proxy is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SERVICE_TRUSTED_PROXY_HOPS", "0"),
        ("SERVICE_TRUSTED_PROXY_HOPS", "many"),
        ("SERVICE_TRUST_PROXY", "perhaps"),
    ],
)
def test_bad_values_are_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(StartupRefused, match=name) as refused:
        load_settings()
    assert value not in str(refused.value).replace(name, "")


@pytest.mark.parametrize(
    "value", ["true", "True", "yes", "on", "false", "no", "off", "2", "01", "1.0", "enabled"]
)
def test_trust_proxy_takes_only_1_or_0(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SERVICE_TRUST_PROXY", value)
    with pytest.raises(StartupRefused) as refused:
        load_settings()
    assert str(refused.value) == (
        "invalid configuration: SERVICE_TRUST_PROXY: Value error, "
        "must be 1 (trust X-Forwarded-For) or 0 / empty (off)"
    )
    monkeypatch.setenv("SERVICE_TRUST_PROXY", " 1 ")
    assert load_settings().trust_proxy is True


def test_bind_rules() -> None:
    open_settings = ServiceSettings(api_token="")  # type: ignore[arg-type]
    assert check_bind(open_settings, "127.0.0.1", insecure_open=False) == []
    assert check_bind(open_settings, "::1", insecure_open=False) == []
    assert check_bind(open_settings, "localhost", insecure_open=False) == []
    with pytest.raises(StartupRefused, match="--insecure-open"):
        check_bind(open_settings, "0.0.0.0", insecure_open=False)
    with pytest.raises(StartupRefused):
        check_bind(open_settings, "192.0.2.10", insecure_open=False)
    warnings = check_bind(open_settings, "0.0.0.0", insecure_open=True)
    assert warnings
    assert "WITHOUT authentication" in warnings[0]
    short = ServiceSettings(api_token=TOKEN_24)  # type: ignore[arg-type]
    assert check_bind(short, "127.0.0.1", insecure_open=False) == []
    warnings = check_bind(short, "0.0.0.0", insecure_open=False)
    assert warnings
    assert "shorter than 32" in warnings[0]
    assert TOKEN_24 not in warnings[0]
    assert check_bind(ServiceSettings(api_token=TOKEN_32), "0.0.0.0", insecure_open=False) == []  # type: ignore[arg-type]
    assert check_bind(open_settings, "127.5.6.7", insecure_open=False) == []
    with pytest.raises(StartupRefused):
        check_bind(open_settings, "svc.example.org", insecure_open=False)


@pytest.mark.e2e
def test_cli_refuses_a_short_token_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    result = run_cli(
        "service", "--db", str(tmp_path / "x.db"), env={"SERVICE_API_TOKEN": SHORT_TOKEN}
    )
    assert result.returncode == 2
    assert "at least 24" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert SHORT_TOKEN not in result.stderr + result.stdout


@pytest.mark.e2e
def test_cli_refuses_an_open_non_loopback_bind(tmp_path: Path) -> None:
    result = run_cli(
        "service",
        "--db",
        str(tmp_path / "x.db"),
        "--host",
        "0.0.0.0",
        env={"SERVICE_API_TOKEN": ""},
    )
    assert result.returncode == 2
    assert "--insecure-open" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_cli_refuses_bad_hops(tmp_path: Path) -> None:
    result = run_cli(
        "service", "--db", str(tmp_path / "x.db"), env={"SERVICE_TRUSTED_PROXY_HOPS": "-3"}
    )
    assert result.returncode == 2
    assert "SERVICE_TRUSTED_PROXY_HOPS" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_cli_refuses_a_trust_proxy_value_other_than_1_or_0(tmp_path: Path) -> None:
    result = run_cli("service", "--db", str(tmp_path / "x.db"), env={"SERVICE_TRUST_PROXY": "true"})
    assert result.returncode == 2
    assert result.stderr.startswith("svc-stub: invalid configuration: SERVICE_TRUST_PROXY: ")
    assert "must be 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    write_demo_database(db)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    # A daemon that uses write-ahead logging: SQLite gives -wal and -shm the database's mode.
    connection = sqlite3.connect(db)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(
            "INSERT INTO events (ts, level, kind, source, message) "
            "VALUES ('2026-01-01T00:00:00Z', 'info', 'x', 'admin', 'y')"
        )
        connection.commit()
        for suffix in ("-wal", "-shm"):
            assert stat.S_IMODE(Path(f"{db}{suffix}").stat().st_mode) == 0o600, suffix
    finally:
        connection.close()


@pytest.mark.e2e
def test_cli_needs_a_database(tmp_path: Path) -> None:
    result = run_cli("service", env={})
    assert result.returncode == 2
    assert "SERVICE_DB_PATH" in result.stderr
