"""One person's subordinate uids (rootless containers: /etc/subuid, `owner:first:count`) count as
that person, not as 65,536 local users (docs/decisions.md, "A subordinate uid is its owner").

The file is read once, when a server starts (before it confines itself, after which it could not
read it); SVC_SUBUID_FILE names another file (the tests' temporary one). An unreadable or missing
file folds nothing; a line that is not `owner:first:count` is skipped; an owner named by a login
name that does not exist here is skipped too.
"""

from __future__ import annotations

import bisect
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SUBUID_VARIABLE = "SVC_SUBUID_FILE"
DEFAULT_SUBUID_FILE = "/etc/subuid"
_MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class SubordinateUids:
    """Ranges sorted by their first uid: (first, end, owner), `end` excluded."""

    ranges: tuple[tuple[int, int, int], ...] = ()

    def owner(self, uid: int) -> int:
        """The uid that owns `uid` as a subordinate one, or `uid` itself."""
        at = bisect.bisect_right(self.ranges, uid, key=_first) - 1
        if at >= 0:
            first, end, owner = self.ranges[at]
            if first <= uid < end:
                return owner
        return uid


def parse(text: str) -> SubordinateUids:
    ranges = []
    for line in text.splitlines():
        fields = line.strip().split(":")
        if len(fields) != 3 or not all(f.isascii() and f.isdigit() for f in fields[1:]):
            continue
        owner = _uid(fields[0])
        first, count = int(fields[1]), int(fields[2])
        if owner is not None and count > 0:
            ranges.append((first, first + count, owner))
    return SubordinateUids(tuple(sorted(ranges)))


def load(environ: Mapping[str, str] = os.environ) -> SubordinateUids:
    path = Path(environ.get(SUBUID_VARIABLE, "").strip() or DEFAULT_SUBUID_FILE)
    try:
        with path.open("rb") as file:
            text = file.read(_MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return SubordinateUids()
    return parse(text)


def _uid(owner: str) -> int | None:
    if owner.isascii() and owner.isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except (KeyError, UnicodeError):
        return None


def _first(entry: tuple[int, int, int]) -> int:
    return entry[0]
