"""The access lines of one round of the event loop go out in one write, once the round ends;
outside a loop each line goes out at once."""

from __future__ import annotations

import asyncio
import io

import pytest

from server_stub import access_log


class Recorder(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)


def test_the_lines_of_one_round_are_one_write_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = Recorder()
    monkeypatch.setattr("sys.stderr", stderr)

    async def three_responses() -> list[str]:
        for number in range(3):
            access_log.write_line(f"line {number}")
        written_during_the_round = list(stderr.writes)
        await asyncio.sleep(0)  # the round ends
        await asyncio.sleep(0)
        return written_during_the_round

    assert asyncio.run(three_responses()) == []
    assert stderr.writes == ["line 0\nline 1\nline 2\n"]


def test_outside_a_loop_a_line_is_written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = Recorder()
    monkeypatch.setattr("sys.stderr", stderr)
    access_log.write_line("alone")
    assert stderr.writes == ["alone\n"]
