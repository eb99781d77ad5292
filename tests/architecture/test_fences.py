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

The gateway's quiet stop (also in `svc_serving.bounded`) replaces uvicorn's `Server.capture_signals`,
a context manager around serving that installs its signal handlers.

starlette (fence: `server_stub.routing`): `DirectRouter` subclasses `Router`, overrides its ASGI
entry `app` (falling back to `super().app`), reads `Route.param_convertors`, `path_regex`,
`matches`, `handle` and `endpoint`, calls an async endpoint itself where `request_response` (its
`Route.app`) would add only the exception-handler layer the app's `ExceptionMiddleware` repeats,
and replaces the router `Starlette` builds; the bound in pyproject.toml
keeps Starlette to the releases these tests ran on.

The small reaches (fence: `svc_serving.fence`): argparse's list of a parser's actions and option
strings and its subparsers action; http.client's `_create_connection` hook, through which
`connect()` opens its socket; logging's `_srcfile` switch; httpx's optional `_main` module.
"""

from __future__ import annotations

import argparse
import http.client
import inspect
import logging
import socket
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route, Router, request_response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from svc_serving import fence
from svc_serving.bounded import BoundedHttpTools, StopOnSignalServer

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

    async def endpoint(_: object) -> None: ...

    # The direct call of an async endpoint skips only what request_response adds: the handler
    # layer the app's ExceptionMiddleware repeats.
    assert Route("/c", endpoint).app.__qualname__ == "request_response.<locals>.app", where
    assert "wrap_app_handling_exceptions(app, request)" in inspect.getsource(request_response), (
        f"{where}: request_response now adds more than the exception-handler layer"
    )
    assert "ExceptionMiddleware" in inspect.getsource(Starlette.build_middleware_stack), where


def test_uvicorns_server_keeps_the_signal_capture_the_quiet_stop_replaces() -> None:
    where = f"uvicorn {version('uvicorn')}"
    assert parameters(uvicorn.Server.capture_signals) == ["self"], where
    handler = uvicorn.Server.handle_exit
    if parameters(handler) == ["args", "kwargs"]:
        # sse_starlette, which the MCP SDK's HTTP transport imports, wraps it in a pass-through
        # once imported in the process; what it passes on to is uvicorn's.
        from sse_starlette.sse import AppStatus

        handler = AppStatus.original_handler
    assert parameters(handler) == ["self", "sig", "frame"], where
    assert "with self.capture_signals()" in inspect.getsource(uvicorn.Server.serve), (
        f"{where}: Server.serve no longer serves inside capture_signals"
    )
    assert issubclass(StopOnSignalServer, uvicorn.Server)


def test_argparse_keeps_what_the_fence_reads_of_a_parser() -> None:
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--json", "-j", action="store_true")
    commands = parser.add_subparsers()
    tools = commands.add_parser("tools")
    tools.add_argument("--toolsets")
    assert fence.subcommands(parser) == {"tools": tools}
    assert fence.own_options(parser) == ["-h", "--help", "--json", "-j"]
    assert fence.own_options(tools) == ["-h", "--help", "--toolsets"]


CLICK_SHAPE_HOOKS = {
    "_format_usage": ["self", "usage", "actions", "groups", "prefix"],
    "_format_action": ["self", "action"],
    "_get_help_string": ["self", "action"],
    "_metavar_formatter": ["self", "action", "default_metavar"],
    "_fill_text": ["self", "text", "width", "indent"],
    "start_section": ["self", "heading"],
}
"""The formatter hooks `fence.click_shaped_help` overrides, with their parameters."""


@pytest.mark.parametrize(("hook", "expected"), CLICK_SHAPE_HOOKS.items())
def test_argparse_keeps_the_formatter_hooks_the_click_shape_overrides(
    hook: str, expected: list[str]
) -> None:
    assert parameters(getattr(argparse.RawDescriptionHelpFormatter, hook)) == expected


def test_the_click_shaped_help_reads_what_argparse_gives_it() -> None:
    parser = argparse.ArgumentParser(
        prog="p",
        description="Does it.",
        formatter_class=lambda prog: fence.click_shaped_help(prog, 200),
    )
    parser.add_argument("--side", choices=["buy", "sell"], required=True, help="which")
    parser.add_subparsers(title="commands").add_parser("tools", help="list them")
    assert parser.format_help().splitlines() == [
        "Usage: p [OPTIONS] COMMAND [ARGS]...",
        "",
        "  Does it.",
        "",
        "Options:",
        "  -h, --help         Show this message and exit.",
        "  --side <buy|sell>  which [required]",
        "",
        "Commands:",
        "  tools              list them",
    ]


def test_http_client_opens_its_socket_through_the_hook() -> None:
    opened = []
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def create(address: tuple[str, int], timeout: float, source: object) -> socket.socket:
            opened.append((address, timeout))
            return socket.create_connection(listener.getsockname())

        connection = http.client.HTTPConnection("svc.invalid", 8080, timeout=3)
        fence.connect_with(connection, create)
        try:
            connection.connect()
            assert opened == [(("svc.invalid", 8080), 3)]
            assert connection.sock is not None
        finally:
            connection.close()


def test_logging_skips_the_caller_lookup_at_the_switch() -> None:
    kept = logging._srcfile
    logger = logging.getLogger("fence-test")
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        logger.warning("looked up")
        fence.skip_caller_lookup()
        logger.warning("not looked up")
    finally:
        logging._srcfile = kept
        logger.removeHandler(handler)
    assert [record.pathname for record in seen] == [__file__, "(unknown file)"]


def test_httpx_falls_back_when_its_command_line_cannot_be_imported() -> None:
    source = inspect.getsource(httpx)
    assert "from ._main import main\nexcept ImportError" in source, (
        f"httpx {version('httpx')} no longer treats its command line as optional"
    )
