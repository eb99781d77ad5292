"""No MCP result's text over `MAX_RESULT_CHARS`, whatever `limit` says (DESIGN.md section 4);
`svc_mcp.core.results.within_bound` cuts a page, this module makes and reads its cursors.

A page whose text would be larger is cut short at a record boundary, never inside one, and its
`next_cursor` is one of ours: the backend's cursor of that page and how many of its records were
already given. Passed back, the same backend page is asked for again and those records skipped, so
paging to the end visits every record exactly once.
"""

from __future__ import annotations

import base64
import binascii
import json

MAX_RESULT_CHARS = 24_000
"""Below the tool-result caps of common hosts (25,000 tokens, about 8x more, is a usual one)."""
MARK_ROOM_CHARS = 512
"""Kept free below MAX_RESULT_CHARS for the marker of third-party text the MCP face puts first
(svc_mcp.serve.untrusted), which is added after a page is cut."""
PAGE_CHARS = MAX_RESULT_CHARS - MARK_ROOM_CHARS
_PREFIX = "part."


def part_cursor(page_cursor: str | None, given: int) -> str:
    """Our cursor for the rest of a page: the backend's `page_cursor` and the records given."""
    packed = json.dumps([page_cursor, given], separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(packed).decode().rstrip("=")


def read_part_cursor(cursor: str) -> tuple[str | None, int] | None:
    """The backend's cursor and the records to skip, or None for a backend's own cursor."""
    if not cursor.startswith(_PREFIX):
        return None
    text = cursor[len(_PREFIX) :]
    try:
        page_cursor, given = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error, TypeError):
        return None
    if not (page_cursor is None or isinstance(page_cursor, str)) or not isinstance(given, int):
        return None
    return page_cursor, max(given, 0)
