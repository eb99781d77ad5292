"""The request id an access line carries when the caller sent none: random, never repeated, and
drawn from the kernel in batches (one system call per `NEW_IDS_PER_DRAW` requests)."""

from __future__ import annotations

import os
import re

import pytest

from server_stub import telemetry

NO_CALLER_ID: dict[str, object] = {"headers": [(b"host", b"127.0.0.1")]}


def test_new_ids_are_sixteen_hex_digits_never_repeated_across_draws() -> None:
    ids = [telemetry.request_id(NO_CALLER_ID) for _ in range(3 * telemetry.NEW_IDS_PER_DRAW + 5)]
    assert all(re.fullmatch("[0-9a-f]{16}", new_id) for new_id in ids)
    assert len(set(ids)) == len(ids)


def test_one_draw_from_the_kernel_serves_many_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    draws: list[int] = []
    urandom = os.urandom

    def counted_urandom(size: int) -> bytes:
        draws.append(size)
        return urandom(size)

    monkeypatch.setattr(telemetry, "_new_ids", [])
    monkeypatch.setattr(telemetry.os, "urandom", counted_urandom)
    for _ in range(telemetry.NEW_IDS_PER_DRAW + 1):
        telemetry.request_id(NO_CALLER_ID)
    assert draws == [8 * telemetry.NEW_IDS_PER_DRAW] * 2


@pytest.mark.e2e
def test_a_forked_child_draws_ids_of_its_own() -> None:
    telemetry.new_request_id()  # the parent holds undrawn ids
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.write(write_end, "".join(telemetry.new_request_id() for _ in range(8)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child_ids = set(re.findall("[0-9a-f]{16}", pipe.read()))
    os.waitpid(child, 0)
    parent_ids = {telemetry.new_request_id() for _ in range(telemetry.NEW_IDS_PER_DRAW)}
    assert len(child_ids) == 8
    assert not child_ids & parent_ids
