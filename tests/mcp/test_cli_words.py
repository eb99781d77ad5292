"""The user's own words on the real `svc-mcp` console script: a malformed time, number or choice
is refused before anything is sent; `--json` is accepted by every tool command; a mistyped tool
name gets "did you mean"; a gateway port in use is `misconfigured`, with no "serving" line; help
is Click's plain text on a terminal and when piped (unwrapped then)."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import socket
import subprocess
from collections.abc import Iterator

import pytest

from svc_mcp.hosts.table import hosts_help
from tests.mcp.conftest import (
    SVC_MCP,
    SVC_PORTAL,
    SVC_STUB,
    process_env,
    run_command,
    run_commands,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def listener() -> Iterator[tuple[str, socket.socket]]:
    """A loopback socket that accepts nothing: any request sent to it waits in its backlog."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", sock


def _nothing_arrived(sock: socket.socket) -> bool:
    try:
        connection, _ = sock.accept()
    except BlockingIOError:
        return True
    connection.close()
    return False


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["get_orders", "--since", "yesterday"], "since must be an ISO 8601 time such as"),
        (["get_fills", "--until", "2025-13-01T00:00:00"], "until must be an ISO 8601 time"),
        (["get_pnl", "--since", "2025-06-30T10:00:00"], "since must be a date such as"),
        (["get_orders", "--limit", "abc"], "limit must be"),
        (["get_orders", "--side", "sideways"], "side must be one of buy, sell"),
    ],
)
def test_a_malformed_value_is_invalid_argument_and_nothing_is_sent(
    listener: tuple[str, socket.socket], args: list[str], said: str
) -> None:
    base, sock = listener
    done = run_command([SVC_MCP, *args], {"SERVICE_API_BASE": base})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("svc-mcp: invalid_argument: "), done.stderr
    assert said in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert _nothing_arrived(sock)


def test_json_is_accepted_by_tool_commands_and_a_typo_gets_did_you_mean() -> None:
    closed = "http://127.0.0.1:9"
    system, typo, mounted, portal = run_commands(
        [
            ([SVC_MCP, "get_system", "--json"], {"SERVICE_API_BASE": closed}),
            ([SVC_MCP, "get_systm"], {}),
            ([SVC_MCP, "portal", "identity", "whoami", "--json"], {"PORTAL_API_BASE": closed}),
            ([SVC_PORTAL, "catalog", "list", "--json"], {"PORTAL_API_BASE": closed}),
        ]
    )
    for accepted in (system, mounted, portal):
        # unreachable: the option itself was accepted
        assert accepted.returncode == 8, accepted.stderr
        assert "usage" not in accepted.stderr
    assert typo.returncode == 2
    assert typo.stderr.splitlines() == [
        "svc-mcp: usage: no command or tool 'get_systm'; did you mean get_system? "
        "(svc-mcp tools lists the tools) (see svc-mcp --help)"
    ]


def test_a_gateway_port_in_use_is_misconfigured_without_a_serving_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_command([SVC_MCP, "--http", "--port", str(port)], {})
    assert done.returncode == 2
    assert "serving" not in done.stderr
    assert done.stderr.splitlines() == [
        f"svc-mcp: misconfigured: cannot listen on 127.0.0.1 port {port} (Address already in "
        "use): another program may be using it; pass another --port, or stop that program"
    ]


def test_help_piped_is_plain_and_unwrapped() -> None:
    commands = [
        [SVC_MCP, "install", "--help"],
        [SVC_MCP, "doctor", "--help"],
        [SVC_MCP, "--help"],
        [SVC_MCP, "tools", "--help"],
        [SVC_MCP, "portal", "--help"],
        [SVC_PORTAL, "--help"],
        [SVC_MCP, "get_orders", "--help"],
        [SVC_MCP, "submit_intel", "--help"],
        [SVC_STUB, "intel", "sign", "--help"],
    ]
    done = run_commands([(command, {}) for command in commands])
    for command, result in zip(commands, done, strict=True):
        assert result.returncode == 0, (command, result.stderr)
        assert "<bool>" not in result.stdout, command
        assert not {"╭", "│"} & set(result.stdout), command
        assert "analytics" not in result.stdout, command  # the toolset's former name
    install = done[0].stdout
    assert "--source <here|pypi|github|local>" in install
    assert hosts_help() in install  # on one line: nothing wrapped mid-word
    assert "--toolsets portal,service" in done[1].stdout
    assert "svc-portal" not in done[4].stdout
    assert "svc-stub intel sign --file draft.json" in done[7].stdout


COMMAND_LINES = {
    # command line: (its words, an option it requires or None)
    "svc-mcp": ([SVC_MCP], None),
    "svc-mcp demo": ([SVC_MCP, "demo"], None),
    "svc-mcp submit_intel": ([SVC_MCP, "submit_intel"], "--file"),
    "svc-mcp install": ([SVC_MCP, "install"], "--client"),
    "svc-mcp uninstall": ([SVC_MCP, "uninstall"], "--client"),
    "svc-mcp doctor": ([SVC_MCP, "doctor"], None),
    "svc-portal": ([SVC_PORTAL], None),
    "svc-portal catalog list": ([SVC_PORTAL, "catalog", "list"], None),
    "svc-stub": ([SVC_STUB], None),
    "svc-stub admin": ([SVC_STUB, "admin"], None),
    "svc-stub intel sign": ([SVC_STUB, "intel", "sign"], "--file"),
    "svc-stub admin service pause": ([SVC_STUB, "admin", "service", "pause"], "--db"),
}
"""Every kind of command line: svc-mcp's argparse ones, its typer ones, svc-portal, svc-stub's."""

HEADINGS = {"Options:", "Commands:", "Serving over streamable HTTP (instead of stdio):"}


def test_every_command_line_has_one_look_piped() -> None:
    """Help, a missing option and an unknown one read alike on the argparse command lines and the
    typer ones (svc_serving.help_style): Click's usage line, headings and option layout, and one
    error line `<prog>: usage: <Click's words> (see <command> --help)`, exit 2."""
    runs = []
    for words, required in COMMAND_LINES.values():
        # a line that requires an option reports it missing first; the others an unknown one
        runs += [([*words, "--help"], {}), ([*words] if required else [*words, "--nope"], {})]
    done = iter(run_commands(runs))
    for name, (_, required) in COMMAND_LINES.items():
        prog = name.split()[0]
        shown, refused = next(done), next(done)
        assert shown.returncode == 0, (name, shown.stderr)
        assert_click_help(name, shown.stdout)
        said = f"Missing option '{required}'." if required else "No such option: --nope"
        assert (refused.returncode, refused.stdout) == (2, ""), (name, refused.stderr)
        (line,) = refused.stderr.splitlines()
        command = rf"(?P<command>{prog}( \S+)*)"  # the command whose options were read
        assert re.fullmatch(
            rf"{command}: usage: {re.escape(said)}( \(.*\))? \(see (?P=command) --help\)", line
        ), (name, line)


def assert_click_help(name: str, text: str) -> None:
    """Click's plain help: its usage line, headings, option layout and `-h, --help` line."""
    lines = text.splitlines()
    assert re.fullmatch(rf"Usage: {name} \[OPTIONS\]( COMMAND \[ARGS\]\.\.\.)?", lines[0]), lines[0]
    headings = [line for line in lines if re.fullmatch(r"\S.*:", line)]
    assert headings[0] == "Options:", (name, headings)
    assert set(headings) <= HEADINGS, (name, headings)
    if "COMMAND" in lines[0]:
        assert "Commands:" in headings, name
    assert re.search(r"^  -h, --help {2,}Show this message and exit\.$", text, re.M), name
    entries = [line for line in lines if re.match(r"  --?\w", line)]
    assert all(re.match(r"  \S.*? {2,}\S|  \S+( \S+)?$", line) for line in entries), name
    assert lines[2].startswith("  ") or lines[2] == "Options:", (name, lines[2])  # description
    assert not {"╭", "│", "\x1b"} & set(text), name  # no panel, no colour


def on_a_terminal(words: list[str]) -> str:
    """What `words` write to a terminal (200 columns), read while they write: a writer to a
    terminal nobody reads waits once its few kB are full."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            words, stdout=terminal, stderr=terminal, env=process_env({"COLUMNS": "200"})
        )
        os.close(terminal)
        terminal = -1
        output = b""
        with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
            while chunk := os.read(controller, 65536):
                output += chunk
        assert process.wait(timeout=60) == 0, (words, output)
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    return output.decode().replace("\r\n", "\n")


def test_every_command_line_has_one_look_on_a_terminal() -> None:
    """On a terminal too, the typer command lines (install, doctor, svc-stub) show Click's plain
    help as the argparse ones do (svc_serving.help_style), not rich's panels."""
    for name, (words, _) in COMMAND_LINES.items():
        assert_click_help(name, on_a_terminal([*words, "--help"]))


def test_help_on_a_terminal_shows_flags_without_a_value() -> None:
    text = on_a_terminal([SVC_MCP, "doctor", "--help"])
    for flag in ("--json", "--trust-project"):
        (line,) = [line for line in text.splitlines() if f"{flag} " in line]
        assert "<bool>" not in line, line


def test_one_generator_builds_svc_mcp_and_svc_portal_commands() -> None:
    """A row's command reads the same under `svc-mcp <tool>` and `svc-portal <group> <command>`:
    one generator (svc_mcp.cli.commands) builds both from the row."""
    by_tool, by_path, group = run_commands(
        [
            ([SVC_MCP, "portal_sessions", "--help"], {}),
            ([SVC_PORTAL, "identity", "sessions", "--help"], {}),
            ([SVC_PORTAL, "identity"], {}),
        ]
    )
    assert by_tool.returncode == by_path.returncode == 0
    after_usage = [done.stdout.split("\n", 1)[1] for done in (by_tool, by_path)]
    assert after_usage[0] == after_usage[1]
    assert by_path.stdout.startswith("Usage: svc-portal identity sessions [OPTIONS]\n")
    assert group.returncode == 2  # a group without its command shows its help
    assert "sessions" in group.stderr
    assert "Login sessions" in group.stderr


@pytest.mark.parametrize("first", ["tools", "get_system"])
def test_a_command_named_first_is_the_only_one_built(first: str) -> None:
    """`svc-mcp tools` and a tool call build that command's parser alone (issue 43.9: all 30 cost
    ten times as much); help and anything else still get every command."""
    from svc_mcp.cli import main
    from svc_serving.fence import subcommands

    assert list(subcommands(main._parser(first))) == [first]
    every = subcommands(main._parser())
    assert {"tools", "demo", "install", "portal", "get_system", "submit_intel"} <= set(every)
