"""What each fence module relies on in its library's internals, asserted by name and signature, so
an upgrade that changes it fails here, with the reason, before anything else misbehaves.

uvicorn (fence: `svc_serving.bounded`): uvicorn has no setting that bounds an httptools request
head (h11 has one; httptools keeps any size), so `BoundedHttpTools` subclasses its httptools
protocol: it counts and times the head in the parser callbacks, keeps one deadline per connection
(head, body, idle) that only a new request head moves, counts connections per peer key in
connection_made/lost (and at a websocket upgrade, where uvicorn stops counting one), and answers a
repeated Host or Authorization by swapping the app for one request. The pin in pyproject.toml keeps uvicorn to
the releases these tests ran on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
