"""The Starlette fence: the one module that relies on Starlette's router beyond its documented
use (it subclasses `Router`, overrides its ASGI entry `app`, and puts the router in place of the
one `Starlette` builds). tests/architecture/test_fences.py asserts what it relies on, and
pyproject.toml bounds Starlette to the releases those tests ran on.

`DirectRouter` is Starlette's router with a lookup for fixed paths: a request for a path without
parameters goes straight to its route instead of being tried against every route before it, and
to its endpoint when that is an async function: Starlette's `request_response` wrapper around it
adds only a second exception-handler layer, which the app's `ExceptionMiddleware` (with the same
handlers) repeats outside the router.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]


def direct_app(
    routes: Sequence[BaseRoute],
    *,
    middleware: Sequence[Middleware],
    exception_handlers: Mapping[Any, Callable[..., Any]],
) -> Starlette:
    """A Starlette app routing through DirectRouter."""
    app = Starlette(middleware=middleware, exception_handlers=exception_handlers)
    # redirect_slashes off: "/api/catalog/" is not a route, so 404, never a redirect built from
    # the Host header.
    app.router = DirectRouter(routes, redirect_slashes=False)
    return app


class DirectRouter(Router):
    """Starlette's router, which tries its routes in order, plus a lookup by path for the routes
    without parameters that no route before them could also match: the answer is the same, the
    tries before it are skipped. A request the looked-up route does not take in full (another
    method) goes through the ordered tries, as before."""

    def __init__(self, routes: Sequence[BaseRoute], *, redirect_slashes: bool) -> None:
        super().__init__(list(routes), redirect_slashes=redirect_slashes)
        self.fixed_paths = _fixed_paths(self.routes)
        self.endpoints: dict[str, Endpoint] = {
            path: route.endpoint
            for path, route in self.fixed_paths.items()
            if _wraps_only_its_endpoint(route)
        }

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = (
            self.fixed_paths.get(scope["path"])
            if scope["type"] == "http" and not scope.get("root_path")
            else None
        )
        if route is not None:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.setdefault("router", self)
                scope["route"] = route
                scope.update(child_scope)
                endpoint = self.endpoints.get(scope["path"])
                if endpoint is None:
                    await route.handle(scope, receive, send)
                    return
                response = await endpoint(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().app(scope, receive, send)


def _fixed_paths(routes: Sequence[BaseRoute]) -> dict[str, Route]:
    fixed: dict[str, Route] = {}
    earlier: list[Route] = []
    for route in routes:
        if not isinstance(route, Route):
            break  # a mount or another kind of route could match anything after it
        if not route.param_convertors and not any(
            other.path_regex.match(route.path) for other in earlier
        ):
            fixed[route.path] = route
        earlier.append(route)
    return fixed


def _wraps_only_its_endpoint(route: Route) -> bool:
    """Whether `route.app` is `request_response(route.endpoint)` as Starlette builds it for an async
    function, with no route middleware or body limit around it."""
    return (
        inspect.iscoroutinefunction(route.endpoint)
        and getattr(route.app, "__qualname__", "") == "request_response.<locals>.app"
    )
