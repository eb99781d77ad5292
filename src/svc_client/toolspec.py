"""What one row of the tool table declares, for the portal and the data service alike.

A `ToolSpec` holds everything the adapters need: the MCP server (title, description, input and
output schemas, annotations), the CLIs (`svc-mcp <tool>`, `svc-portal <group> <command>`),
`svc-mcp tools`, and the contract tests. Adding a tool is adding a row.

A `Param` is the one model of a tool parameter: its JSON schema, the check of a value an MCP
client sent, and the parsing of a value typed on a command line all come from it.

Only the standard library is imported here, and a row refers to its record model lazily (a
function returning it, over a `lazy_module`), so that listing tools and parsing a command line
never load pydantic, while the type checker still sees each reference.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Literal

from svc_client.errors import InvalidArgument

if TYPE_CHECKING:
    from pydantic import BaseModel

    from svc_client.backends import Backend, Toolset

ParamType = Literal["string", "integer", "object", "array"]
RecordModel = Callable[[], "type[BaseModel]"]
"""A row's record model, imported only when a schema or a check needs it."""
TimeFormat = Literal["date-time", "date"]
_TIME_EXAMPLES: dict[TimeFormat, str] = {
    "date-time": "an ISO 8601 time such as 2025-06-30T14:00:00Z",
    "date": "a date such as 2025-06-30",
}
MAX_TEXT_CHARS = 1024
"""The longest text argument: filters are identifiers, times and names."""
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}")


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` or `null`, spelled so that every common agent framework keeps it optional
    (see `Param.json_schema`)."""
    return {"anyOf": [schema, {"type": "null"}], "nullable": True}


@dataclass(frozen=True)
class Param:
    """One parameter of a tool; `None` (not given) means the server's default."""

    name: str
    json_type: ParamType
    description: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    default: int | None = None
    """What an MCP call uses when the argument is left out (the CLI leaves it to the server)."""
    shape: Mapping[str, Any] | None = field(default=None, compare=False)
    """More of an object parameter's JSON schema: its declared fields."""
    cli_help: str = ""
    """The CLI's help where the description leaves to another parameter what it needs to say
    (the tool list pays for every word of a description, the CLI's help does not)."""
    time_format: TimeFormat | None = None
    """A time: a malformed one is refused here, never sent (the schema leaves the format to
    the description: the tool list has no room for it)."""

    @property
    def blank_is_absent(self) -> bool:
        """A free text (a filter or the cursor) or a list (`fields`) sent blank is not given."""
        return self.json_type in ("string", "array") and not self.choices

    @property
    def neutral(self) -> bool:
        """Whether a model can send a value that changes nothing once a strict converter makes
        the parameter required: a blank text or list, or a page size (`limit` has a default)."""
        return self.blank_is_absent or self.default is not None

    @property
    def help(self) -> str:
        """The CLI's help text: its own, the description, or what the schema allows."""
        if self.cli_help or self.description:
            return self.cli_help or self.description
        if self.name == "cursor":
            return "next_cursor of the previous page"
        if self.json_type == "array":
            return "only these fields of each record"
        if self.maximum is not None:
            return f"from {self.minimum} to {self.maximum}"
        return f"only records with this {self.name}"

    @property
    def metavar(self) -> str:
        """How CLI help shows the value."""
        if self.choices:
            return "{" + ",".join(self.choices) + "}"
        return {"array": "NAME,...", "object": "PATH|-"}.get(self.json_type, self.json_type.upper())

    @property
    def option(self) -> str:
        """The CLI option, e.g. `--limit`; an object parameter is read from `--file`."""
        return "--file" if self.json_type == "object" else "--" + self.name.replace("_", "-")

    def json_schema(self) -> dict[str, Any]:
        """The parameter as agent frameworks read it; docs/decisions.md says why this spelling.

        An optional parameter is `nullable`, the only mark that keeps smolagents from making it
        required. Strict converters (OpenAI's, LangChain's) make every parameter required: one
        that is `neutral` then still gets a value that changes nothing, any other (a choice)
        also admits `null` as an `anyOf` branch, the spelling that survives them and Google's
        OpenAPI subset. The allowed values are said in the description as well as the `enum`,
        which some converters drop; a range only there (converters drop range keywords, and
        every list tool would pay for them in an agent's context)."""
        value: dict[str, Any] = {"type": self.json_type, **(self.shape or {})}
        if self.json_type == "array":
            value["items"] = {"type": "string"}
        if self.choices:
            value["enum"] = list(self.choices)
        if self.required:
            schema = value
        elif self.neutral:
            schema = {**value, "nullable": True}
        else:
            schema = nullable(value)
        if description := self.model_description:
            schema["description"] = description
        return schema

    @property
    def model_description(self) -> str:
        """The description, then the allowed values and range. Not the default: a page size,
        and every answer says when more records remain."""
        said = [self.description] if self.description else []
        if self.choices:
            said.append(f"{', '.join(self.choices[:-1])} or {self.choices[-1]}.")
        if self.maximum is not None:
            said.append(f"{self.minimum}-{self.maximum}.")
        return " ".join(said)

    def check(self, value: object) -> object:
        """`value` as sent by a client, checked against the schema; `InvalidArgument` says
        what is allowed. A whole number sent as text is accepted (some clients send every
        argument as a string)."""
        if self.json_type == "integer":
            return self._check_integer(value)
        if self.json_type == "object":
            if not isinstance(value, dict):
                raise self._invalid("must be a JSON object")
            return value
        if self.json_type == "array":
            return self._check_names(value)
        if not isinstance(value, str):
            raise self._invalid("must be a string")
        if self.choices and value not in self.choices:
            # The value is not echoed: it may be a token pasted into the wrong place.
            raise self._invalid(f"must be one of {', '.join(self.choices)}")
        if len(value) > MAX_TEXT_CHARS:
            raise self._invalid(f"is {len(value):,} characters; at most {MAX_TEXT_CHARS:,}")
        if self.time_format is not None and not _is_time(value, self.time_format):
            raise self._invalid(f"must be {_TIME_EXAMPLES[self.time_format]}")
        return value

    def parse(self, text: str) -> object:
        """A value typed on a command line, before `check`: a list is typed as `a,b,c`."""
        return text.split(",") if self.json_type == "array" else text

    def _check_names(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(isinstance(i, str) for i in value):
            raise self._invalid("must be a list of names")
        names = tuple(dict.fromkeys(item.strip() for item in value if item.strip()))
        if not names or sum(map(len, names)) > MAX_TEXT_CHARS:
            raise self._invalid(f"must name at least one field in {MAX_TEXT_CHARS:,} characters")
        return names

    def _check_integer(self, value: object) -> int:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value.strip()):
            number = int(value.strip())
        if number is None:
            raise self._invalid(f"must be a whole number{self._range()}")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise self._invalid(f"must be{self._range()}, not {number}")
        return number

    def _range(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f" from {self.minimum} to {self.maximum}"
        return ""

    def _invalid(self, problem: str) -> InvalidArgument:
        return InvalidArgument(f"{self.name} {problem}", hint=self.name)


def _is_time(value: str, time_format: TimeFormat) -> bool:
    try:
        if time_format == "date":
            return len(value) == len("YYYY-MM-DD") and bool(date.fromisoformat(value))
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


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


def paging(agent_page: int) -> tuple[Param, Param]:
    """The one paging rule of both backends: `limit` and an opaque `cursor`; when more remain the
    answer carries `next_cursor`."""
    limit = Param("limit", "integer", "", minimum=1, maximum=1000, default=agent_page)
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
    """The MCP Apps view that shows the result to a person (a name in `svc_mcp.views`)."""

    @property
    def toolset(self) -> Toolset:
        return self.backend.toolset

    @property
    def selectable(self) -> bool:
        """Whether the call may pick fields of each record (`fields`)."""
        return any(param.name == FIELDS.name for param in self.params)

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


def lazy_module(name: str) -> Any:
    """A stand-in for the module `name`, imported on first attribute access. Bound under
    `if not TYPE_CHECKING`, beside a real import for the type checker, so that
    `lambda: models.Record` is checked and costs nothing until it runs."""
    return _LazyModule(name)


class _LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


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
    )
