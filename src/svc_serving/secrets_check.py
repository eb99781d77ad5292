"""Refusing secrets anyone could guess: a token or key of one character repeated, or of one short
pattern repeated, is long enough for a length check and still no secret."""

from __future__ import annotations

MIN_DISTINCT_CHARACTERS = 8
MAKE_ONE = 'python3 -c "import secrets; print(secrets.token_urlsafe(32))"'


def guessable(secret: str) -> str | None:
    """Why `secret` could be guessed (to follow its name in a message), or None. The reason
    never quotes the secret."""
    distinct = len(set(secret))
    if distinct < MIN_DISTINCT_CHARACTERS:
        return (
            f"has only {distinct} distinct characters, so it could be guessed; make a random "
            f"one with: {MAKE_ONE}"
        )
    if (secret + secret).find(secret, 1) < len(secret):
        return (
            "is one short pattern repeated, so it could be guessed; make a random one with: "
            + MAKE_ONE
        )
    return None
