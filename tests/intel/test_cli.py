"""`svc-stub intel sign` and `verify` as an operator runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SECRET = "operator-secret-" + "x" * 24


def stub(
    *args: str, stdin: str = "", secret: str | None = SECRET
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SERVICE_INTEL_HMAC"}
    if secret is not None:
        env["SERVICE_INTEL_HMAC"] = secret
    return subprocess.run(
        [sys.executable, "-m", "server_stub", "intel", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


DRAFT = json.dumps({"source": "desk-7", "kind": "note", "body": {"text": "hello"}})


def test_sign_then_verify(tmp_path: Path) -> None:
    out = tmp_path / "envelope.json"
    signed = stub("sign", "--file", "-", "--out", str(out), stdin=DRAFT)
    assert signed.returncode == 0, signed.stderr
    envelope = json.loads(out.read_text())
    assert envelope["schema"] == "svc.intel.v1"
    assert len(envelope["sig"]) == 43
    verified = stub("verify", "--file", str(out))
    assert verified.returncode == 0
    assert envelope["id"] in verified.stdout


def test_verify_fails_on_tampering_with_exit_1(tmp_path: Path) -> None:
    envelope = json.loads(stub("sign", "--file", "-", stdin=DRAFT).stdout)
    envelope["body"]["text"] = "hellO"
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(envelope))
    result = stub("verify", "--file", str(path))
    assert result.returncode == 1
    assert "bad_signature" in result.stderr
    assert SECRET not in result.stderr + result.stdout


def test_sign_refuses_without_a_proper_secret() -> None:
    missing = stub("sign", "--file", "-", stdin=DRAFT, secret=None)
    assert missing.returncode == 2
    assert "set SERVICE_INTEL_HMAC" in missing.stderr
    short = stub("sign", "--file", "-", stdin=DRAFT, secret="too-short")
    assert short.returncode == 2
    assert "at least 32 bytes" in short.stderr
    assert "too-short" not in short.stderr


def test_sign_reports_bad_input_without_a_traceback() -> None:
    result = stub("sign", "--file", "-", stdin="{not json")
    assert result.returncode == 2
    assert "is not JSON" in result.stderr
    assert "Traceback" not in result.stderr
