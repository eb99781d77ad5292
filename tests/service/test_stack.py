"""The stubs' shared ASGI stack (server_stub.stack): the router's lookup of fixed paths answers
exactly what Starlette's ordered tries answer, and the gate's memo of `Host` decisions keeps
every decision right however many names it has seen."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route, Router
from starlette.testclient import TestClient

from server_stub.hosts import HostAllowList, allowed_hosts
from server_stub.http import ApiError, envelope_exception_handlers
from server_stub.portal.app import create_app as create_portal
from server_stub.portal.demo_data import write_demo_data
from server_stub.routing import DirectRouter
from server_stub.service.app import create_app as create_service
from server_stub.service.settings import ServiceSettings
from svc_mcp.core.connection import MAX_URL_CHARS, Connection
from svc_mcp.core.errors import BadRequest
from tests.service.conftest import TOKEN

METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE")


def naming(index: int) -> Callable[[Request], Awaitable[Response]]:
    """A stand-in endpoint that says which route answered."""

    async def endpoint(_: Request) -> Response:
        return PlainTextResponse(str(index))

    return endpoint


def stand_ins(routes: list[BaseRoute]) -> list[BaseRoute]:
    """The same paths and methods, each answering with its position."""
    copies: list[BaseRoute] = []
    for index, route in enumerate(routes):
        assert isinstance(route, Route)
        copies.append(Route(route.path, naming(index), methods=route.methods))
    return copies


def answers(router: Router, paths: list[str]) -> list[tuple[str, str, int, str]]:
    app = Starlette()
    app.router = router
    with TestClient(app) as client:
        return [
            (method, path, response.status_code, response.text)
            for path in paths
            for method in METHODS
            for response in [client.request(method, path)]
        ]


def same_answers(routes: list[BaseRoute], paths: list[str]) -> None:
    ordered = Router(routes, redirect_slashes=False)
    direct = DirectRouter(routes, redirect_slashes=False)
    assert answers(direct, paths) == answers(ordered, paths)


@pytest.fixture(scope="module")
def stub_routes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[BaseRoute]]:
    root = tmp_path_factory.mktemp("stack")
    write_demo_data(root / "portal")
    settings = ServiceSettings(api_token=TOKEN, db_path=root / "absent.db")  # type: ignore[call-arg]
    return {
        "portal": list(create_portal(root / "portal").routes),
        "service": list(create_service(settings).routes),
    }


@pytest.mark.parametrize("stub", ["portal", "service"])
def test_each_stub_route_is_found_as_the_ordered_tries_find_it(
    stub_routes: dict[str, list[BaseRoute]], stub: str
) -> None:
    routes = stand_ins(stub_routes[stub])
    direct = DirectRouter(routes, redirect_slashes=False)
    fixed = [route.path for route in routes if isinstance(route, Route) and "{" not in route.path]
    # Every fixed path of the stub is looked up, none is left to the tries.
    assert sorted(direct.fixed_paths) == sorted(fixed)
    unknown = ["/nowhere", "/api/v1/system/", "/static/shell.js", "/api/v1//system", "/"]
    same_answers(routes, [*fixed, *unknown])


def test_a_fixed_path_an_earlier_route_also_matches_goes_to_the_earlier_route() -> None:
    routes: list[BaseRoute] = [
        Route("/files/{name}", naming(0), methods=["GET"]),
        Route("/files/index", naming(1), methods=["GET"]),
        Route("/report", naming(2), methods=["GET"]),
    ]
    direct = DirectRouter(routes, redirect_slashes=False)
    assert sorted(direct.fixed_paths) == ["/report"]
    same_answers(routes, ["/files/index", "/files/other", "/report"])
    assert answers(direct, ["/files/index"])[0] == ("GET", "/files/index", 200, "0")


def test_one_path_with_a_route_per_method_reaches_each_method_and_refuses_others() -> None:
    routes: list[BaseRoute] = [
        Route("/intel", naming(0), methods=["GET"]),
        Route("/intel", naming(1), methods=["POST"]),
    ]
    same_answers(routes, ["/intel"])
    by_method = {
        method: (status, text)
        for method, _, status, text in answers(
            DirectRouter(routes, redirect_slashes=False), ["/intel"]
        )
    }
    assert by_method["GET"] == (200, "0")
    assert by_method["POST"] == (200, "1")
    assert by_method["DELETE"][0] == 405


def test_an_endpoint_called_directly_fails_as_through_its_route() -> None:
    """A fixed path's async endpoint is called without Starlette's per-route exception layer;
    the app's own layer answers its failures with the same envelopes, and routes with anything
    around their endpoint (route middleware, a sync function) still go through their route."""

    async def refused(_: Request) -> Response:
        raise ApiError(401, "unauthorized", "no", {"WWW-Authenticate": "Bearer"})

    async def missing(_: Request) -> Response:
        raise HTTPException(404)

    async def broken(_: Request) -> Response:
        raise ValueError("a bug")

    def blocking(_: Request) -> Response:
        return PlainTextResponse("sync")

    routes: list[BaseRoute] = [
        Route("/refused", refused),
        Route("/missing", missing),
        Route("/broken", broken),
        Route("/blocking", blocking),
        Route("/wrapped", refused, middleware=[Middleware(GZipMiddleware)]),
    ]
    direct = DirectRouter(routes, redirect_slashes=False)
    assert sorted(direct.endpoints) == ["/broken", "/missing", "/refused"]

    def replies(router: Router) -> list[tuple[int, str, str | None]]:
        app = Starlette(exception_handlers=envelope_exception_handlers())
        app.router = router
        with TestClient(app, raise_server_exceptions=False) as client:
            return [
                (reply.status_code, reply.text, reply.headers.get("www-authenticate"))
                for path in ("/refused", "/missing", "/broken", "/blocking", "/wrapped")
                for reply in [client.get(path)]
            ]

    through_routes = replies(Router(routes, redirect_slashes=False))
    assert replies(direct) == through_routes
    assert through_routes[0][:2] == (
        401,
        '{"ok":false,"error":{"code":"unauthorized","message":"no"}}',
    )
    assert through_routes[2][0] == 500


def test_host_decisions_stay_right_past_the_memo_limit() -> None:
    hosts = HostAllowList(allowed_hosts(["svc.internal"], bound_host=None), setting="X")
    for round_ in range(3):
        for number in range(200):  # three times the memo's size, so it is emptied and refilled
            assert hosts.refuses("/api/v1/system", f"evil-{number}.example".encode())
            assert not hosts.refuses("/api/v1/system", f"127.0.0.{number % 250 + 1}".encode())
        assert hosts.refuses("/api/v1/system", b"attacker.example"), round_
        assert not hosts.refuses("/api/v1/system", b"svc.internal:8443")
        assert not hosts.refuses("/api/v1/system", b"localhost")
        assert not hosts.refuses("/health/live", b"attacker.example")  # the probes stay open
        assert not hosts.refuses("/api/v1/system", None)  # HTTP/1.0: no Host at all


def test_refusals_still_come_from_the_gate_in_order(demo_db: Path) -> None:
    settings = ServiceSettings(api_token=TOKEN, db_path=demo_db)  # type: ignore[call-arg]
    client = TestClient(create_service(settings), base_url="http://localhost")
    long_target = "/api/v1/system?" + "q" * 9000
    tall = {"X-Pad": "p" * 9000}
    # The target's limit before the headers', the headers' before the Host, the Host before the
    # body's declared length.
    assert client.get(long_target, headers={**tall, "Host": "attacker.example"}).status_code == 414
    assert client.get("/api/v1/system", headers={**tall, "Host": "evil"}).status_code == 431
    refused = client.post(
        "/api/v1/auth/login",
        content=b"{" + b" " * 70_000 + b"}",
        headers={"Host": "attacker.example", "Content-Type": "application/json"},
    )
    assert refused.status_code == 421
    too_big = client.post(
        "/api/v1/auth/login",
        content=b"{" + b" " * 70_000 + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "payload_too_large"


def test_the_stub_takes_every_url_the_client_sends(demo_db: Path) -> None:
    """The client builds URLs up to its cap and refuses longer ones before sending; the stub takes
    the longest and refuses a target past its own cap (which leaves out the `?`): lowering either
    side's cap fails this."""
    settings = ServiceSettings(api_token=TOKEN, db_path=demo_db)  # type: ignore[call-arg]
    client = TestClient(create_service(settings), base_url="http://localhost")
    connection = Connection("the service", "", "X", "t", "T")
    room = MAX_URL_CHARS - len("/api/v1/system?q=")
    longest = connection.url("/api/v1/system", {"q": "q" * room})
    assert len(longest) == MAX_URL_CHARS
    with pytest.raises(BadRequest):
        connection.url("/api/v1/system", {"q": "q" * (room + 1)})
    # Past the gate's limits, at the token check; the stub leaves the `?` out of its count.
    assert client.get(longest).status_code == 401
    assert client.get(longest + "q").status_code == 401
    assert client.get(longest + "qq").status_code == 414
