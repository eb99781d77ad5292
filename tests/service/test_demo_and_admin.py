"""The demo data set and local control mode (pause, resume, flatten)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from server_stub.service import admin
from server_stub.service.demo_data import DemoDataExists, write_demo_database
from tests.service.conftest import BEARER, MakeService

TABLES = (
    "system_state",
    "symbols",
    "positions",
    "orders",
    "fills",
    "daily_pnl",
    "risk_limits",
    "events",
    "intel_inbox",
)
FIXED_NOW = datetime(2025, 7, 1, 9, 30, tzinfo=UTC)


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as connection:
        return {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()  # noqa: S608
            for table in TABLES
        }


def test_demo_data_is_deterministic_and_realistic(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    summary = write_demo_database(first)
    assert write_demo_database(second) == summary
    assert dump(first) == dump(second)
    assert summary.symbols == 5
    assert summary.positions == 4
    assert summary.orders >= 300
    assert summary.fills >= 300
    assert summary.pnl_days == 90
    assert summary.events >= 100
    tables = dump(first)
    order_ids = {row[0] for row in tables["orders"]}
    assert all(fill[1] in order_ids for fill in tables["fills"])
    with sqlite3.connect(first) as connection:
        filled = connection.execute(
            "SELECT o.id, o.filled_quantity, SUM(f.quantity) FROM orders o JOIN fills f"
            " ON f.order_id = o.id GROUP BY o.id"
        ).fetchall()
    assert all(abs(row[1] - row[2]) < 1e-9 for row in filled)


def test_demo_data_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    path = tmp_path / "svc.db"
    path.write_text("precious")
    with pytest.raises(DemoDataExists):
        write_demo_database(path)
    assert path.read_text() == "precious"
    write_demo_database(path, force=True)
    assert dump(path)["system_state"]


def mode_and_events(path: Path) -> tuple[str, int, list[str]]:
    with sqlite3.connect(path) as connection:
        mode, enabled = connection.execute(
            "SELECT mode, trading_enabled FROM system_state"
        ).fetchone()
        kinds = [
            r[0]
            for r in connection.execute(
                "SELECT kind FROM events WHERE source = 'admin' ORDER BY id"
            )
        ]
    return mode, enabled, kinds


def test_pause_and_resume(demo_db: Path) -> None:
    result = admin.pause(demo_db, reason="maintenance", now=lambda: FIXED_NOW)
    assert result.changed
    assert mode_and_events(demo_db) == ("paused", 0, ["system_paused"])
    assert not admin.pause(demo_db).changed
    assert admin.resume(demo_db, now=lambda: FIXED_NOW).changed
    assert mode_and_events(demo_db) == ("running", 1, ["system_paused", "system_resumed"])
    assert not admin.resume(demo_db).changed


def test_flatten_closes_everything_and_pauses(demo_db: Path, make_service: MakeService) -> None:
    client = make_service().client()
    before = client.get("/api/v1/system", headers=BEARER).json()["data"]
    result = admin.flatten(demo_db, now=lambda: FIXED_NOW)
    assert result.changed
    after = client.get("/api/v1/system", headers=BEARER).json()["data"]
    assert after["mode"] == "paused"
    assert after["open_positions"] == 0
    assert after["open_orders"] == 0
    assert after["gross_exposure"] == 0
    # Closing at the mark moves value from positions to cash, less fees.
    assert after["equity"] == pytest.approx(before["equity"], abs=50)
    assert client.get("/api/v1/positions", headers=BEARER).json()["data"] == []
    closing = client.get("/api/v1/orders?strategy=x", headers=BEARER)
    assert closing.status_code == 400
    newest = client.get("/api/v1/orders?limit=4", headers=BEARER).json()["data"]
    assert {o["strategy"] for o in newest} == {"admin_flatten"}
    events = client.get("/api/v1/events?limit=1", headers=BEARER).json()["data"]
    assert events[0]["kind"] == "positions_flattened"
    assert events[0]["source"] == "admin"


def test_admin_refuses_a_missing_database(tmp_path: Path) -> None:
    with pytest.raises(admin.AdminError, match="no database"):
        admin.pause(tmp_path / "nothing.db")
    assert not (tmp_path / "nothing.db").exists()


def test_svc_stub_carries_the_service_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from server_stub.cli import app

    runner = CliRunner()
    db = tmp_path / "svc.db"
    written = runner.invoke(app, ["demo-data", "service", "--db", str(db)])
    assert written.exit_code == 0, written.output
    assert " orders, " in written.output
    paused = runner.invoke(app, ["admin", "service", "pause", "--db", str(db)])
    assert paused.exit_code == 0
    assert mode_and_events(db)[0] == "paused"
    again = runner.invoke(app, ["demo-data", "service", "--db", str(db)])
    assert again.exit_code == 1
    assert runner.invoke(app, ["service", "--help"]).exit_code == 0
