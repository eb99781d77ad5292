"""The data service rows of the tool table: the data service's reads, and `submit_intel`.

Field meanings are documented in docs/api-service.md; the record models are in `service_models`.
Every row but `submit_intel` is a read; `submit_intel` forwards an envelope someone else signed (the
MCP never holds the signing key) and is idempotent, so a connection failure may be retried. No row
can pause, resume, flatten or place orders: the service has no such route, and the table has no such
row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from svc_mcp.core.backends import SERVICE
from svc_mcp.core.connection import request_body
from svc_mcp.core.errors import InvalidArgument
from svc_mcp.core.lazy_import import lazy_module
from svc_mcp.core.params import Param, nullable
from svc_mcp.core.toolspec import (
    AGENT_PAGE,
    GROUP_BY,
    Hints,
    RecordModel,
    ToolSpec,
    read_tool,
)
from svc_serving.contracts import INTEL_SCHEMA_TAG, MAX_BODY_BYTES

if TYPE_CHECKING:
    from svc_mcp.tools import service_models as models
else:
    models = lazy_module("svc_mcp.tools.service_models")

INTEL_MAX_BYTES = MAX_BODY_BYTES
"""The largest request body the service's intake accepts (docs/api-service.md)."""

SERVICE_ACCESS = f"the data service token ({SERVICE.token_names})"

SYMBOL = Param("symbol", "string", "")
SINCE = Param("since", "string", "ISO 8601 UTC, no offset (so is until).", time_format="date-time")
UNTIL = Param(
    "until",
    "string",
    "",
    cli_help="Before this ISO 8601 time (UTC, no offset).",
    time_format="date-time",
)
SINCE_DATE = Param("since", "string", "A date, YYYY-MM-DD (so is until).", time_format="date")
UNTIL_DATE = Param(
    "until", "string", "", cli_help="Before this date (YYYY-MM-DD).", time_format="date"
)
SIDE = Param("side", "string", "", choices=("buy", "sell"))
KIND = Param("kind", "string", "")


def _read(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: RecordModel,
    filters: tuple[Param, ...] = (),
    *,
    many: bool = True,
    selectable: bool = False,
    agent_page: int = AGENT_PAGE,
    view: str | None = None,
    grouped: RecordModel | None = None,
    newest_first: bool = True,
) -> ToolSpec:
    return read_tool(
        name,
        title,
        f"{description} Newest first." if many and newest_first else description,
        path,
        returns,
        backend=SERVICE,
        access=SERVICE_ACCESS,
        filters=filters,
        many=many,
        selectable=selectable,
        agent_page=agent_page,
        view=view,
        grouped=grouped,
    )


def group_by(said: str, *choices: str) -> Param:
    """One row per group instead of records (the data service computes them);
    `said` names the choices briefly (the tool list pays for each word), a wrong one is told
    them all."""
    return Param(GROUP_BY, "string", said, choices=choices, named_only=True)


GROUPED = " Totals by symbol or day: group_by."


def check_envelope(arguments: dict[str, Any]) -> None:
    """The local check of `submit_intel`: its size, the schema tag and a signature. The service
    verifies the signature itself; the MCP has no key to."""
    envelope = arguments.get("envelope")
    if not isinstance(envelope, dict):
        raise InvalidArgument(
            "envelope must be a JSON object: a signed svc.intel.v1 envelope", hint="envelope"
        )
    if envelope.get("schema") != INTEL_SCHEMA_TAG:
        raise InvalidArgument(f"envelope.schema must be {INTEL_SCHEMA_TAG!r}", hint="envelope")
    if not isinstance(envelope.get("sig"), str) or not envelope["sig"]:
        raise InvalidArgument(
            "envelope has no sig: sign it first (svc-stub intel sign)", hint="envelope"
        )
    size = len(request_body(envelope) or b"")
    if size > INTEL_MAX_BYTES:
        raise InvalidArgument(
            f"envelope is {size:,} bytes as JSON; the intake accepts at most "
            f"{INTEL_MAX_BYTES // 1024} KiB, so it was not sent",
            hint="envelope",
        )


_TEXT = {"type": "string"}
ENVELOPE_FIELDS: dict[str, Any] = {
    "schema": {"type": "string", "enum": [INTEL_SCHEMA_TAG]},
    "id": _TEXT,
    "issued_at": _TEXT,
    "expires_at": nullable(_TEXT),
    "source": _TEXT,
    "kind": _TEXT,
    "body": {"type": "object", "additionalProperties": True},
    "sig": _TEXT,
}
"""What the envelope parameter declares: its fields, so that no converter takes it for an empty
object; `body` is the one open object, and says so (pydantic-ai closes an object that does not).
The service checks the rest (formats, the signature)."""

SUBMIT_INTEL = ToolSpec(
    name="submit_intel",
    title="Submit signed intel",
    description=(
        "Forward one pre-signed svc.intel.v1 envelope to the intel inbox (the only write). "
        "A repeat answers duplicate=true; another envelope with its id, conflict."
    ),
    method="POST",
    path="/api/v1/intel",
    params=(
        Param(
            "envelope",
            "object",
            # Said for converters that turn any object into a plain dict (llama-index).
            "{schema, id, issued_at, expires_at?, source, kind, body, sig}",
            required=True,
            shape={
                "properties": ENVELOPE_FIELDS,
                "required": [name for name in ENVELOPE_FIELDS if name != "expires_at"],
                "additionalProperties": False,
            },
        ),
    ),
    returns=lambda: models.IntelReceipt,
    many=False,
    backend=SERVICE,
    access=SERVICE_ACCESS,
    hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
    body="envelope",
    precheck=check_envelope,
    transport_retries=2,
    resend_note=" (idempotent by id: a stored envelope answers duplicate=true)",
)

SERVICE_TOOLS: tuple[ToolSpec, ...] = (
    _read(
        "get_system",
        "Trading system state",
        "Get the daemon's state. Start here.",
        "/api/v1/system",
        lambda: models.SystemState,
        many=False,
    ),
    _read(
        "get_positions",
        "Open positions",
        "List open positions.",
        "/api/v1/positions",
        lambda: models.Position,
        (SYMBOL,),
        view="table",
        newest_first=False,
    ),
    _read(
        "get_orders",
        "Orders",
        "List the daemon's orders (none can be placed or cancelled here).",
        "/api/v1/orders",
        lambda: models.Order,
        (
            SYMBOL,
            Param(
                "status",
                "string",
                "open = new or partially_filled.",
                choices=("open", "new", "partially_filled", "filled", "cancelled", "rejected"),
            ),
            SIDE,
            SINCE,
            UNTIL,
            group_by(
                "",
                "symbol",
                "side",
                "status",
                "type",
                "strategy",
                "day",
                "week",
                "month",
            ),
        ),
        selectable=True,
        agent_page=15,
        grouped=lambda: models.OrderGroup,
    ),
    _read(
        "get_fills",
        "Fills",
        "List executions." + GROUPED,
        "/api/v1/fills",
        lambda: models.Fill,
        (
            SYMBOL,
            Param("order_id", "string", ""),
            SIDE,
            SINCE,
            UNTIL,
            group_by(
                "A field or day/week/month.",
                "symbol",
                "side",
                "venue",
                "liquidity",
                "order_id",
                "day",
                "week",
                "month",
            ),
        ),
        selectable=True,
        grouped=lambda: models.FillGroup,
    ),
    _read(
        "get_pnl",
        "Daily P&L",
        "List daily P&L.",
        "/api/v1/pnl",
        lambda: models.DailyPnl,
        (SINCE_DATE, UNTIL_DATE, group_by("week, month or year.", "week", "month", "year")),
        view="pnl",
        grouped=lambda: models.Group,
    ),
    _read(
        "get_risk",
        "Risk limits",
        "List risk limits and their use (warning from 80%, breached from 100%).",
        "/api/v1/risk",
        lambda: models.RiskLimit,
        (SYMBOL,),
        view="table",
        newest_first=False,
    ),
    _read(
        "get_intel",
        "Intel inbox",
        "List received intel envelopes.",
        "/api/v1/intel",
        lambda: models.IntelItem,
        (KIND, Param("source", "string", ""), SINCE, UNTIL),
    ),
    _read(
        "get_events",
        "Event log",
        "List the daemon's event log.",
        "/api/v1/events",
        lambda: models.Event,
        (
            Param("level", "string", "", choices=("info", "warning", "error")),
            KIND,
            SYMBOL,
            SINCE,
            UNTIL,
            group_by("", "level", "kind", "source", "symbol", "day"),
        ),
        selectable=True,
        grouped=lambda: models.EventGroup,
    ),
    _read(
        "get_auth_status",
        "Auth status",
        "Get whether the data service requires auth and the token passes (diagnoses a 401).",
        "/api/v1/auth/status",
        lambda: models.AuthStatus,
        many=False,
    ),
    _read(
        "get_health",
        "Service health",
        "Get the data service's readiness (ready, or an unavailable error).",
        "/health/ready",
        lambda: models.Health,
        many=False,
    ),
    SUBMIT_INTEL,
)
