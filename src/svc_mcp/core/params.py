"""A tool parameter, `Param`: its JSON schema, the check of a value an MCP client sent, and the
parsing of a value typed on a command line all come from it.

Only the standard library is imported here, so that parsing a command line never loads pydantic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from svc_mcp.core.errors import InvalidArgument

ParamType = Literal["string", "integer", "object", "array"]
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
    named_only: bool = False
    """The choices are neither an `enum` nor listed in the description, which names them
    briefly; a wrong value is told them all. A blank value is not given. For a parameter the
    tool list has no room to spell out."""

    @property
    def blank_is_absent(self) -> bool:
        """A free text (a filter or the cursor) or a list (`fields`) sent blank is not given."""
        return self.json_type in ("string", "array") and (not self.choices or self.named_only)

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
        if self.choices and not self.named_only:
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
        if self.choices and not self.named_only:
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
