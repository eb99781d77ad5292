"""What one row of the tool table declares (DESIGN section 2).

A `ToolSpec` holds everything the adapters need: the MCP server (title, description, input and
output schemas, annotations), the CLIs (`svc-mcp <tool>`, `svc-portal <group> <command>`),
`svc-mcp tools`, and the contract tests. Adding a tool is adding a row.

Only the standard library is imported here, so that listing tools stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

    from portal_tools.client import Connection

ParamType = Literal["string", "integer", "object"]


@dataclass(frozen=True)
class Param:
    """One query parameter of a tool; `None` (not given) means the server's default."""

    name: str
    json_type: ParamType
    description: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    schema: dict[str, Any] | None = None
    """A JSON schema for an object parameter; the CLI reads one from `--file PATH|-`."""

    @property
    def python_type(self) -> type:
        return {"integer": int, "string": str, "object": dict}[self.json_type]

    @property
    def option(self) -> str:
        """The CLI option, e.g. `--limit`; an object parameter is read from `--file`."""
        return "--file" if self.json_type == "object" else "--" + self.name.replace("_", "-")

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.json_type, "description": self.description}
        if self.schema is not None:
            schema = {**self.schema, "description": self.description}
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema


@dataclass(frozen=True)
class Hints:
    """The MCP tool annotations (hints for clients, not guarantees)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def annotations(self) -> dict[str, bool]:
        """In the wire spelling of MCP's `ToolAnnotations`."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READ_ONLY = Hints(read_only=True, destructive=False, idempotent=True, open_world=False)
"""A read of one known service: changes nothing, safe to repeat, a closed world."""


@dataclass(frozen=True)
class Backend:
    """An HTTP API speaking the envelope of DESIGN section 4.

    `connect` reads the environment each time it is called, so a token or base URL changed
    between two calls is picked up by the second.
    """

    name: str
    connect: Callable[[], Connection]


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
    returns: type[BaseModel]
    many: bool
    """True: `data` is a list of `returns` (paged with limit/cursor); False: one object."""
    backend: Backend
    access: str
    """Who may call it, as an error message completes "it needs ..."."""
    cli: tuple[str, ...]
    """The `svc-portal` command path, e.g. ("identity", "credential", "revokes")."""
    toolset: str
    hints: Hints = READ_ONLY
    body: str | None = None
    precheck: Callable[[dict[str, Any]], None] | None = None
    """Checks the arguments before anything is sent; raises `BadRequest` with what to fix."""
    transport_retries: int = 0
    """Resends after a connection failure; only for rows whose request is idempotent."""

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {param.name: param.json_schema() for param in self.params},
            "additionalProperties": False,
        }
        required = [param.name for param in self.params if param.required]
        if required:
            schema["required"] = required
        return schema
