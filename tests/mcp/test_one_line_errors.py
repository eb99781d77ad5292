"""`svc-portal` reports a mistyped command or option as svc-mcp does: one line
`<prog>: usage: <message> (see <command> --help)`, exit 2, with click's suggestion (issue 35)."""

from __future__ import annotations

import subprocess

import pytest

from tests.mcp.conftest import SVC_MCP, SVC_PORTAL, process_env


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), env=process_env({}), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            [SVC_PORTAL, "catalog", "lst"],
            "svc-portal: usage: No such command 'lst'. Did you mean 'list'? "
            "(see svc-portal catalog --help)",
        ),
        (
            [SVC_PORTAL, "catalog", "list", "--limt", "3"],
            "svc-portal: usage: No such option: --limt (Possible options: --limit) "
            "(see svc-portal catalog list --help)",
        ),
        (
            [SVC_MCP, "portal", "catalog", "lst"],
            "svc-mcp portal: usage: No such command 'lst'. Did you mean 'list'? "
            "(see svc-mcp portal catalog --help)",
        ),
    ],
)
def test_a_mistyped_word_is_one_line(args: list[str], line: str) -> None:
    done = run(*args)
    assert (done.returncode, done.stderr.splitlines(), done.stdout) == (2, [line], "")


def test_no_arguments_still_show_the_help() -> None:
    done = run(SVC_PORTAL)
    assert "Usage: svc-portal" in done.stdout + done.stderr
    assert "catalog" in done.stdout + done.stderr
