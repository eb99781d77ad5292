"""`fields`: the names a call may pick of each record, checked before anything is sent."""

from __future__ import annotations

import difflib
import re

from svc_mcp.core.errors import InvalidArgument
from svc_mcp.core.toolspec import FIELDS, ToolSpec


def known_fields(spec: ToolSpec, names: object) -> tuple[str, ...]:
    """`names` when each is a field of the row's records (as the output schema spells them)."""
    assert isinstance(names, tuple)
    known = record_fields(spec)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InvalidArgument(f"fields: {_unknown(unknown, known)}", hint=FIELDS.name)
    return names


_FIELD_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")


def _unknown(unknown: list[str], known: tuple[str, ...]) -> str:
    """What is wrong with the names: a mistyped field (a short identifier close to a field's
    name) is named with that field; any other name is counted, not echoed, as it may be a token
    pasted into the wrong place."""
    named = []
    for name in unknown:
        near = difflib.get_close_matches(name, known, n=1) if _FIELD_LIKE.fullmatch(name) else []
        if near:
            named.append(f"{name!r} is not a field of these records (did you mean {near[0]!r}?)")
    hidden = len(unknown) - len(named)
    fields = ", ".join(known)
    if not named:
        return f"{hidden} of the names given are not fields of these records, which have {fields}"
    others = f"; {hidden} other name(s) given are not fields either" if hidden else ""
    return f"{'; '.join(named)}{others}; the fields are {fields}"


def record_fields(spec: ToolSpec) -> tuple[str, ...]:
    """The field names of the row's record, as the wire spells them."""
    fields = spec.record_model().model_fields
    return tuple(info.alias or name for name, info in fields.items())
