"""The start-up line is written in one place and read in others (doctor's report, its ok or warn):
every line the writer makes is read back as what it says, so the two cannot part."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc_mcp.serve.confinement import GATEWAY, STDIO, line_in, says_confined
from svc_serving import confine as confinement
from svc_serving.confine import Policy, confine
from svc_serving.confine_line import CONFINED, REFUSED, UNCONFINED, outcome_of
from tests.confinement.test_settings import SETTING, no_landlock


@pytest.fixture(params=[STDIO, GATEWAY])
def policy(request: pytest.FixtureRequest) -> Policy:
    return Policy(process=request.param, writes=(Path("/srv/db"),), connect_ports=(8080,))


def test_the_confined_line_reads_as_confined(policy: Policy) -> None:
    line = confinement.describe(policy, 3)
    assert outcome_of(line, [policy.process]) == CONFINED
    assert line_in(f"{policy.process}: serving\n{line}\n") == line
    assert says_confined(line)


@pytest.mark.parametrize("setting", ["off", ""])
def test_an_unconfined_line_reads_as_unconfined(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, setting: str
) -> None:
    monkeypatch.setattr(confinement, "restrict", no_landlock)
    monkeypatch.setenv(SETTING, setting)
    line = confine(policy, SETTING)
    assert outcome_of(line, [policy.process]) == UNCONFINED
    assert line_in(line) == line
    assert not says_confined(line)


def test_a_refusal_reads_as_a_refusal(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(confinement, "restrict", no_landlock)
    monkeypatch.setenv(SETTING, "require")
    with pytest.raises(SystemExit):
        confine(policy, SETTING)
    line = capsys.readouterr().err.strip()
    assert outcome_of(line, [policy.process]) == REFUSED
    assert not says_confined(line)


@pytest.mark.parametrize(
    "line",
    [
        "svc-mcp: serving MCP at http://127.0.0.1:8765/mcp",
        "svc-mcp: confinedness",
        "svc-stub portal: confined (Landlock ABI 3, no_new_privs, seccomp): writes: none",
        "svc-mcp --http: unconfinedx",
    ],
)
def test_other_lines_read_as_none(line: str) -> None:
    assert line_in(line) is None
    assert not says_confined(line)
