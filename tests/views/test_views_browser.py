"""Each view in a real Chromium (Debian's /usr/bin/chromium), hosted as a host does it: the
document from `resources/read` in a sandboxed iframe of a host page, the reference host bridge
(`AppBridge` of @modelcontextprotocol/ext-apps) feeding it the tool's real result from the demo
stubs through a real `svc-mcp`, and the view's own `tools/call` requests going back through the
bridge to that server. What a person sees is checked against the structured result.

Screenshots of each view in both themes go to test-artifacts/views/.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.async_api import Frame, Page, Route, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeout

from svc_mcp.demo.stubs import DemoStubs
from tests.mcp.conftest import SVC_MCP, process_env
from tests.service.test_browser import CHROMIUM, CHROMIUM_ARGS
from tests.support import ROOT
from tests.views.conftest import APPS, HERE, VIEW_TOOLS

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

HOST = "http://127.0.0.1:9"
"""The host page's origin; every request to it is answered by the test, none reaches a socket."""
ARTIFACTS = ROOT / "test-artifacts" / "views"
TIME_ZONE = "Asia/Tokyo"
"""The viewer's zone, unlike the data's (UTC): times must be shown in it."""
FIRST_RENDER_SECONDS = 1.0


def context(theme: str) -> dict[str, Any]:
    return {
        "theme": theme,
        "locale": "en-US",
        "timeZone": TIME_ZONE,
        "displayMode": "inline",
        "containerDimensions": {"width": 780, "maxHeight": 900},
    }


def dumped(model: Any) -> dict[str, Any]:
    result: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


async def serve_host(page: Page, node_tools: Path, requests: list[str]) -> None:
    files = {"/host.html": HERE / "host.html", "/bridge.js": node_tools / "bridge.js"}

    async def answer(route: Route) -> None:
        path = route.request.url.removeprefix(HOST)
        kind = "text/html" if path.endswith(".html") else "text/javascript"
        await route.fulfill(body=files[path].read_bytes(), content_type=kind)

    page.on("request", lambda request: requests.append(request.url))
    await page.route(f"{HOST}/*", answer)
    await page.goto(f"{HOST}/host.html")


async def rows_of(frame: Frame) -> list[dict[str, str]]:
    cells: list[dict[str, str]] = await frame.evaluate(
        """() => [...document.querySelectorAll("tbody tr")].map((row) =>
             Object.fromEntries([...row.cells].map((c) => [c.dataset.field, c.dataset.value])))"""
    )
    return cells


def same(shown: Mapping[str, str], record: Mapping[str, Any]) -> None:
    for field, value in record.items():
        if field == "unit":  # shown with the figures it measures
            continue
        text = shown[field]
        assert (text if isinstance(value, str) else json.loads(text)) == value, field


async def check_view(tool: str, stubs: DemoStubs, node_tools: Path) -> None:
    server = StdioServerParameters(command=SVC_MCP, env=process_env(stubs.mcp_variables()))
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, extensions=APPS) as session,
        async_playwright() as playwright,
    ):
        await session.initialize()
        listed = {t.name: t for t in (await session.list_tools()).tools}
        uri = (listed[tool].meta or {})["ui"]["resourceUri"]
        (document,) = (await session.read_resource(uri)).contents
        html = document.text
        csp = (document.meta or {})["ui"]["csp"]
        first = await session.call_tool(tool, {})
        everything = await session.call_tool(tool, {"limit": 1000})
        called: list[str] = []

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            called.append(params["name"])
            return dumped(await session.call_tool(params["name"], params.get("arguments") or {}))

        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        page = await browser.new_page(viewport={"width": 800, "height": 920})
        problems: list[str] = []
        page.on(
            "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
        )
        page.on("pageerror", lambda error: problems.append(str(error)))
        requests: list[str] = []
        await page.expose_function("callTool", call_tool)
        await serve_host(page, node_tools, requests)

        started = time.perf_counter()
        await page.evaluate(
            "(view) => window.hostView(view)",
            {
                "html": html,
                "csp": csp,
                "toolInput": {},
                "toolResult": dumped(first),
                "context": context("light"),
            },
        )
        frame = page.frame_locator("#view")
        try:
            await frame.locator("body[data-rendered]").wait_for(timeout=5000)
        except PlaywrightTimeout:
            pytest.fail(f"the view drew nothing; console: {problems}")
        first_render = time.perf_counter() - started
        view = next(f for f in page.frames if f != page.main_frame)

        structured = everything.structured_content or {}
        # Page through the bridge by keyboard until every record is shown.
        more = frame.locator("#more")
        while await more.is_visible():
            count = len(await rows_of(view))
            await more.focus()
            await page.keyboard.press("Enter")
            await view.wait_for_function(
                "(n) => document.querySelectorAll('tbody tr').length > n", arg=count
            )
        records = structured["result"]
        shown = await rows_of(view)
        assert len(shown) == len(records)
        for row, record in zip(shown, records, strict=True):
            same(row, record)

        # Units and the viewer's zone, where the result has money or times.
        text = await frame.locator("#content").inner_text()
        if any(key.endswith("_at") for key in json.dumps(structured).split('"')):
            assert "GMT+9" in text
        if tool in ("get_pnl", "get_positions"):
            assert "$" in text
        if tool == "get_pnl":
            assert await frame.locator("svg.pnl-chart rect.bar").count() == len(
                structured["result"]
            )

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await view.evaluate("() => window.scrollTo(0, 0)")
        await page.screenshot(path=str(ARTIFACTS / f"{tool}-light.png"))
        await page.evaluate("(c) => window.changeContext(c)", context("dark"))
        await frame.locator("html[data-theme=dark]").wait_for()
        await page.screenshot(path=str(ARTIFACTS / f"{tool}-dark.png"))
        await browser.close()

    assert not problems, problems
    assert set(requests) == {f"{HOST}/host.html", f"{HOST}/bridge.js"}, requests
    assert set(called) <= {tool, "get_system"}
    print(f"{tool}: first render {first_render * 1000:.0f} ms")  # shown with pytest -s
    assert first_render < FIRST_RENDER_SECONDS, f"first render took {first_render:.2f} s"


@pytest.mark.parametrize("tool", sorted(VIEW_TOOLS))
def test_view_in_a_real_host(tool: str, stubs: DemoStubs, node_tools: Path) -> None:
    anyio.run(check_view, tool, stubs, node_tools)
