"""`POST /api/v1/intel` in process: every refusal has its own code and stores nothing; replay and
idempotency by id; no refusal echoes the key or the expected signature."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server_stub.intel.envelope import format_time, key_bytes, sign, signature
from server_stub.service.app import create_app
from server_stub.service.demo_data import write_demo_database
from server_stub.service.settings import ServiceSettings
from svc_mcp.core.connection import request_body
from svc_mcp.core.errors import InvalidArgument
from svc_mcp.tools.service import INTEL_MAX_BYTES, check_envelope

TOKEN = "intake-test-token-" + "t" * 20
SECRET = "intake-test-key-" + "k" * 20
KEY = key_bytes(SECRET)
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("intake") / "service.db"
    write_demo_database(path)
    return path


@pytest.fixture
def db(template_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "service.db"
    path.write_bytes(template_db.read_bytes())
    return path


MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(db: Path) -> Iterator[MakeClient]:
    clients: list[TestClient] = []

    def make(*, intel_hmac: str = SECRET, token: str = TOKEN) -> TestClient:
        settings = ServiceSettings(
            api_token=token,  # type: ignore[arg-type]
            intel_hmac=intel_hmac,  # type: ignore[arg-type]
            db_path=db,
            allowed_hosts="testserver",  # the test client's Host
        )
        client = TestClient(create_app(settings, wall_clock=lambda: NOW.timestamp()))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def stored(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT id, body FROM intel_inbox ORDER BY id").fetchall()


def envelope(**fields: Any) -> dict[str, Any]:
    draft = {"source": "desk-7", "kind": "note", "body": {"symbol": "ABC", "view": "long"}}
    return sign(draft | fields, KEY, NOW)


def post(client: TestClient, body: Any, **headers: str) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(
        "/api/v1/intel",
        content=content,
        headers={**BEARER, "Content-Type": "application/json", **headers},
    )


def test_accepts_then_lists_the_envelope(make_client: MakeClient, db: Path) -> None:
    client = make_client()
    sent = envelope()
    response = post(client, sent)
    assert response.status_code == 201
    assert response.json()["data"] == {
        "id": sent["id"],
        "duplicate": False,
        "received_at": "2026-11-21T12:00:00Z",
    }
    listed = client.get("/api/v1/intel", headers=BEARER).json()["data"]
    assert listed == [
        {
            "id": sent["id"],
            "schema": "svc.intel.v1",
            "source": "desk-7",
            "kind": "note",
            "issued_at": sent["issued_at"],
            "expires_at": None,
            "received_at": "2026-11-21T12:00:00Z",
            "body": sent["body"],
            "forwarded_by": None,  # no X-Svc-Forwarded-By: sent by no gateway
        }
    ]
    assert "sig" not in json.dumps(listed)


def test_replay_is_a_duplicate_and_other_content_is_a_conflict(
    make_client: MakeClient, db: Path
) -> None:
    client = make_client()
    sent = envelope(id="intel-1")
    assert post(client, sent).status_code == 201
    again = post(client, json.loads(json.dumps(sent, indent=3)))
    assert again.status_code == 200
    assert again.json()["data"]["duplicate"] is True
    other = post(client, envelope(id="intel-1", body={"symbol": "XYZ"}))
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "conflict"
    assert stored(db) == [("intel-1", json.dumps(sent["body"], separators=(",", ":")))]


def _tampered(change: Callable[[dict[str, Any]], Any]) -> Any:
    return change(envelope())


REFUSALS = [
    (
        "changed body",
        lambda e: e | {"body": {"symbol": "ABD", "view": "long"}},
        422,
        "bad_signature",
    ),
    ("changed source", lambda e: e | {"source": "desk-8"}, 422, "bad_signature"),
    (
        "changed issued_at",
        lambda e: e | {"issued_at": "2026-11-21T11:59:59Z"},
        422,
        "bad_signature",
    ),
    (
        "wrong key",
        lambda e: sign(
            {k: v for k, v in e.items() if k != "sig"},
            key_bytes("another-test-key-6Dj1Fk8Gl3Hz5Xc0Vb7Nm"),
            NOW,
        ),
        422,
        "bad_signature",
    ),
    ("truncated sig", lambda e: e | {"sig": e["sig"][:20]}, 400, "invalid_envelope"),
    ("missing sig", lambda e: {k: v for k, v in e.items() if k != "sig"}, 400, "missing_signature"),
    ("wrong schema tag", lambda e: e | {"schema": "svc.intel.v0"}, 400, "unknown_schema"),
    ("extra field", lambda e: e | {"note": "x"}, 400, "invalid_envelope"),
    ("array", lambda e: [e], 400, "invalid_envelope"),
    (
        "future issued_at",
        lambda e: envelope(issued_at=format_time(NOW + timedelta(minutes=10))),
        422,
        "not_yet_valid",
    ),
    (
        "expired",
        lambda e: envelope(
            issued_at=format_time(NOW - timedelta(hours=2)),
            expires_at=format_time(NOW - timedelta(hours=1)),
        ),
        422,
        "expired",
    ),
    ("stale", lambda e: envelope(issued_at=format_time(NOW - timedelta(hours=25))), 422, "expired"),
]


@pytest.mark.parametrize(
    ("case", "change", "status", "code"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusals_store_nothing(
    make_client: MakeClient, db: Path, case: str, change: Any, status: int, code: str
) -> None:
    client = make_client()
    document = _tampered(change)
    response = post(client, document)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert stored(db) == []
    assert SECRET not in response.text
    if isinstance(document, dict) and "sig" in document:
        assert signature(document, KEY) not in response.text


def test_reordered_and_respaced_json_verifies(make_client: MakeClient) -> None:
    sent = envelope()
    text = json.dumps(dict(reversed(list(sent.items()))), indent=5, ensure_ascii=True)
    assert post(make_client(), text.encode()).status_code == 201


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (b"{not json", {}, 400, "bad_request"),
        (b'{"schema": "svc.intel.v1", "schema": "x"}', {}, 400, "invalid_envelope"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        (b"[" * 70_000, {}, 413, "payload_too_large"),
    ],
)
def test_malformed_requests(
    make_client: MakeClient, db: Path, body: bytes, headers: dict[str, str], status: int, code: str
) -> None:
    response = post(make_client(), body, **headers)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert stored(db) == []


def test_needs_the_token_and_counts_a_wrong_one(make_client: MakeClient) -> None:
    client = make_client()
    response = client.post("/api/v1/intel", json=envelope())
    assert response.status_code == 401
    wrong = client.post(
        "/api/v1/intel", json=envelope(), headers={"Authorization": "Bearer " + "w" * 30}
    )
    assert wrong.status_code == 401


def test_without_a_key_the_intake_is_off(make_client: MakeClient, db: Path) -> None:
    response = post(make_client(intel_hmac=""), envelope())
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "intel_disabled"
    assert "SERVICE_INTEL_HMAC" in response.json()["error"]["message"]
    assert stored(db) == []


def test_a_short_key_refuses_start_up(tmp_path: Path) -> None:
    from server_stub.service.settings import StartupRefused, load_settings

    with pytest.raises(StartupRefused, match="at least 32 bytes") as caught:
        load_settings(api_token=TOKEN, intel_hmac="short-key", db_path=tmp_path / "x.db")
    assert "short-key" not in str(caught.value)


def test_the_intake_takes_every_envelope_the_client_lets_through(make_client: MakeClient) -> None:
    """The client's check passes an envelope of exactly its cap (as JSON) and refuses one byte
    more; the intake reads the first (a bad signature, not a size) and refuses the second as too
    large: lowering either side's cap fails this."""
    client = make_client()
    draft = {"schema": "svc.intel.v1", "sig": "x", "body": {"text": ""}}
    room = INTEL_MAX_BYTES - len(request_body(draft) or b"")
    largest = draft | {"body": {"text": "x" * room}}
    check_envelope({"envelope": largest})
    assert len(request_body(largest) or b"") == INTEL_MAX_BYTES
    over = draft | {"body": {"text": "x" * (room + 1)}}
    with pytest.raises(InvalidArgument, match="at most 64 KiB"):
        check_envelope({"envelope": over})
    assert post(client, request_body(largest)).status_code == 400
    refused = post(client, request_body(over))
    assert (refused.status_code, refused.json()["error"]["code"]) == (413, "payload_too_large")
