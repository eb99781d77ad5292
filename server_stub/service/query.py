"""Strict reading of query parameters: unknown, repeated or malformed ones are a 400 envelope."""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import UTC, date, datetime

from starlette.requests import Request

from server_stub.http import ApiError, PageRequest, parse_page
from server_stub.service.db import TimeRange
from server_stub.service.schema import TIMESTAMP_FORMAT

PAGING = ("limit", "cursor")
SYMBOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,15}")
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
MAX_TIMESTAMP_LENGTH = 40


def bad_request(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


class QueryReader:
    def __init__(self, request: Request, allowed: Collection[str]) -> None:
        self._request = request
        self._values: dict[str, str] = {}
        if not request.scope.get("query_string"):
            return
        for key, value in request.query_params.multi_items():
            if key not in allowed:
                accepted = ", ".join(sorted(allowed)) or "none"
                shown = key if len(key) <= 40 else key[:40] + "..."
                raise bad_request(f"unknown query parameter {shown!r}; accepted: {accepted}")
            if key in self._values:
                raise bad_request(f"query parameter {key!r} given more than once")
            self._values[key] = value

    def page(self) -> PageRequest:
        return parse_page(self._request)

    def text(self, name: str, pattern: re.Pattern[str], what: str) -> str | None:
        value = self._values.get(name)
        if value is None:
            return None
        if not pattern.fullmatch(value):
            raise bad_request(f"{name} must be {what}")
        return value

    def symbol(self) -> str | None:
        value = self.text("symbol", SYMBOL, "a ticker symbol such as AAPL (1-16 characters)")
        return value.upper() if value is not None else None

    def choice(self, name: str, options: Collection[str]) -> str | None:
        value = self._values.get(name)
        if value is not None and value not in options:
            raise bad_request(f"{name} must be one of: {', '.join(options)}")
        return value

    def time_range(self) -> TimeRange:
        """`since` (inclusive) and `until` (exclusive), ISO 8601; no offset means UTC."""
        since = self._moment("since")
        until = self._moment("until")
        if since is not None and until is not None and until <= since:
            raise bad_request("until must be later than since")
        return TimeRange(
            since.strftime(TIMESTAMP_FORMAT) if since else None,
            until.strftime(TIMESTAMP_FORMAT) if until else None,
        )

    def date_range(self) -> TimeRange:
        """`since` (inclusive) and `until` (exclusive) as dates YYYY-MM-DD."""
        since = self._date("since")
        until = self._date("until")
        if since is not None and until is not None and until <= since:
            raise bad_request("until must be later than since")
        return TimeRange(since.isoformat() if since else None, until.isoformat() if until else None)

    def _moment(self, name: str) -> datetime | None:
        value = self._values.get(name)
        if value is None:
            return None
        invalid = bad_request(f"{name} must be an ISO 8601 time such as 2025-06-30T14:00:00Z")
        if len(value) > MAX_TIMESTAMP_LENGTH:
            raise invalid
        try:
            moment = datetime.fromisoformat(value)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC)
        except (ValueError, OverflowError):
            raise invalid from None

    def _date(self, name: str) -> date | None:
        value = self._values.get(name)
        if value is None:
            return None
        try:
            if len(value) != len("YYYY-MM-DD"):
                raise ValueError(value)
            return date.fromisoformat(value)
        except ValueError:
            raise bad_request(f"{name} must be a date such as 2025-06-30") from None
