"""Durations as operators type them: `90s`, `30m`, `8h`, `7d`."""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_PATTERN = re.compile(r"^(\d{1,6})([smhd])$")


def parse_duration(text: str) -> timedelta:
    match = _PATTERN.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a duration like 90s, 30m, 8h or 7d")
    amount, unit = match.groups()
    return timedelta(**{_UNITS[unit]: int(amount)})
