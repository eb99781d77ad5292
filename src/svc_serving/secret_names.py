"""The one rule for which names hold secrets: one word list, read two ways.

A name *names a secret* when it ends with a secret word (`token`, `tokenHash`, `api_key`,
`sig`): a record carrying such a field is refused, not passed on. A name *mentions a secret* when
a secret word occurs anywhere in it (`auth_required`, `credentialId`, `token_file`): a span never
records the value under such a name. Refusing is the stronger act, so it takes the narrower
reading: records carry `auth_required` and `credentialId`, which are about secrets, not secrets.
"""

from __future__ import annotations

import re

SECRET_WORDS = (
    "token",
    "hash",
    "secret",
    "password",
    "passwd",
    "cookie",
    "key",
    "sig",
    "signature",
    "auth",
    "authorization",
    "credential",
    "credentials",
)
_WORDS = "|".join(SECRET_WORDS)
_ENDS_WITH_SECRET = re.compile(rf"(?:{_WORDS})$", re.IGNORECASE)
_MENTIONS_SECRET = re.compile(_WORDS, re.IGNORECASE)


def names_secret(name: str) -> bool:
    """The name says its value is a secret (it ends with a secret word)."""
    return _ENDS_WITH_SECRET.search(name) is not None


def mentions_secret(name: str) -> bool:
    """A secret word occurs in the name: its value may be, or reveal, a secret."""
    return _MENTIONS_SECRET.search(name) is not None
