"""Text from a backend or a config file, made safe to show a terminal or an agent.

A hostile or broken backend's error message or cursor could otherwise carry escape sequences
(retitle the terminal, clear the screen, forge an "all good" line) or bidi controls that reorder
what is read. The text is kept, only shown escaped: `\\x1b`, `\\x85`, `\\u202e`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_LINE_SEPARATORS = "\u2028\u2029"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_LINE_SEPARATORS}]")
_UNSAFE_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_LINE_SEPARATORS}]")
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{_BIDI}{_LINE_SEPARATORS}]")
"""What `json.dumps(ensure_ascii=False)` writes raw: it escapes only C0 itself."""


def visible(text: str, *, keep_layout: bool = False) -> str:
    """`text` with C0 (newline and tab too, unless `keep_layout`), DEL, C1, bidi and line
    separator controls escaped as Python writes them."""
    pattern = _UNSAFE_BUT_LAYOUT if keep_layout else _UNSAFE
    return pattern.sub(_python_escape, text)


def safe_json(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON (UTF-8 text kept readable) with DEL, C1, bidi and line separators written
    as `\\uXXXX`: the same data for a JSON reader, inert on a terminal. A number JSON cannot hold
    (a backend's `1e999` or `NaN`) is written `null`, as JavaScript's JSON.stringify does."""
    separators = None if indent is not None else (",", ":")
    try:
        text = json.dumps(
            value, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False
        )
    except ValueError:  # only then is the value walked
        text = json.dumps(_finite(value), ensure_ascii=False, indent=indent, separators=separators)
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _finite(value: Any) -> Any:
    """`value` with every infinite or NaN float replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _python_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
