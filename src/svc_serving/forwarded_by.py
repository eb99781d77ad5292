"""Who a call is forwarded for: the header the gateway sets on its calls to the data service,
naming the signed-in person (their subject as the gateway's access line shows it), and how the
service reads it back. The service records it only from a caller that proved its token, the
gateway; anyone else's is ignored."""

from __future__ import annotations

from urllib.parse import quote, unquote

HEADER = "X-Svc-Forwarded-By"
MAX_CHARS = 128


def encoded(person: str) -> str:
    """`person` as a header carries it (percent-encoded UTF-8: a shown subject may hold `…`)."""
    return quote(person[:MAX_CHARS], safe="@._-:+")


def decoded(value: str | None) -> str | None:
    """The person the header names, or None for one absent, too long or not printable."""
    if not value or len(value) > 3 * MAX_CHARS:
        return None
    person = unquote(value, errors="strict") if value.isascii() else ""
    return person if person and len(person) <= MAX_CHARS and person.isprintable() else None
