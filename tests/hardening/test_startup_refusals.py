"""What stops a start, in one line: every server and the signer refuse a secret anyone could guess
(one character repeated, or one short pattern repeated) and say the command that makes a good one
(the secrets the demo and the tests use still pass, and no refusal quotes the secret); a bad
connection limit, proxy list or Host list names its variable."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from svc_serving.secrets_check import MAKE_ONE, guessable
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.mcp.conftest import SERVICE_TOKEN, SVC_MCP, SVC_STUB, run_commands
from tests.support import reserved_port

ONE_CHARACTER = "k" * 40
ONE_PATTERN = "Ab3$Xy7!" * 5


@e2e_fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("guessable") / "service.db"
    stub_data.service_db(db)
    return db


@e2e_fixture(scope="module")
def portal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("guessable") / "portal"
    stub_data.portal_folder(data)
    return data


def starts(
    demo_db: Path, portal_dir: Path, secret: str
) -> dict[str, subprocess.CompletedProcess[str]]:
    with reserved_port() as number:
        port = str(number)
        proxy = {
            "PORTAL_ACCESS_JWT_SECRET": secret,
            "PORTAL_ACCESS_JWT_ISSUER": "https://issuer.test",
            "PORTAL_ACCESS_JWT_AUDIENCE": "aud",
        }
        commands = {
            "SERVICE_API_TOKEN": (
                [SVC_STUB, "service", "--db", str(demo_db), "--port", port],
                {"SERVICE_API_TOKEN": secret},
            ),
            "SERVICE_INTEL_HMAC": (
                [SVC_STUB, "service", "--db", str(demo_db), "--port", port],
                {"SERVICE_API_TOKEN": SERVICE_TOKEN, "SERVICE_INTEL_HMAC": secret},
            ),
            "PORTAL_ACCESS_JWT_SECRET": (
                [SVC_STUB, "portal", "--data", str(portal_dir), "--port", port],
                proxy,
            ),
            "svc-stub intel sign": (
                [SVC_STUB, "intel", "sign", "--file", "/dev/null"],
                {"SERVICE_INTEL_HMAC": secret},
            ),
            "SVC_MCP_GATEWAY_TOKEN": (
                [SVC_MCP, "--http", "--port", port],
                {"SVC_MCP_GATEWAY_TOKEN": secret},
            ),
        }
        done = run_commands(list(commands.values()))
        return dict(zip(commands, done, strict=True))


@pytest.mark.parametrize("secret", [ONE_CHARACTER, ONE_PATTERN], ids=["one character", "pattern"])
def test_a_guessable_secret_stops_every_start(demo_db: Path, portal_dir: Path, secret: str) -> None:
    for what, done in starts(demo_db, portal_dir, secret).items():
        assert done.returncode != 0, what
        assert "could be guessed" in done.stderr, (what, done.stderr)
        assert MAKE_ONE in done.stderr, what
        assert secret not in done.stderr + done.stdout, what


def test_the_secrets_the_demo_and_the_tests_make_pass() -> None:
    made = [secrets.token_urlsafe(32) for _ in range(2000)] + [
        secrets.token_hex(16) for _ in range(2000)
    ]
    assert [value for value in made if guessable(value)] == []
    assert guessable(SERVICE_TOKEN) is None


def test_bad_network_settings_stop_the_start_with_one_line(demo_db: Path, portal_dir: Path) -> None:
    with reserved_port() as number:
        port = str(number)
        service = [SVC_STUB, "service", "--db", str(demo_db), "--port", port]
        portal = [SVC_STUB, "portal", "--data", str(portal_dir), "--port", port]
        gateway = [SVC_MCP, "--http", "--no-auth", "--port", port]
        cases = {
            "SVC_HTTP_HEAD_TIMEOUT": [
                (command, {"SVC_HTTP_HEAD_TIMEOUT": "30"}) for command in (service, portal, gateway)
            ],
            "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS": [
                (service, {"SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "many"})
            ],
            "SVC_HTTP_IDLE_TIMEOUT": [(gateway, {"SVC_HTTP_IDLE_TIMEOUT": "0"})],
            "SVC_HTTP_BODY_TIMEOUT": [(portal, {"SVC_HTTP_BODY_TIMEOUT": "forever"})],
            "SERVICE_TRUSTED_PROXY_ADDRESSES": [
                (
                    service,
                    {"SERVICE_TRUST_PROXY": "1", "SERVICE_TRUSTED_PROXY_ADDRESSES": "proxy.lan"},
                )
            ],
            "PORTAL_ALLOWED_HOSTS": [(portal, {"PORTAL_ALLOWED_HOSTS": "https://portal.example/"})],
        }
        for variable, commands in cases.items():
            for done in run_commands(commands):
                assert done.returncode == 2, (variable, done.stderr)
                assert variable in done.stderr, (variable, done.stderr)
                assert len(done.stderr.strip().splitlines()) == 1, done.stderr
                assert "Traceback" not in done.stderr
