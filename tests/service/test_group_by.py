"""`group_by` on the data service's lists, against a real `svc-stub service` process on the demo
data: every value on every list, over the whole data and a since/until window, equals what the
raw records add up to (money to the cent); an unknown value is a 400 naming the allowed ones;
grouped lists page; the grouped SQL reads through an index when a window is given."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_stub.service.db import TimeRange
from server_stub.service.groups import GROUPINGS, grouped_query, time_conditions
from tests.e2e import e2e_fixture
from tests.service.conftest import TOKEN
from tests.service.grouping import CASES, GROUP_BY, expected_groups
from tests.support import PORT, Server, running_server

WINDOWS = {
    "/api/v1/pnl": {"since": "2025-04-01", "until": "2025-06-01"},
    "/api/v1/fills": {"since": "2025-05-01T00:00:00Z", "until": "2025-06-15T00:00:00Z"},
    "/api/v1/orders": {"since": "2025-05-01T00:00:00Z", "until": "2025-06-15T00:00:00Z"},
    "/api/v1/events": {"since": "2025-04-01T00:00:00Z", "until": "2025-06-15T00:00:00Z"},
}


@e2e_fixture(scope="module")
def server(demo_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("grouped")
    db = folder / "service.db"
    shutil.copyfile(demo_db_template, db)
    with running_server(
        ["-m", "server_stub.service", "service", "--db", str(db), "--port", PORT],
        log_path=folder / "server.log",
        ready_path="/health/live",
        env={"SERVICE_API_TOKEN": TOKEN},
    ) as running:
        yield running


def get(server: Server, path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        server.base_url + path, params=params, headers={"Authorization": f"Bearer {TOKEN}"}
    )


def data(server: Server, path: str, **params: Any) -> list[dict[str, Any]]:
    body = get(server, path, limit=1000, **params).json()
    assert body["ok"], body
    assert "next_cursor" not in body
    rows: list[dict[str, Any]] = body["data"]
    return rows


@pytest.mark.parametrize(("path", "group_by", "window"), CASES)
def test_each_grouped_answer_is_what_the_records_add_up_to(
    server: Server, path: str, group_by: str, window: bool
) -> None:
    filters = WINDOWS[path] if window else {}
    records = data(server, path, **filters)
    assert records, "the window holds records"
    grouped = data(server, path, group_by=group_by, **filters)
    assert grouped == expected_groups(path, group_by, records)
    assert sum(row["count"] for row in grouped) == len(records)


def test_filters_narrow_the_groups(server: Server) -> None:
    records = data(server, "/api/v1/fills", symbol="AAPL", side="buy")
    grouped = data(server, "/api/v1/fills", symbol="AAPL", side="buy", group_by="day")
    assert grouped == expected_groups("/api/v1/fills", "day", records)
    orders = data(server, "/api/v1/orders", status="open")
    assert data(server, "/api/v1/orders", status="open", group_by="status") == expected_groups(
        "/api/v1/orders", "status", orders
    )


def test_grouped_lists_page(server: Server) -> None:
    whole = data(server, "/api/v1/fills", group_by="order_id")
    assert len(whole) > 100
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        body = get(
            server,
            "/api/v1/fills",
            group_by="order_id",
            limit=100,
            **({"cursor": cursor} if cursor else {}),
        ).json()
        rows.extend(body["data"])
        cursor = body.get("next_cursor")
        if cursor is None:
            break
    assert rows == whole


@pytest.mark.parametrize("path", list(GROUP_BY))
def test_an_unknown_group_by_names_the_allowed_values(server: Server, path: str) -> None:
    response = get(server, path, group_by="price")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert all(value in error["message"] for value in GROUP_BY[path])


@pytest.mark.parametrize("table", list(GROUPINGS))
def test_a_windowed_grouped_query_reads_through_an_index(demo_db: Path, table: str) -> None:
    grouping = GROUPINGS[table]
    window = TimeRange("2025-05-01", "2025-06-01")
    with sqlite3.connect(demo_db) as connection:
        for group_by in grouping.choices:
            query, params = grouped_query(
                table, group_by, time_conditions(grouping.time_column, window)
            )
            plan = [
                row[3]
                for row in connection.execute(f"EXPLAIN QUERY PLAN {query}", (*params, 10, 0))
            ]
            searched = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
            assert any(" USING " in step and "INDEX" in step for step in searched), plan
            assert not any(step == f"SCAN {table}" for step in searched), plan
