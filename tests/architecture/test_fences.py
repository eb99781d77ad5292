"""What each fence module relies on in its library's internals, asserted by name and signature, so
an upgrade that changes it fails here, with the reason, before anything else misbehaves.

uvicorn (fence: `svc_serving.bounded`): uvicorn has no setting that bounds an httptools request
head (h11 has one; httptools keeps any size), so `BoundedHttpTools` subclasses its httptools
protocol: it counts and times the head in the parser callbacks, keeps one deadline per connection
(head, body, idle) that only a new request head moves, counts connections per peer key in
connection_made/lost (and at a websocket upgrade, where uvicorn stops counting one), and answers a
repeated Host or Authorization by swapping the app for one request; `OneWriteHttpTools` gives each
request cycle a transport that sends the head with the body, and flushes it from the cycle's
`on_response`. The pin in pyproject.toml keeps uvicorn to
the releases these tests ran on.

starlette (fence: `server_stub.routing`): `DirectRouter` subclasses `Router`, overrides its ASGI
entry `app` (falling back to `super().app`), reads `Route.param_convertors`, `path_regex`,
`matches` and `handle`, and replaces the router `Starlette` builds; the bound in pyproject.toml
keeps Starlette to the releases these tests ran on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route, Router
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from svc_serving.bounded import BoundedHttpTools

HOOKS: dict[str, list[str]] = {
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "on_message_begin": ["self"],
    "on_response_complete": ["self"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_message_complete": ["self"],
    "data_received": ["self", "data"],
    "handle_websocket_upgrade": ["self"],
}
"""The protocol methods the fence overrides and calls through `super()`, with their parameters."""
ATTRIBUTES = (
    "self.transport = ",
    "self.logger = ",
    "self.loop = ",
    "self.client = ",
    "self.cycle = ",
    "self.headers = ",
    "self.app = ",
    "self.pipeline: ",
    "self.server_state = ",
)
"""Attributes the fence reads, set by the protocol itself."""


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_fence_subclasses_uvicorns_httptools_protocol() -> None:
    assert issubclass(BoundedHttpTools, HttpToolsProtocol), (
        "uvicorn moved or renamed its httptools protocol: svc_serving.bounded needs updating"
    )


@pytest.mark.parametrize(("hook", "expected"), HOOKS.items())
def test_the_protocol_keeps_the_hooks_the_fence_overrides(hook: str, expected: list[str]) -> None:
    found = getattr(HttpToolsProtocol, hook, None)
    assert callable(found), f"uvicorn {version('uvicorn')}: HttpToolsProtocol.{hook} is gone"
    assert parameters(found) == expected, (
        f"uvicorn {version('uvicorn')}: HttpToolsProtocol.{hook}{inspect.signature(found)} "
        f"changed; svc_serving.bounded overrides it with {expected}"
    )


@pytest.mark.parametrize("assignment", ATTRIBUTES)
def test_the_protocol_still_sets_what_the_fence_reads(assignment: str) -> None:
    source = inspect.getsource(HttpToolsProtocol)
    assert assignment in source, (
        f"uvicorn {version('uvicorn')}: HttpToolsProtocol no longer sets "
        f"{assignment.strip(' =')}, which svc_serving.bounded reads"
    )


def test_the_constructor_is_passed_through_unchanged() -> None:
    # The fence's __init__ takes *args/**kwargs and calls super(): uvicorn builds the protocol
    # with these, and the fence must not need to know them.
    assert parameters(HttpToolsProtocol.__init__)[:4] == [
        "self",
        "config",
        "server_state",
        "app_state",
    ]


@pytest.mark.parametrize("assignment", ["self.transport = transport", "self.on_response = "])
def test_the_request_cycle_keeps_what_one_write_replaces(assignment: str) -> None:
    source = inspect.getsource(RequestResponseCycle)
    assert assignment in source, (
        f"uvicorn {version('uvicorn')}: RequestResponseCycle no longer sets "
        f"{assignment.split(' =')[0]}, which svc_serving.bounded.OneWriteHttpTools replaces"
    )
    assert "self.transport.write(" in source
    assert "self.on_response()" in source


def test_starlettes_router_keeps_what_the_direct_router_relies_on() -> None:
    where = f"starlette {version('starlette')}"
    assert parameters(Router.app) == ["self", "scope", "receive", "send"], where
    assert "redirect_slashes" in parameters(Router.__init__), where
    assert "self.middleware_stack = self.app" in inspect.getsource(Router.__init__), (
        f"{where}: a request no longer enters the router through Router.app"
    )
    route = Route("/a/{b}", endpoint=lambda request: None)
    assert set(route.param_convertors) == {"b"}, where
    assert route.path_regex.match("/a/x"), where
    assert parameters(Route.matches) == ["self", "scope"], where
    assert parameters(Route.handle) == ["self", "scope", "receive", "send"], where
    assert "self.router" in inspect.getsource(Starlette.build_middleware_stack), (
        f"{where}: Starlette no longer routes through its `router` attribute"
    )
