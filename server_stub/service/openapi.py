"""The data service's OpenAPI document: one `Operation` per route of `routes.py` and
`passkeys.py`, with the statuses each can answer (docs/api-service.md).

Every route can answer 400 (an unknown, repeated or malformed query parameter; an invalid
Content-Length), 413, 414, 421 (a foreign `Host`; not the health probes) and 431. Data routes add
401, 429 and 503.
"""

from __future__ import annotations

from typing import Any

from server_stub.intel.envelope import json_schema
from server_stub.openapi import (
    ANY_OBJECT,
    BOOLEAN,
    INTEGER,
    NUMBER,
    STRING,
    TIMESTAMP,
    Operation,
    Schema,
    SecurityRequirement,
    array,
    build_document,
    enum,
    nullable,
    path_parameter,
    query,
    record,
)
from server_stub.service.groups import choices, group_by_parameter, grouped_schema
from server_stub.service.passkeys import PREFIX
from server_stub.service.query import IDENTIFIER, SYMBOL
from server_stub.service.routes import EVENT_LEVELS, ORDER_STATUSES, SIDES, STATIC_FILES
from server_stub.service.sessions import SESSION_COOKIE

PROBE = {400, 413, 414, 431}
COMMON = {*PROBE, 421}
DATA = {*COMMON, 401, 429, 500, 503}
OPEN: list[SecurityRequirement] = []

SYSTEM = record(
    {
        "mode": enum("running", "paused"),
        "trading_enabled": BOOLEAN,
        "mode_reason": nullable(STRING),
        "account": STRING,
        "base_currency": STRING,
        **dict.fromkeys(
            ("equity", "cash", "gross_exposure", "net_exposure", "unrealized_pnl"), NUMBER
        ),
        "open_positions": INTEGER,
        "open_orders": INTEGER,
        "daemon_version": STRING,
        **dict.fromkeys(("started_at", "last_heartbeat_at", "updated_at"), TIMESTAMP),
    }
)
POSITION = record(
    {
        "symbol": STRING,
        "side": enum("long", "short"),
        **dict.fromkeys(
            ("quantity", "avg_price", "mark_price", "market_value", "unrealized_pnl"), NUMBER
        ),
        "realized_pnl": NUMBER,
        "opened_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
ORDER = record(
    {
        "id": STRING,
        "client_order_id": STRING,
        "symbol": STRING,
        "side": enum(*SIDES),
        "type": enum("market", "limit", "stop"),
        "time_in_force": enum("day", "gtc", "ioc"),
        "quantity": NUMBER,
        "limit_price": nullable(NUMBER),
        "stop_price": nullable(NUMBER),
        "status": enum(*ORDER_STATUSES),
        "filled_quantity": NUMBER,
        "remaining_quantity": NUMBER,
        "avg_fill_price": nullable(NUMBER),
        "reject_reason": nullable(STRING),
        "strategy": STRING,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
FILL = record(
    {
        "id": STRING,
        "order_id": STRING,
        "symbol": STRING,
        "side": enum(*SIDES),
        **dict.fromkeys(("quantity", "price", "notional", "fee"), NUMBER),
        "liquidity": enum("maker", "taker"),
        "venue": STRING,
        "executed_at": TIMESTAMP,
    }
)
PNL = record(
    {
        "date": STRING,
        **dict.fromkeys(
            ("realized_pnl", "unrealized_pnl", "fees", "net_pnl", "equity_close"), NUMBER
        ),
        "trades": INTEGER,
    }
)
RISK = record(
    {
        "name": STRING,
        "scope": enum("account", "symbol"),
        "symbol": nullable(STRING),
        "limit": NUMBER,
        "current": NUMBER,
        "unit": STRING,
        "utilization": nullable(NUMBER),
        "status": enum("ok", "warning", "breached"),
        "updated_at": TIMESTAMP,
    }
)
EVENT = record(
    {
        "id": INTEGER,
        "ts": TIMESTAMP,
        "level": enum(*EVENT_LEVELS),
        "kind": STRING,
        "source": enum("daemon", "admin"),
        "symbol": nullable(STRING),
        "message": STRING,
    }
)
INTEL = record(
    {
        "id": STRING,
        "schema": STRING,
        "source": STRING,
        "kind": STRING,
        "issued_at": TIMESTAMP,
        "expires_at": nullable(TIMESTAMP),
        "received_at": TIMESTAMP,
        "body": ANY_OBJECT,
        "forwarded_by": nullable(STRING),
    }
)
RECEIPT = record({"id": STRING, "duplicate": BOOLEAN, "received_at": TIMESTAMP})
AUTH_STATE = record({"auth_required": BOOLEAN, "authenticated": BOOLEAN})
LOGIN = record(
    {"auth_required": BOOLEAN, "authenticated": BOOLEAN},
    {"session_expires_in": INTEGER},
)
PASSKEY = record(
    {
        "id": STRING,
        "label": STRING,
        "rp_id": STRING,
        "created_at": TIMESTAMP,
        "last_used_at": nullable(TIMESTAMP),
    }
)
STATUS = record({"status": STRING})

SYMBOL_PARAMETER = query(
    "symbol", {"type": "string", "pattern": f"^{SYMBOL.pattern}$"}, "ticker symbol"
)
SINCE_UNTIL = [
    query("since", {"type": "string", "format": "date-time"}, "inclusive, ISO 8601"),
    query("until", {"type": "string", "format": "date-time"}, "exclusive, ISO 8601"),
]


def _identifier(name: str) -> Schema:
    return query(name, {"type": "string", "pattern": f"^{IDENTIFIER.pattern}$"}, name)


def _list(path: str, summary: str, item: Schema, *parameters: Schema) -> Operation:
    return Operation("GET", path, summary, array(item), DATA, paged=True, parameters=parameters)


def _intel_envelope() -> Schema:
    schema = json_schema()
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    return schema


def operations() -> list[Operation]:
    side = query("side", enum(*SIDES), "buy or sell")
    login_errors = {*COMMON, 401, 403, 409, 415, 429, 503}
    return [
        Operation("GET", "/api/v1/system", "the daemon's state", SYSTEM, DATA),
        _list("/api/v1/positions", "open positions", POSITION, SYMBOL_PARAMETER),
        _list(
            "/api/v1/orders",
            "orders, newest first",
            grouped_schema(
                ORDER,
                choices("orders"),
                {"quantity": NUMBER, "filled_quantity": NUMBER},
            ),
            SYMBOL_PARAMETER,
            query("status", enum(*ORDER_STATUSES, "open"), "open = new or partially filled"),
            side,
            *SINCE_UNTIL,
            group_by_parameter("orders"),
        ),
        _list(
            "/api/v1/fills",
            "executions, newest first",
            grouped_schema(
                FILL,
                choices("fills"),
                {
                    **dict.fromkeys(("quantity", "notional", "fees"), NUMBER),
                    "vwap": nullable(NUMBER),
                },
            ),
            SYMBOL_PARAMETER,
            _identifier("order_id"),
            side,
            *SINCE_UNTIL,
            group_by_parameter("fills"),
        ),
        _list(
            "/api/v1/pnl",
            "daily P&L, newest first",
            grouped_schema(
                PNL,
                choices("daily_pnl"),
                {
                    **dict.fromkeys(("realized_pnl", "unrealized_pnl", "fees", "net_pnl"), NUMBER),
                    "trades": INTEGER,
                    "best_day": STRING,
                    "best_net_pnl": NUMBER,
                    "worst_day": STRING,
                    "worst_net_pnl": NUMBER,
                },
            ),
            query("since", {"type": "string", "format": "date"}, "inclusive, YYYY-MM-DD"),
            query("until", {"type": "string", "format": "date"}, "exclusive, YYYY-MM-DD"),
            group_by_parameter("daily_pnl"),
        ),
        _list("/api/v1/risk", "risk limits", RISK, SYMBOL_PARAMETER),
        _list(
            "/api/v1/events",
            "the event log, newest first",
            grouped_schema(EVENT, choices("events"), {"first_ts": TIMESTAMP, "last_ts": TIMESTAMP}),
            query("level", enum(*EVENT_LEVELS), "level"),
            _identifier("kind"),
            SYMBOL_PARAMETER,
            *SINCE_UNTIL,
            group_by_parameter("events"),
        ),
        _list(
            "/api/v1/intel",
            "the intel inbox, newest first",
            INTEL,
            _identifier("kind"),
            _identifier("source"),
            *SINCE_UNTIL,
        ),
        Operation(
            "POST",
            "/api/v1/intel",
            "receive one signed svc.intel.v1 envelope (the only write)",
            RECEIPT,
            {*DATA, 403, 409, 415, 422},
            success=(200, 201),
            body=_intel_envelope(),
        ),
        Operation(
            "GET",
            "/api/v1/auth/status",
            "whether auth is required and the caller authenticated",
            AUTH_STATE,
            {*COMMON, 401, 429},
            security=[{}, *_CREDENTIALS],
        ),
        Operation(
            "POST",
            "/api/v1/auth/login",
            "token login; sets the svc_session cookie",
            LOGIN,
            {*COMMON, 401, 403, 415, 429},
            body=record({"token": {"type": "string", "minLength": 1}}),
            security=OPEN,
        ),
        Operation(
            "POST",
            "/api/v1/auth/logout",
            "ends the session and clears the cookie",
            record({"authenticated": BOOLEAN}),
            {*COMMON, 403},
            security=[{}, {"session": []}],
        ),
        Operation("GET", "/health/live", "liveness probe", STATUS, PROBE, security=OPEN),
        Operation("GET", "/health/ready", "readiness probe", STATUS, {*PROBE, 503}, security=OPEN),
        Operation(
            "GET",
            "/",
            "the dashboard page",
            errors=COMMON,
            content={"text/html": STRING},
            security=OPEN,
        ),
        Operation(
            "GET",
            "/static/{name}",
            "the dashboard's files",
            errors={*COMMON, 404},
            parameters=[path_parameter("name", enum(*STATIC_FILES))],
            content=dict.fromkeys(sorted({t.split(";")[0] for t in STATIC_FILES.values()}), STRING),
            security=OPEN,
        ),
        Operation(
            "POST",
            f"{PREFIX}/login/options",
            "passkey request options",
            ANY_OBJECT,
            login_errors - {401, 415},
            security=OPEN,
        ),
        Operation(
            "POST",
            f"{PREFIX}/login",
            "passkey login; sets the svc_session cookie",
            LOGIN,
            login_errors,
            body=record({"credential": ANY_OBJECT}),
            security=OPEN,
        ),
        Operation(
            "POST",
            f"{PREFIX}/register/options",
            "passkey creation options (needs a browser session)",
            ANY_OBJECT,
            {*DATA, 403, 409},
        ),
        Operation(
            "POST",
            f"{PREFIX}/register",
            "register a passkey (needs a browser session)",
            PASSKEY,
            {*DATA, 403, 409, 415},
            success=(201,),
            body=record({"credential": ANY_OBJECT, "label": STRING}),
        ),
        Operation(
            "GET",
            f"{PREFIX}/credentials",
            "the registered passkeys (no key material)",
            array(PASSKEY),
            {*DATA, 409},
        ),
        Operation(
            "DELETE",
            f"{PREFIX}/credentials/{{credential_id}}",
            "delete a passkey",
            record({"deleted": STRING}),
            {*DATA, 403, 404, 409},
        ),
    ]


_CREDENTIALS: list[SecurityRequirement] = [{"bearer": []}, {"apiToken": []}, {"session": []}]
SECURITY_SCHEMES: dict[str, Schema] = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "SERVICE_API_TOKEN"},
    "apiToken": {"type": "apiKey", "in": "header", "name": "X-API-Token"},
    "session": {"type": "apiKey", "in": "cookie", "name": SESSION_COOKIE},
}


def document(auth_required: bool) -> dict[str, Any]:
    return build_document(
        title="svc data service",
        description=(
            "Every JSON response is an envelope. Any method a path does not list is 405 "
            "method_not_allowed with Allow. "
            + (
                "A token is set: data routes need a credential."
                if auth_required
                else "Auth is off (no SERVICE_API_TOKEN): every route is open."
            )
        ),
        operations=operations(),
        security_schemes=SECURITY_SCHEMES,
        security=_CREDENTIALS if auth_required else [{}],
    )
