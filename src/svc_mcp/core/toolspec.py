"""What one row of the tool table declares, for the portal and the data service alike.

A `ToolSpec` holds everything the adapters need: the MCP server (title, description, input and
output schemas, annotations), the CLIs (`svc-mcp <tool>`, `svc-portal <group> <command>`),
`svc-mcp tools`, and the contract tests. Adding a tool is adding a row. Its parameters are
`Param`s (`svc_mcp.core.params`).

Only the standard library is imported here, and a row refers to its record model lazily (a
function returning it, over `svc_mcp.core.lazy_import.lazy_module`), so that listing tools and
parsing a command line never load pydantic, while the type checker still sees each reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from svc_mcp.core.errors import InvalidArgument
from svc_mcp.core.params import Param
from svc_serving.contracts import MAX_LIMIT

if TYPE_CHECKING:
    from pydantic import BaseModel

    from svc_mcp.core.backends import Backend, Toolset

RecordModel = Callable[[], "type[BaseModel]"]
"""A row's record model, imported only when a schema or a check needs it."""


@dataclass(frozen=True)
class Hints:
    """The MCP tool annotations (hints for clients, not guarantees)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def annotations(self) -> dict[str, bool]:
        """In the wire spelling of MCP's `ToolAnnotations`. For a read-only tool the destructive
        and idempotent hints mean nothing (MCP says so) and are left out."""
        if self.read_only:
            return {"readOnlyHint": True, "openWorldHint": self.open_world}
        return {
            "readOnlyHint": False,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READ_ONLY = Hints(read_only=True, destructive=False, idempotent=True, open_world=False)
"""A read of one known service: changes nothing, safe to repeat, a closed world."""

AGENT_PAGE = 20
"""The records an MCP call returns when `limit` is left out: small enough for an agent's context
(each default result stays under 8,000 characters); the CLI keeps the server's default of 100."""
CURSOR = Param("cursor", "string", "")
FIELDS = Param("fields", "array", "")
GROUP_BY = "group_by"
"""The parameter of a list that answers one row per group instead of records."""
GROUPED_KEY = "groups"
"""Where a grouped answer's rows go in the structured result (records go in `result`)."""


def paging(agent_page: int) -> tuple[Param, Param]:
    """The one paging rule of both backends: `limit` and an opaque `cursor`; when more remain the
    answer carries `next_cursor`."""
    limit = Param("limit", "integer", "", minimum=1, maximum=MAX_LIMIT, default=agent_page)
    return limit, CURSOR


@dataclass(frozen=True)
class ToolSpec:
    """One tool: one request to one REST path whose `data` is the tool's result.

    Parameters go in the query string, except the one named by `body`, sent as the JSON body.
    """

    name: str
    title: str
    description: str
    method: Literal["GET", "POST"]
    path: str
    params: tuple[Param, ...]
    returns: RecordModel
    many: bool
    """True: `data` is a list of `returns` (paged with limit/cursor); False: one object."""
    backend: Backend
    access: str
    """Who may call it, as an error message completes "it needs ..."."""
    cli: tuple[str, ...] = ()
    """The `svc-portal` command path, e.g. ("identity", "credential", "revokes")."""
    hints: Hints = READ_ONLY
    body: str | None = None
    precheck: Callable[[dict[str, Any]], None] | None = None
    """Checks the arguments before anything is sent; raises `CallError` with what to fix."""
    transport_retries: int = 0
    """Resends after a connection failure; only for rows whose request is idempotent."""
    view: str | None = None
    """The MCP Apps view that shows the result to a person (a name in `svc_mcp.serve.views`)."""
    resend_note: str = ""
    """Why re-sending a write is safe, when it is idempotent (told with a retryable failure)."""
    grouped: RecordModel | None = None
    """The row of a grouped answer, for a list that takes `group_by` (`GROUP_BY`)."""

    @property
    def toolset(self) -> Toolset:
        return self.backend.toolset

    @property
    def selectable(self) -> bool:
        """Whether the call may pick fields of each record (`fields`)."""
        return any(param.name == FIELDS.name for param in self.params)

    @property
    def retry_advice(self) -> str:
        """What a retryable failure adds: whether sending the same call again is safe."""
        if self.hints.read_only:
            return "retrying is safe: this call only reads"
        if self.hints.idempotent:
            what = f"the same {self.body}" if self.body else "the same call"
            return f"re-sending {what} is safe{self.resend_note}"
        return "sending it again may repeat the change: check its effect first"

    def agent_defaults(self) -> dict[str, object]:
        """The arguments an MCP call sends when they are left out (a smaller page)."""
        return {param.name: param.default for param in self.params if param.default is not None}

    def record_model(self) -> type[BaseModel]:
        return self.returns()

    def input_schema(self) -> dict[str, Any]:
        """A tool without parameters says it takes none (`properties` stays: smolagents' MCP
        adapter needs it); one with parameters lists them, and `check_arguments` refuses any
        other by name. Strict converters add `additionalProperties: false` themselves, so it is
        not paid for in every agent's context."""
        if not self.params:
            return {"type": "object", "properties": {}, "additionalProperties": False}
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {param.name: param.json_schema() for param in self.params},
        }
        required = [param.name for param in self.params if param.required]
        if required:
            schema["required"] = required
        return schema

    def check_arguments(self, arguments: Mapping[str, object]) -> dict[str, object]:
        """The given arguments, each checked by its `Param`; `None`, and a blank text or list,
        is not given. Unknown or missing ones are an `InvalidArgument` too. Runs before
        anything is sent."""
        known = {param.name: param for param in self.params}
        unknown = sorted(name for name in arguments if name not in known)
        if unknown:
            raise InvalidArgument(
                f"{self.name} takes no argument {', '.join(unknown)}; it takes "
                f"{', '.join(known) or 'no arguments'}",
                hint=unknown[0],
            )
        checked = {
            name: known[name].check(value)
            for name, value in arguments.items()
            if value is not None and not (value in ("", []) and known[name].blank_is_absent)
        }
        missing = [
            param.name for param in self.params if param.required and param.name not in checked
        ]
        if missing:
            raise InvalidArgument(f"{self.name} needs {', '.join(missing)}", hint=missing[0])
        return checked


def read_tool(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: RecordModel,
    *,
    backend: Backend,
    access: str,
    filters: tuple[Param, ...] = (),
    many: bool = True,
    agent_page: int = AGENT_PAGE,
    selectable: bool = False,
    cli: tuple[str, ...] = (),
    view: str | None = None,
    grouped: RecordModel | None = None,
) -> ToolSpec:
    """A GET row of either backend: a list (`many`) is paged by the one rule, `paging`; a list
    of wide records (`selectable`) also takes `fields`."""
    params = (*paging(agent_page), *filters) if many else filters
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        method="GET",
        path=path,
        params=(*params, FIELDS) if selectable else params,
        returns=returns,
        many=many,
        backend=backend,
        access=access,
        cli=cli,
        view=view,
        grouped=grouped,
    )
