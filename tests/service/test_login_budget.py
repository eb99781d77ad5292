"""How many addresses it takes to close dashboard logins for everyone (security round four,
finding 7, documented in the Security notes): the spec's 60 login POSTs a rolling minute for all
addresses together, at most 10 of them from one address, so 6 addresses; for at most a minute
after their last attempt. The spec's promise (never more than 60 a minute) holds for every
address, one that signed in a moment ago included."""

from __future__ import annotations

from server_stub.service.guard import (
    LOGIN_FLOOD_LIMIT,
    LOGIN_FLOOD_WINDOW_SECONDS,
    LOGIN_LIMIT_PER_ADDRESS,
    LoginFloodLimit,
)
from tests.service.conftest import FakeClock

ADDRESSES_TO_CLOSE = -(-LOGIN_FLOOD_LIMIT // LOGIN_LIMIT_PER_ADDRESS)


def spend(flood: LoginFloodLimit, addresses: int) -> None:
    for n in range(addresses):
        for _ in range(LOGIN_LIMIT_PER_ADDRESS):
            assert flood.admit(f"192.0.2.{n + 1}") is None


def test_six_addresses_close_logins_for_a_minute() -> None:
    assert ADDRESSES_TO_CLOSE == 6
    clock = FakeClock()
    flood = LoginFloodLimit(clock)
    spend(flood, ADDRESSES_TO_CLOSE - 1)
    assert flood.admit("198.51.100.7") is None, "one address fewer leaves logins open"
    clock.advance(LOGIN_FLOOD_WINDOW_SECONDS)
    spend(flood, ADDRESSES_TO_CLOSE)
    refused = flood.admit("198.51.100.7")
    assert refused is not None
    assert not refused.by_address
    assert refused.retry_after <= LOGIN_FLOOD_WINDOW_SECONDS
    clock.advance(refused.retry_after)
    assert flood.admit("198.51.100.7") is None, "logins reopen as the oldest attempt ages out"


def test_no_address_passes_the_global_limit() -> None:
    """Letting a recently successful address past the 60 would break the spec's promise, so it
    is not done (docs/decisions.md)."""
    clock = FakeClock()
    flood = LoginFloodLimit(clock)
    assert flood.admit("198.51.100.7") is None  # signed in a moment ago
    spend(flood, ADDRESSES_TO_CLOSE - 1)
    for _ in range(LOGIN_FLOOD_LIMIT - 1 - (ADDRESSES_TO_CLOSE - 1) * LOGIN_LIMIT_PER_ADDRESS):
        assert flood.admit("203.0.113.9") is None
    refused = flood.admit("198.51.100.7")
    assert refused is not None
    assert not refused.by_address
