"""The HTTP routes of the data service. Every handler is async on purpose: the guard and the
session store are plain in-memory structures mutated only on the event loop thread, never from
Starlette's thread pool. Database reads are short and local."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server_stub.http import (
    ApiError,
    RenderedEnvelopes,
    ok,
    read_json_object,
    require_json,
    storage_unavailable,
)
from server_stub.service.auth import Authenticator, Via
from server_stub.service.db import Condition, DatabaseUnavailable, PageOfRows, ServiceDatabase
from server_stub.service.groups import choices, grouped_page, time_conditions
from server_stub.service.intake import IntelIntake, parse_envelope
from server_stub.service.query import IDENTIFIER, PAGING, QueryReader, bad_request
from server_stub.service.sessions import SESSION_COOKIE
from server_stub.service.settings import WithoutGroupBy
from server_stub.service.storage import StorageFault, corrupt
from svc_serving.contracts import SAFE_HEADERS
from svc_serving.forwarded_by import HEADER as FORWARDED_BY
from svc_serving.forwarded_by import decoded

ORDER_STATUSES = ("new", "partially_filled", "filled", "cancelled", "rejected")
OPEN_ORDER_STATUSES = ("new", "partially_filled")
SIDES = ("buy", "sell")
EVENT_LEVELS = ("info", "warning", "error")

SHELL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

# The JSON envelope's safe headers, and more for the pages.
PAGE_HEADERS = {
    **SAFE_HEADERS,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def unavailable() -> ApiError:
    return storage_unavailable("the service database cannot be read right now")


# The dashboard's files under /static/ (ES modules and the style sheet), read once at start.
STATIC_FILES = {
    "shell.js": "text/javascript; charset=utf-8",
    "api.js": "text/javascript; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "chart.js": "text/javascript; charset=utf-8",
    "passkeys.js": "text/javascript; charset=utf-8",
    "shell.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def _static_text(name: str) -> str:
    return resources.files("server_stub.service").joinpath("static", name).read_text("utf-8")


class ServiceRoutes:
    def __init__(
        self,
        authenticator: Authenticator,
        database: ServiceDatabase,
        intake: IntelIntake,
        without_group_by: WithoutGroupBy | None = None,
    ) -> None:
        self.auth = authenticator
        self.db = database
        self.intake = intake
        self._without_group_by = without_group_by
        # The query parameters a grouped list reads besides its filters.
        self._grouping = () if without_group_by is WithoutGroupBy.REFUSE else ("group_by",)
        required = authenticator.auth_required
        self._shell = (
            _static_text("index.html")
            .replace("{{AUTH_REQUIRED}}", "true" if required else "false")
            .replace("{{LOGIN_HIDDEN}}", "" if required else "hidden")
        )
        self._static = {name: _static_text(name) for name in STATIC_FILES}
        self._rendered = RenderedEnvelopes()
        self._live = ok({"status": "live"})

    def routes(self) -> list[BaseRoute]:
        read = ["GET"]
        # Most frequent first: Starlette tries the routes in order.
        return [
            Route("/api/v1/system", self.system, methods=read),
            Route("/api/v1/positions", self.positions, methods=read),
            Route("/api/v1/orders", self.orders, methods=read),
            Route("/api/v1/fills", self.fills, methods=read),
            Route("/api/v1/pnl", self.pnl, methods=read),
            Route("/api/v1/risk", self.risk, methods=read),
            Route("/api/v1/events", self.events, methods=read),
            Route("/api/v1/intel", self.intel, methods=["GET", "POST"]),
            Route("/api/v1/auth/status", self.auth_status, methods=read),
            Route("/api/v1/auth/login", self.login, methods=["POST"]),
            Route("/api/v1/auth/logout", self.logout, methods=["POST"]),
            Route("/health/live", self.live, methods=read),
            Route("/health/ready", self.ready, methods=read),
            Route("/", self.shell, methods=read),
            Route("/static/{name}", self.static_file, methods=read),
        ]

    # --- public pages and probes -------------------------------------------------------------

    async def shell(self, request: Request) -> Response:
        QueryReader(request, ())
        return Response(
            self._shell,
            media_type="text/html; charset=utf-8",
            headers={**PAGE_HEADERS, "Content-Security-Policy": SHELL_CSP},
        )

    async def static_file(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self._static:
            raise ApiError(404, "not_found", "no such file under /static/")
        return Response(self._static[name], media_type=STATIC_FILES[name], headers=PAGE_HEADERS)

    async def live(self, request: Request) -> Response:
        return self._live

    async def ready(self, request: Request) -> Response:
        # Ready only when the service can answer both reads and writes.
        if not self.db.is_ready() or not self.intake.writable():
            raise unavailable()
        return ok({"status": "ready"})

    # --- auth ----------------------------------------------------------------------------------

    async def auth_status(self, request: Request) -> Response:
        QueryReader(request, ())
        authentication = self.auth.authenticate(request, credential_optional=True)
        return ok(
            {
                "auth_required": self.auth.auth_required,
                "authenticated": authentication.authenticated,
            }
        )

    async def login(self, request: Request) -> Response:
        QueryReader(request, ())
        if not self.auth.auth_required:
            return ok({"auth_required": False, "authenticated": True})
        self.auth.refuse_foreign_origin(request)
        require_json(request)
        client = self.auth.client_address(request)
        self.auth.admit_login(client)
        try:
            body = await read_json_object(request, required={"token"})
            token = body["token"]
            if not isinstance(token, str) or not token:
                raise bad_request("token must be a non-empty string")
        except ApiError as error:
            raise self.auth.malformed_login(client, Via.LOGIN, error) from None
        if not self.auth.token_matches(token):
            raise self.auth.failed_credential(client, Via.LOGIN)
        return self.auth.complete_login(request, client, Via.LOGIN)

    async def logout(self, request: Request) -> Response:
        QueryReader(request, ())
        if self.auth.auth_required and request.cookies.get(SESSION_COOKIE):
            self.auth.require_same_origin(request)
        response = ok({"authenticated": False})
        self.auth.end_session(request, response)
        return response

    # --- data ----------------------------------------------------------------------------------

    async def system(self, request: Request) -> Response:
        self.auth.authenticate(request)
        QueryReader(request, ())
        system = self._read(self.db.system)
        return self._rendered.response(system, lambda: ok(system))

    async def positions(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(request, (*PAGING, "symbol"))
        return self._page(lambda: self.db.positions(query.page(), symbol=query.symbol()))

    async def orders(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(
            request, (*PAGING, "symbol", "status", "side", "since", "until", *self._grouping)
        )
        status = query.choice("status", (*ORDER_STATUSES, "open"))
        statuses = OPEN_ORDER_STATUSES if status == "open" else (status,) if status else ()
        group_by = self._group_by(query, "orders")
        symbol, side, period = query.symbol(), query.choice("side", SIDES), query.time_range()
        if group_by is not None:
            conditions = [
                ("symbol = ?", symbol),
                ("status IN ({})", tuple(statuses) or None),
                ("side = ?", side),
                *time_conditions("created_at", period),
            ]
            return self._grouped("orders", group_by, conditions, query)
        return self._page(
            lambda: self.db.orders(
                query.page(), symbol=symbol, statuses=statuses, side=side, period=period
            )
        )

    async def fills(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(
            request, (*PAGING, "symbol", "order_id", "side", "since", "until", *self._grouping)
        )
        group_by = self._group_by(query, "fills")
        symbol, side, period = query.symbol(), query.choice("side", SIDES), query.time_range()
        order_id = query.text("order_id", IDENTIFIER, "an order id such as ord-000123")
        if group_by is not None:
            conditions = [
                ("symbol = ?", symbol),
                ("order_id = ?", order_id),
                ("side = ?", side),
                *time_conditions("executed_at", period),
            ]
            return self._grouped("fills", group_by, conditions, query)
        return self._page(
            lambda: self.db.fills(
                query.page(), symbol=symbol, order_id=order_id, side=side, period=period
            )
        )

    async def pnl(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(request, (*PAGING, "since", "until", *self._grouping))
        group_by = self._group_by(query, "daily_pnl")
        period = query.date_range()
        if group_by is not None:
            conditions = time_conditions("date", period)
            return self._grouped("daily_pnl", group_by, conditions, query)
        return self._page(lambda: self.db.daily_pnl(query.page(), period=period))

    async def risk(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(request, (*PAGING, "symbol"))
        return self._page(lambda: self.db.risk_limits(query.page(), symbol=query.symbol()))

    async def events(self, request: Request) -> Response:
        self.auth.authenticate(request)
        query = QueryReader(
            request, (*PAGING, "level", "kind", "symbol", "since", "until", *self._grouping)
        )
        group_by = self._group_by(query, "events")
        level = query.choice("level", EVENT_LEVELS)
        kind = query.text("kind", IDENTIFIER, "an event kind such as order_rejected")
        symbol, period = query.symbol(), query.time_range()
        if group_by is not None:
            conditions = [
                ("level = ?", level),
                ("kind = ?", kind),
                ("symbol = ?", symbol),
                *time_conditions("ts", period),
            ]
            return self._grouped("events", group_by, conditions, query)
        return self._page(
            lambda: self.db.events(
                query.page(), level=level, kind=kind, symbol=symbol, period=period
            )
        )

    async def intel(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.receive_intel(request)
        self.auth.authenticate(request)
        query = QueryReader(request, (*PAGING, "kind", "source", "since", "until"))
        return self._page(
            lambda: self.db.intel(
                query.page(),
                kind=query.text("kind", IDENTIFIER, "an intel kind (letters, digits, ._:-)"),
                source=query.text("source", IDENTIFIER, "an intel source (letters, digits, ._:-)"),
                period=query.time_range(),
            )
        )

    async def receive_intel(self, request: Request) -> Response:
        authentication = self.auth.authenticate_write(request)
        QueryReader(request, ())
        require_json(request)
        document = parse_envelope(await request.body())
        # Only the token's holder (the MCP side) may say whom it forwards for.
        by_token = authentication.via in (Via.AUTHORIZATION, Via.X_API_TOKEN)
        forwarded_by = decoded(request.headers.get(FORWARDED_BY)) if by_token else None
        # Here, on the thread that reads: the readers' connection must not hold the database's
        # shared index read-only once write access is back (a client may only ever write).
        self.db.let_go_once_writable()
        # In a worker thread: waiting on a locked database must not stall other requests.
        receipt = await to_thread.run_sync(self.intake.receive, document, forwarded_by)
        return ok(receipt.data(), status=200 if receipt.duplicate else 201)

    def _read(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except DatabaseUnavailable as exc:
            raise (corrupt() if exc.fault is StorageFault.CORRUPT else unavailable()) from None

    def _group_by(self, query: QueryReader, table: str) -> str | None:
        if self._without_group_by is not None:
            return None
        return query.choice("group_by", choices(table))

    def _grouped(
        self, table: str, group_by: str, conditions: list[Condition], query: QueryReader
    ) -> Response:
        return self._page(lambda: grouped_page(self.db, table, group_by, conditions, query.page()))

    def _page(self, read: Callable[[], PageOfRows]) -> Response:
        page: PageOfRows = self._read(read)
        return self._rendered.response(page, lambda: ok(page.rows, next_cursor=page.next_cursor))
