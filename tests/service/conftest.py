"""Fixtures for the data service stub: a fake clock, a demo database, in-process apps."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server_stub.service.app import create_app
from server_stub.service.auth import Authenticator
from server_stub.service.demo_data import write_demo_database
from server_stub.service.settings import ServiceSettings

TOKEN = "svc-test-token-4f9c2b7d1e8a6c3b5d0e"
WRONG = "svc-wrong-token-0000000000000000000"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
PEER = "198.51.100.7"
TEST_HOST = "testserver"
"""The `Host` of Starlette's test client, answered by the in-process service like loopback names."""


class FakeClock:
    """Monotonic seconds that only move when a test says so."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class ServiceUnderTest:
    app: Starlette
    clock: FakeClock
    settings: ServiceSettings

    @property
    def auth(self) -> Authenticator:
        authenticator = self.app.state.authenticator
        assert isinstance(authenticator, Authenticator)
        return authenticator

    def client(self, peer: str = PEER, *, https: bool = False) -> TestClient:
        base_url = "https://testserver" if https else "http://testserver"
        return TestClient(app=self.app, base_url=base_url, client=(peer, 40000))


MakeService = Callable[..., ServiceUnderTest]


@pytest.fixture(scope="session")
def demo_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "service.db"
    write_demo_database(path)
    return path


@pytest.fixture
def demo_db(demo_db_template: Path, tmp_path: Path) -> Path:
    """A private copy: tests may change it."""
    path = tmp_path / "service.db"
    shutil.copyfile(demo_db_template, path)
    return path


@pytest.fixture
def make_service(demo_db: Path) -> MakeService:
    def make(
        *,
        token: str = TOKEN,
        trust_proxy: bool = False,
        hops: int = 1,
        db_path: Path | None = demo_db,
        webauthn_origin: str | None = None,
        webauthn_rp_id: str | None = None,
    ) -> ServiceUnderTest:
        settings = ServiceSettings(
            api_token=token,  # type: ignore[arg-type]
            trust_proxy=trust_proxy,
            trusted_proxy_hops=hops,
            db_path=db_path,
            webauthn_origin=webauthn_origin,
            webauthn_rp_id=webauthn_rp_id,
            allowed_hosts=TEST_HOST,
        )
        clock = FakeClock()
        return ServiceUnderTest(create_app(settings, clock=clock), clock, settings)

    return make


@pytest.fixture
def service(make_service: MakeService) -> ServiceUnderTest:
    return make_service()
