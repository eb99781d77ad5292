"""A real authorization server for the OAuth tests: panva's oidc-provider (npm, pinned in
idp/package-lock.json) run by node on loopback, with keys the tests make, and the real gateway
started against it."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests import parallel
from tests.e2e import e2e_fixture
from tests.mcp.conftest import PortalStub, portal, process_env  # noqa: F401 (a fixture)
from tests.support import PORT, Server, reserved_port, running_server
from tests.support_npm import npm as run_npm

HERE = Path(__file__).resolve().parent
IDP = HERE / "idp"
SCOPES = ("svc:read", "svc:intel")
CLIENT_SECRET = "oauth-tests-client-secret-0123456789abcdef"


def signing_key(kid: str) -> tuple[ec.EllipticCurvePrivateKey, dict[str, Any]]:
    """A P-256 key and its private JWK (what the authorization server signs with)."""
    key = ec.generate_private_key(ec.SECP256R1())
    jwk: dict[str, Any] = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key))
    jwk.update(kid=kid, alg="ES256", use="sig")
    return key, jwk


def service_client(client_id: str, scope: str = " ".join(SCOPES)) -> dict[str, Any]:
    """A confidential client of the client-credentials grant (a script, a CI job)."""
    return {
        "client_id": client_id,
        "client_secret": CLIENT_SECRET,
        "grant_types": ["client_credentials"],
        "redirect_uris": [],
        "response_types": [],
        "scope": scope,
    }


@dataclass
class AuthServer:
    """One oidc-provider process; `restart` keeps its port, hence its issuer."""

    root: Path
    port: int
    resources: list[str]
    jwks: list[dict[str, Any]]
    clients: list[dict[str, Any]] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    """Resources whose access tokens are opaque (introspected), not JWTs."""
    grants: dict[str, list[str]] | None = None
    """The per-person policy (idp/server.js): person -> the scopes they may hold, `*` others."""
    store: str | None = None
    """A file keeping registered clients across a restart."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        config = self.root / f"idp-{self.port}.json"
        config.write_text(
            json.dumps(
                {
                    "port": self.port,
                    "jwks": {"keys": self.jwks},
                    "clients": self.clients,
                    "resources": self.resources,
                    "opaque": self.opaque,
                    "scopes": list(SCOPES),
                    **({"grants": self.grants} if self.grants is not None else {}),
                    **({"store": self.store} if self.store is not None else {}),
                }
            )
        )
        log = (self.root / f"idp-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            ["node", str(self.root / "server.js"), str(config)],
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError((self.root / f"idp-{self.port}.log").read_text())
            try:
                httpx.get(self.issuer + "/.well-known/openid-configuration", timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("oidc-provider did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def restart(self, jwks: list[dict[str, Any]]) -> None:
        self.stop()
        self.jwks = jwks
        self.start()

    def token(self, client_id: str, scope: str = " ".join(SCOPES), resource: str = "") -> str:
        """An access token by the client-credentials grant, for `resource`."""
        answer = httpx.post(
            self.issuer + "/token",
            data={
                "grant_type": "client_credentials",
                "scope": scope,
                "resource": resource or self.resources[0],
            },
            auth=(client_id, CLIENT_SECRET),
        )
        answer.raise_for_status()
        return str(answer.json()["access_token"])


@e2e_fixture(scope="session")
def idp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned oidc-provider installed by `npm ci` into a folder of the run's own (once for
    all workers: each server writes only files named by its port there)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail("the OAuth tests need node and npm (apt-get install -y nodejs npm)")

    def install(root: Path) -> None:
        for name in ("package.json", "package-lock.json", "server.js"):
            shutil.copy(IDP / name, root / name)
        quiet = ["--no-audit", "--no-fund", "--loglevel=error", "--ignore-scripts"]
        run_npm("ci", *quiet, cwd=root, timeout=600)

    return parallel.fill_once(parallel.run_folder("oauth-idp", tmp_path_factory), install)


@contextlib.contextmanager
def auth_server(
    root: Path,
    resources: Sequence[str],
    clients: Sequence[dict[str, Any]],
    kid: str,
    grants: dict[str, list[str]] | None = None,
) -> Iterator[tuple[AuthServer, ec.EllipticCurvePrivateKey]]:
    key, jwk = signing_key(kid)
    with reserved_port() as port:
        server = AuthServer(root, port, list(resources), [jwk], list(clients), grants=grants)
        server.start()
        try:
            yield server, key
        finally:
            server.stop()


def start_gateway(
    backend: PortalStub, log: Path, issuer: str, port: int, *args: str, **variables: str
) -> contextlib.AbstractContextManager[Server]:
    return running_server(
        [
            "-m",
            "svc_mcp",
            "--http",
            "--port",
            PORT,
            "--oauth-issuer",
            issuer,
            "--public-url",
            f"http://127.0.0.1:{PORT}/mcp",
            *args,
        ],
        port=port,
        log_path=log,
        ready_path="/.well-known/oauth-protected-resource/mcp",
        env=process_env({**backend.env("auditor"), **variables}),
    )


# The install tests' fake home and in-process CLI, for install and doctor against an OAuth gateway.
from tests.install.conftest import fake_home, run_cli  # noqa: E402, F401
from tests.support_claude_code import claude_code  # noqa: E402, F401 (a fixture)
