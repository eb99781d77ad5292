"""Grouped answers from a data service that does not know `group_by` (issue 40): against real
`svc-stub service --without-group-by refuse|ignore` processes (a spec-2 service that refuses the
unknown parameter with a 400, or ignores it and answers raw records), a real stdio `svc-mcp` driven
by the official client pages the raw records itself and answers, for every `group_by` of every
list, whole and windowed, the very rows the grouping service answers, saying under `computed` that
it did and from how many records; past its bound it says the answer is partial."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from server_stub.service.demo_data import write_demo_database
from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core import regroup
from svc_mcp.core.bounded import MAX_RESULT_CHARS
from svc_mcp.core.calls import call_tool_once
from svc_mcp.tools.table import TOOLS as ALL_TOOLS
from svc_serving.grouping import grouped_rows
from tests.e2e import e2e_fixture
from tests.mcp.conftest import in_memory, over_stdio, run_in_process
from tests.service.grouping import CASES
from tests.support import PORT, Server, running_server

TOKEN = "svc-regroup-token-7d1e8a6c3b5d0e4f9c2b"
TOOLS = {
    "/api/v1/fills": "get_fills",
    "/api/v1/orders": "get_orders",
    "/api/v1/pnl": "get_pnl",
    "/api/v1/events": "get_events",
}
WINDOWS = {
    "/api/v1/pnl": {"since": "2025-04-01", "until": "2025-06-01"},
    "/api/v1/fills": {"since": "2025-05-01T00:00:00", "until": "2025-06-15T00:00:00"},
    "/api/v1/orders": {"since": "2025-05-01T00:00:00", "until": "2025-06-15T00:00:00"},
    "/api/v1/events": {"since": "2025-04-01T00:00:00", "until": "2025-06-15T00:00:00"},
}
KINDS = ("grouping", "refuse", "ignore")


@e2e_fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """The grouping service, and the two that do not know `group_by`, on copies of one demo
    database."""
    folder = tmp_path_factory.mktemp("regroup")
    template = folder / "template.db"
    write_demo_database(template)
    with ExitStack() as stack:
        running = {}
        for kind in KINDS:
            db = folder / kind / "service.db"
            db.parent.mkdir()
            shutil.copyfile(template, db)
            without = [] if kind == "grouping" else ["--without-group-by", kind]
            command = ["-m", "server_stub.service", "service", "--db", str(db), "--port", PORT]
            running[kind] = stack.enter_context(
                running_server(
                    [*command, *without],
                    log_path=folder / kind / "server.log",
                    ready_path="/health/live",
                    env={"SERVICE_API_TOKEN": TOKEN},
                )
            )
        yield running


def variables(server: Server) -> dict[str, str]:
    return {"SERVICE_API_BASE": server.base_url, "SERVICE_API_TOKEN": TOKEN}


def rest(server: Server, path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        server.base_url + path,
        params={"limit": 1000, **params},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


def rows(server: Server, path: str, **params: Any) -> list[dict[str, Any]]:
    body = rest(server, path, **params).json()
    assert body["ok"], body
    assert "next_cursor" not in body
    data: list[dict[str, Any]] = body["data"]
    return data


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def test_the_stubs_without_group_by_refuse_or_ignore_it(services: dict[str, Server]) -> None:
    refused = rest(services["refuse"], "/api/v1/fills", group_by="symbol")
    assert refused.status_code == 400
    assert "unknown query parameter 'group_by'" in refused.json()["error"]["message"]
    ignored = rows(services["ignore"], "/api/v1/fills", group_by="symbol")
    assert ignored == rows(services["grouping"], "/api/v1/fills"), "the raw records"
    grouped = rows(services["grouping"], "/api/v1/fills", group_by="symbol")
    assert grouped == grouped_rows("/api/v1/fills", "symbol", ignored)


Answers = dict[tuple[str, str, bool], list[CallToolResult]]


@pytest.fixture(scope="module", params=("refuse", "ignore"))
def answers(request: pytest.FixtureRequest, services: dict[str, Server]) -> Answers:
    """Each case's pages from svc-mcp against a service that does not group, to the end."""
    kind: str = request.param

    async def use(session: ClientSession) -> Answers:
        await session.initialize()
        answers = {}
        for path, group_by, window in CASES:
            arguments = {"group_by": group_by, "limit": 1000, **(WINDOWS[path] if window else {})}
            pages = [await session.call_tool(TOOLS[path], arguments)]
            while cursor := (pages[-1].structured_content or {}).get("next_cursor"):
                assert len(pages) < 20, "paging ends"
                pages.append(await session.call_tool(TOOLS[path], {**arguments, "cursor": cursor}))
            answers[(path, group_by, window)] = pages
        return answers

    return asyncio.run(over_stdio(variables(services[kind]), use))


@pytest.mark.parametrize(("path", "group_by", "window"), CASES)
def test_svc_mcp_groups_what_the_service_does_not(
    services: dict[str, Server],
    answers: Answers,
    path: str,
    group_by: str,
    window: bool,
) -> None:
    filters = WINDOWS[path] if window else {}
    expected = rows(services["grouping"], path, group_by=group_by, **filters)
    records = rows(services["grouping"], path, **filters)
    pages = answers[(path, group_by, window)]
    for page in pages:
        assert not page.is_error, text_of(page)
        assert len(text_of(page)) <= MAX_RESULT_CHARS
        structured = page.structured_content or {}
        assert json.loads(text_of(page).split("\n")[0]) == structured
        assert structured["computed"] == {
            "by": "svc-mcp",
            "records": len(records),
            "complete": True,
        }
    assert [row for page in pages for row in (page.structured_content or {})["groups"]] == expected


def test_a_grouping_service_s_answer_says_nothing_of_it(services: dict[str, Server]) -> None:
    async def use(session: ClientSession) -> CallToolResult:
        await session.initialize()
        return await session.call_tool("get_fills", {"group_by": "symbol"})

    result = asyncio.run(over_stdio(variables(services["grouping"]), use))
    assert not result.is_error, text_of(result)
    assert "computed" not in (result.structured_content or {})
    assert (result.structured_content or {})["groups"] == rows(
        services["grouping"], "/api/v1/fills", group_by="symbol"
    )


@pytest.mark.parametrize("kind", ["refuse", "ignore"])
def test_the_cli_groups_too_and_says_so(services: dict[str, Server], kind: str) -> None:
    done = run_in_process(
        svc_mcp_cli.main, ["get_fills", "--group-by", "symbol"], variables(services[kind])
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == rows(services["grouping"], "/api/v1/fills", group_by="symbol")
    fills = len(rows(services["grouping"], "/api/v1/fills"))
    assert f"Grouped by svc-mcp from all {fills:,} records" in done.stderr


@pytest.mark.parametrize("kind", ["refuse", "ignore"])
def test_past_the_bound_the_answer_says_it_is_partial(
    services: dict[str, Server], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the bound below the demo's fills, the rows are those of the first records only, and
    the answer says so (in the result and on the CLI's stderr), never silently."""
    monkeypatch.setattr(regroup, "RECORDS_BOUND", 300)
    for name, value in variables(services[kind]).items():
        monkeypatch.setenv(name, value)
    spec = next(spec for spec in ALL_TOOLS if spec.name == "get_fills")
    result = call_tool_once(spec, {"group_by": "symbol", "limit": 1000})
    assert result.computed == {"by": "svc-mcp", "records": 300, "complete": False, "bound": 300}
    first = rows(services["grouping"], "/api/v1/fills")[:300]
    assert result.data == grouped_rows("/api/v1/fills", "symbol", first)
    assert sum(row["count"] for row in result.data) == 300

    # The MCP server's own path (async, in process: a subprocess could not be given the bound).
    served = asyncio.run(
        in_memory(
            lambda client: client.call_tool("get_fills", {"group_by": "symbol", "limit": 1000})
        )
    )
    assert not served.is_error, text_of(served)
    assert (served.structured_content or {})["computed"] == result.computed
    assert (served.structured_content or {})["groups"] == result.data
    assert '"complete":false' in text_of(served)

    done = run_in_process(
        svc_mcp_cli.main, ["get_fills", "--group-by", "symbol"], variables(services[kind])
    )
    assert done.returncode == 0, done.stderr
    assert "PARTIAL: grouped by svc-mcp from the first 300 records only" in done.stderr
