"""Data routes, health, the HTML shell, and the envelope for every kind of bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from httpx import Response
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server_stub.http import encode_cursor
from tests.service.conftest import BEARER, TOKEN, MakeService, ServiceUnderTest

DATA_ROUTES = (
    "/api/v1/system",
    "/api/v1/positions",
    "/api/v1/orders",
    "/api/v1/fills",
    "/api/v1/pnl",
    "/api/v1/risk",
    "/api/v1/events",
    "/api/v1/intel",
)
LIST_ROUTES = DATA_ROUTES[1:]
GET_ROUTES = ("/", "/health/live", "/health/ready", "/api/v1/auth/status", *DATA_ROUTES)


@pytest.fixture
def client(service: ServiceUnderTest) -> TestClient:
    return service.client()


def get_data(client: TestClient, path: str) -> object:
    response = client.get(path, headers=BEARER)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True
    return body["data"]


def assert_error(response: Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body == {"ok": False, "error": {"code": code, "message": body["error"]["message"]}}
    assert body["error"]["message"]


def test_every_data_route_needs_a_credential_when_a_token_is_set(client: TestClient) -> None:
    for path in DATA_ROUTES:
        response = client.get(path)
        assert_error(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert client.get(path, headers={"X-API-Token": TOKEN}).status_code == 200


def test_data_routes_are_open_when_auth_is_disabled(make_service: MakeService) -> None:
    client = make_service(token="").client()
    for path in DATA_ROUTES:
        assert client.get(path).status_code == 200


def test_system(client: TestClient) -> None:
    system = get_data(client, "/api/v1/system")
    assert isinstance(system, dict)
    assert system["mode"] == "running"
    assert system["trading_enabled"] is True
    assert system["account"] == "DEMO-001"
    assert system["open_positions"] == 4
    assert system["equity"] == pytest.approx(system["cash"] + system["net_exposure"], abs=0.01)
    assert set(system) >= {"gross_exposure", "unrealized_pnl", "open_orders", "last_heartbeat_at"}


def test_positions_and_symbol_filter(client: TestClient) -> None:
    positions = get_data(client, "/api/v1/positions")
    assert isinstance(positions, list)
    assert [p["symbol"] for p in positions] == ["AAPL", "MSFT", "NVDA", "SPY"]
    nvda = get_data(client, "/api/v1/positions?symbol=nvda")
    assert isinstance(nvda, list)
    assert len(nvda) == 1
    assert nvda[0]["side"] == "short"
    assert nvda[0]["quantity"] < 0
    assert get_data(client, "/api/v1/positions?symbol=TLT") == []


def test_orders_paging_walks_every_order_once(client: TestClient) -> None:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = "limit=250" + (f"&cursor={cursor}" if cursor else "")
        body = client.get(f"/api/v1/orders?{query}", headers=BEARER).json()
        seen.extend(order["id"] for order in body["data"])
        cursor = body.get("next_cursor")
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) >= 300
    assert seen == sorted(seen, reverse=True)  # ids grow with time: newest first


def test_default_and_maximum_page_sizes(client: TestClient) -> None:
    body = client.get("/api/v1/fills", headers=BEARER).json()
    assert len(body["data"]) == 100
    assert "next_cursor" in body
    body = client.get("/api/v1/fills?limit=1000", headers=BEARER).json()
    assert 300 <= len(body["data"]) <= 1000
    last = client.get(f"/api/v1/fills?cursor={encode_cursor(10**9)}", headers=BEARER).json()
    assert last == {"ok": True, "data": []}


def test_order_filters(client: TestClient) -> None:
    open_orders = get_data(client, "/api/v1/orders?status=open&limit=1000")
    assert isinstance(open_orders, list)
    assert open_orders
    assert {o["status"] for o in open_orders} <= {"new", "partially_filled"}
    assert all(o["remaining_quantity"] > 0 for o in open_orders)
    rejected = get_data(client, "/api/v1/orders?status=rejected&symbol=AAPL&side=sell")
    assert isinstance(rejected, list)
    assert all(o["reject_reason"] and o["symbol"] == "AAPL" for o in rejected)
    window = get_data(
        client, "/api/v1/orders?since=2025-06-30T00:00:00Z&until=2025-06-30T16:00:00%2B02:00"
    )
    assert isinstance(window, list)
    assert window
    assert all("2025-06-30T00:00:00Z" <= o["created_at"] < "2025-06-30T14:00:00Z" for o in window)


def test_fills_filters(client: TestClient) -> None:
    fills = get_data(client, "/api/v1/fills?limit=5")
    assert isinstance(fills, list)
    order_id = fills[0]["order_id"]
    of_order = get_data(client, f"/api/v1/fills?order_id={order_id}")
    assert isinstance(of_order, list)
    assert of_order
    assert {f["order_id"] for f in of_order} == {order_id}
    assert all(
        f["notional"] == pytest.approx(f["quantity"] * f["price"], abs=0.01) for f in of_order
    )


def test_pnl_has_90_days_newest_first(client: TestClient) -> None:
    days = get_data(client, "/api/v1/pnl")
    assert isinstance(days, list)
    assert len(days) == 90
    dates = [d["date"] for d in days]
    assert dates == sorted(dates, reverse=True)
    june = get_data(client, "/api/v1/pnl?since=2025-06-01&until=2025-07-01")
    assert isinstance(june, list)
    assert all(d["date"].startswith("2025-06") for d in june)
    assert len(june) == 21


def test_risk_limits(client: TestClient) -> None:
    limits = get_data(client, "/api/v1/risk")
    assert isinstance(limits, list)
    names = {(r["name"], r["symbol"]) for r in limits}
    assert ("max_daily_loss", None) in names
    assert ("max_position", "NVDA") in names
    nvda = next(r for r in limits if r["symbol"] == "NVDA")
    assert nvda["status"] == "warning"
    assert nvda["utilization"] == pytest.approx(0.8)


def test_events_filters(client: TestClient) -> None:
    warnings = get_data(client, "/api/v1/events?level=warning&limit=1000")
    assert isinstance(warnings, list)
    assert warnings
    assert {e["level"] for e in warnings} == {"warning"}
    rejections = get_data(client, "/api/v1/events?kind=order_rejected&limit=1000")
    assert isinstance(rejections, list)
    assert all(e["kind"] == "order_rejected" and e["symbol"] for e in rejections)


def test_intel_inbox_lists_stored_envelopes(service: ServiceUnderTest, demo_db: Path) -> None:
    client = service.client()
    assert get_data(client, "/api/v1/intel") == []
    with sqlite3.connect(demo_db) as connection:
        connection.execute(
            "INSERT INTO intel_inbox VALUES ('i-1', 'svc.intel.v1', 'desk', 'note',"
            " '2025-06-30T12:00:00Z', NULL, '2025-06-30T12:00:01Z', '{\"text\": \"hello\"}', 'sig', NULL)"
        )
    assert get_data(client, "/api/v1/intel") == [
        {
            "id": "i-1",
            "schema": "svc.intel.v1",
            "source": "desk",
            "kind": "note",
            "issued_at": "2025-06-30T12:00:00Z",
            "expires_at": None,
            "received_at": "2025-06-30T12:00:01Z",
            "body": {"text": "hello"},
            "forwarded_by": None,
        }
    ]


def test_health_and_status_are_open(client: TestClient) -> None:
    assert client.get("/health/live").json() == {"ok": True, "data": {"status": "live"}}
    assert client.get("/health/ready").json() == {"ok": True, "data": {"status": "ready"}}
    assert client.get("/api/v1/auth/status").json() == {
        "ok": True,
        "data": {"auth_required": True, "authenticated": False},
    }


@pytest.mark.parametrize("problem", ["missing", "garbage", "empty", "no_schema", "none"])
def test_ready_is_503_when_the_database_cannot_be_read(
    make_service: MakeService, tmp_path: Path, problem: str
) -> None:
    path = tmp_path / "broken.db"
    if problem == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif problem == "empty":
        path.write_bytes(b"")
    elif problem == "no_schema":
        sqlite3.connect(path).close()
    service = make_service(db_path=None if problem == "none" else path)
    client = service.client()
    assert_error(client.get("/health/ready"), 503, "unavailable")
    assert client.get("/health/live").status_code == 200
    for route in DATA_ROUTES:
        assert_error(client.get(route, headers=BEARER), 503, "unavailable")
    assert not path.exists() or problem != "missing"  # read-only: never created


def test_the_server_never_writes_the_database(service: ServiceUnderTest, demo_db: Path) -> None:
    before = demo_db.read_bytes()
    client = service.client()
    for path in GET_ROUTES:
        client.get(path, headers=BEARER)
    assert demo_db.read_bytes() == before


def test_html_shell_is_public_and_shows_a_login_form_when_a_token_is_set(
    make_service: MakeService,
) -> None:
    gated = make_service().client().get("/")
    assert gated.status_code == 200
    assert gated.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in gated.headers["content-security-policy"]
    assert 'id="login-form"' in gated.text
    assert '<section id="login" aria-labelledby="login-title" >' in gated.text
    assert TOKEN not in gated.text
    open_shell = make_service(token="").client().get("/")
    assert '<section id="login" aria-labelledby="login-title" hidden>' in open_shell.text
    client = make_service().client()
    scripts = ""
    for name in ("shell.js", "api.js", "dashboard.js", "chart.js", "passkeys.js"):
        script = client.get(f"/static/{name}")
        assert script.status_code == 200
        assert script.headers["content-type"] == "text/javascript; charset=utf-8"
        scripts += script.text
    assert "/api/v1/auth/login" in scripts
    assert "localStorage" not in scripts.replace("no localStorage", "")
    assert "sessionStorage" not in scripts.replace("no sessionStorage", "")
    assert "document.cookie" not in scripts
    assert "innerHTML" not in scripts
    # No inline script or style: the CSP allows only files from this origin.
    assert '<script type="module" src="/static/shell.js"></script>' in gated.text
    assert "<script>" not in gated.text
    assert " style=" not in gated.text
    assert client.get("/static/favicon.svg").headers["content-type"] == "image/svg+xml"
    assert client.get("/static/shell.css").headers["content-type"] == "text/css; charset=utf-8"
    assert client.get("/static/nope.js").status_code == 404
    assert client.get("/static/..%2Fapp.py").status_code == 404


def test_every_non_get_on_a_get_route_is_405_with_allow(client: TestClient) -> None:
    for path in GET_ROUTES:
        # The intel inbox also takes POST: the intake of signed envelopes.
        allowed = "GET, HEAD, POST" if path == "/api/v1/intel" else "GET, HEAD"
        for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            if method in allowed:
                continue
            response = client.request(method, path, headers=BEARER)
            assert_error(response, 405, "method_not_allowed")
            assert response.headers["Allow"] == allowed
    for path in ("/api/v1/auth/login", "/api/v1/auth/logout"):
        response = client.get(path)
        assert_error(response, 405, "method_not_allowed")
        assert response.headers["Allow"] == "POST"


def test_head_works_on_get_routes(client: TestClient) -> None:
    response = client.head("/api/v1/system", headers=BEARER)
    assert response.status_code == 200
    assert response.content == b""


def test_unknown_paths_are_404_envelopes(client: TestClient) -> None:
    for path in ("/nope", "/api/v1/system/", "/api/v1/admin/pause", "/api/v2/system", "/api/v1/"):
        assert_error(client.get(path, headers=BEARER), 404, "not_found")


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=-1",
        "limit=1001",
        "limit=abc",
        "limit=1.5",
        "limit=%C2%B2",
        "limit=" + "9" * 5000,
        "limit=",
        "cursor=",
        "cursor=garbage!",
        "cursor=" + "A" * 100,
        "cursor=eDox",  # a well-formed base64 of "x:1"
        "limit=5&limit=6",
        "bogus=1",
        "symbol=" + "A" * 17,
        "symbol=$$$",
        "since=yesterday",
        "since=2025-13-01",
        "since=0001-01-01T00:00:00%2B01:00",
        "since=2025-06-30&until=2025-06-01",
    ],
)
def test_bad_query_values_are_400_envelopes(client: TestClient, query: str) -> None:
    for path in ("/api/v1/orders", "/api/v1/fills", "/api/v1/events"):
        assert_error(client.get(f"{path}?{query}", headers=BEARER), 400, "bad_request")


def test_route_specific_bad_values(client: TestClient) -> None:
    for path in (
        "/api/v1/orders?status=done",
        "/api/v1/orders?side=long",
        "/api/v1/events?level=fatal",
        "/api/v1/pnl?since=2025-06-01T00:00:00Z",
        "/api/v1/system?limit=5",
        "/api/v1/positions?since=2025-06-01",
        "/api/v1/fills?order_id=../../etc",
        "/api/v1/intel?kind=%00",
    ):
        assert_error(client.get(path, headers=BEARER), 400, "bad_request")


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (b"{", "application/json", 400, "bad_request"),
        (b"", "application/json", 400, "bad_request"),
        (b"\xff\xfe\x00", "application/json", 400, "bad_request"),
        (b"[1, 2]", "application/json", 400, "bad_request"),
        (b"null", "application/json", 400, "bad_request"),
        (b'{"token": 123}', "application/json", 400, "bad_request"),
        (b'{"token": null}', "application/json", 400, "bad_request"),
        (b'{"token": ""}', "application/json", 400, "bad_request"),
        (b'{"token": ["x"]}', "application/json", 400, "bad_request"),
        (b'{"tok": "x"}', "application/json", 400, "bad_request"),
        (b'{"token": "x", "admin": true}', "application/json", 400, "bad_request"),
        (b'{"token": "\\ud800"}', "application/json", 401, "unauthorized"),
        (b"[" * 50_000 + b"]" * 10_000, "application/json", 400, "bad_request"),
        (b'{"token": "x"}', "text/plain", 415, "unsupported_media_type"),
        (b'{"token": "x"}', "", 415, "unsupported_media_type"),
        (b'{"token": "' + b"a" * 70_000 + b'"}', "application/json", 413, "payload_too_large"),
    ],
)
def test_bad_login_bodies_are_4xx_envelopes(
    client: TestClient, body: bytes, content_type: str, status: int, code: str
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.post("/api/v1/auth/login", content=body, headers=headers)
    assert_error(response, status, code)


def test_huge_body_on_a_get_route_is_413(client: TestClient) -> None:
    response = client.request("GET", "/api/v1/system", content=b"x" * 70_000, headers=BEARER)
    assert_error(response, 413, "payload_too_large")


def test_a_request_target_over_8_kib_is_414(client: TestClient) -> None:
    for target in ("/api/v1/orders?symbol=" + "A" * 8200, "/api/v1/" + "a" * 8200):
        assert_error(client.get(target, headers=BEARER), 414, "uri_too_long")


def test_huge_headers_are_431(client: TestClient) -> None:
    response = client.get("/api/v1/system", headers={**BEARER, "X-Filler": "x" * 9000})
    assert_error(response, 431, "headers_too_large")


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(GET_ROUTES),
    params=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "limit",
                    "cursor",
                    "symbol",
                    "since",
                    "until",
                    "status",
                    "side",
                    "level",
                    "kind",
                    "order_id",
                    "source",
                    "x",
                ]
            ),
            st.text(max_size=30),
        ),
        max_size=4,
    ),
)
def test_random_query_strings_never_cause_a_5xx(
    client: TestClient, path: str, params: list[tuple[str, str]]
) -> None:
    response = client.get(path, params=params, headers=BEARER)
    assert response.status_code < 500
    if path != "/":
        body = response.json()
        assert body["ok"] is (response.status_code == 200)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=8), inner, max_size=3)
            ),
            max_leaves=10,
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_random_login_bodies_never_cause_a_5xx(make_service: MakeService, body: bytes) -> None:
    client = make_service().client()
    response = client.post(
        "/api/v1/auth/login", content=body, headers={"Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500
    assert response.json()["ok"] is False


def test_a_removed_or_replaced_database_is_noticed(
    service: ServiceUnderTest, demo_db: Path
) -> None:
    client = service.client()
    assert get_data(client, "/api/v1/system")["mode"] == "running"  # type: ignore[index]
    saved = demo_db.read_bytes()
    demo_db.unlink()
    assert_error(client.get("/health/ready"), 503, "unavailable")
    assert_error(client.get("/api/v1/system", headers=BEARER), 503, "unavailable")
    replacement = demo_db.with_suffix(".new")
    replacement.write_bytes(saved)
    with sqlite3.connect(replacement) as connection:
        connection.execute("UPDATE system_state SET mode = 'paused', trading_enabled = 0")
    replacement.replace(demo_db)
    assert client.get("/health/ready").status_code == 200
    assert get_data(client, "/api/v1/system")["mode"] == "paused"  # type: ignore[index]


def test_cached_results_follow_writes_by_other_connections(
    service: ServiceUnderTest, demo_db: Path
) -> None:
    client = service.client()
    for _ in range(3):
        assert get_data(client, "/api/v1/system")["mode"] == "running"  # type: ignore[index]
        assert len(get_data(client, "/api/v1/positions")) == 4  # type: ignore[arg-type]
    with sqlite3.connect(demo_db) as connection:
        connection.execute("DELETE FROM positions WHERE symbol = 'AAPL'")
        connection.execute("UPDATE system_state SET mode = 'paused'")
    assert get_data(client, "/api/v1/system")["mode"] == "paused"  # type: ignore[index]
    assert len(get_data(client, "/api/v1/positions")) == 3  # type: ignore[arg-type]
