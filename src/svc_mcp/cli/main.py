"""`svc-mcp`: serve MCP (stdio by default, or `--http`), list the tools, or call one.

    svc-mcp [--toolsets portal,service] [--read-only] [--tools a,b] [--exclude-tools a,b]
                                                                 serve MCP over stdio
    svc-mcp --http [--host H] [--port P] [--path /mcp] ...       serve streamable HTTP
    svc-mcp tools [--json]                                       list the tools
    svc-mcp <tool_name> [--param value ...]                      call one tool, print its JSON
    svc-mcp portal <group> <command> ...                         the `svc-portal` commands

Listing and calling never import `mcp` (it takes most of a second to load), so each command
imports what it needs only when it runs, and the front door is argparse rather than typer (whose
parameter handling loads pydantic machinery): `svc-mcp tools` stays a small fraction of `import
mcp.server`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from svc_mcp.cli.commands import Commands, add_tool_command, arguments
from svc_mcp.cli.listing import print_json, print_table
from svc_mcp.cli.options import add_selection, bounded_int, url_path
from svc_mcp.cli.suggestions import near_options
from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.exits import OneLineParser, fail, interrupt_ends_process, run_command
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.settings import (
    GATEWAY_TOKEN_VARIABLE,
    OAUTH_ISSUER_VARIABLE,
    PUBLIC_URL_VARIABLE,
)
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.table import TOOLS, select_tools
from svc_serving.help_style import argparse_formatter

if TYPE_CHECKING:
    import asyncio


PROG = "svc-mcp"


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    run_command(PROG, lambda: _main(args))


def _main(args: list[str]) -> None:
    if args[:1] in (["--version"], ["-V"]):
        from importlib.metadata import version

        print(f"{PROG} {version('svc-mcp')}")
        return
    if args[:1] == ["portal"]:
        _run_portal(args[1:])
        return
    if args[:1] and args[0] in SETUP_COMMANDS:
        _run_setup(args)
        return
    if args[:1] == ["demo"]:
        _run_demo(args[1:])
        return
    parser = _parser(args[0] if args[:1] and args[0] in DIRECT_COMMANDS else None)
    options = parser.parse_args(args)
    _check_serving_options(parser, options)
    selected = select_tools(
        toolsets=options.toolsets,
        read_only=options.read_only,
        only=options.tools,
        excluded=options.exclude_tools,
    )
    if options.command is None:
        _serve(selected, options)
    elif options.command == "tools":
        _list(selected, as_json=options.json)
    elif options.command == "portal":
        _run_portal(options.portal_args)
    else:
        _call(options.command, selected, options)


def _run_portal(args: Sequence[str]) -> None:
    from svc_mcp.cli.portal import main as portal_main

    portal_main(args, prog_name=f"{PROG} portal")


# --- install, uninstall, doctor: a typer app of their own (svc_mcp.hosts.commands), loaded only
# when one of them runs; argparse here only lists them in --help.
SETUP_COMMANDS = {
    "install": "add svc-mcp to an MCP host's configuration",
    "uninstall": "remove svc-mcp from an MCP host's configuration",
    "doctor": "check settings, backends, tokens and MCP hosts",
}


def _run_setup(args: Sequence[str]) -> None:
    from svc_mcp.hosts.commands import main as setup_main

    setup_main(args, prog_name=PROG)


def _add_setup_commands(commands: Commands) -> None:
    for name, help_text in SETUP_COMMANDS.items():
        command = commands.add_parser(name, help=help_text, add_help=False)
        command.add_argument("setup_args", nargs=argparse.REMAINDER, action=_SetupFirst)


class _SetupFirst(argparse.Action):
    """Reached only for `svc-mcp --read-only install ...`: nothing may come before them."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        parser.error(f"options of {PROG} itself cannot come before {parser.prog.split()[-1]}")


# --- end of install, uninstall, doctor


# --- demo: svc_mcp.demo.run (which loads mcp, rich and the stubs) is imported only when it runs;
# argparse here only lists it in --help.
def _run_demo(args: Sequence[str]) -> None:
    from svc_mcp.demo.run import main as demo_main

    demo_main(args)


def _add_demo_command(commands: Commands) -> None:
    command = commands.add_parser(
        "demo", help="run the stubs and drive svc-mcp over stdio", add_help=False
    )
    command.add_argument("demo_args", nargs=argparse.REMAINDER, action=_SetupFirst)


# --- end of demo


def _list(selected: Sequence[ToolSpec], *, as_json: bool) -> None:
    if as_json or not sys.stdout.isatty():
        print_json(selected)
    else:
        print_table(selected)


def _call(name: str, selected: Sequence[ToolSpec], options: argparse.Namespace) -> None:
    spec = next((spec for spec in selected if spec.name == name), None)
    if spec is None:
        fail(PROG, FailureKind.USAGE, f"{name} is not among the tools the selection options select")
    from svc_mcp.cli.terminal import run_tool

    run_tool(PROG, spec, arguments(spec, options))


def _serve(selected: Sequence[ToolSpec], options: argparse.Namespace) -> None:
    import asyncio

    from svc_serving.fence import skip_httpx_command_line
    from svc_serving.startup import long_lived_imports

    skip_httpx_command_line()  # rich is installed, for `doctor`
    if not options.http:
        with long_lived_imports():
            from svc_mcp.serve.confinement import confine_stdio_server
            from svc_mcp.serve.server import serve_stdio

        if sys.stdin.isatty():
            print(
                f"{PROG}: serving MCP over stdio for an MCP host; see {PROG} --help",
                file=sys.stderr,
            )
        from svc_mcp.core.telemetry import setup, shutdown

        # Taken before the line that says it is confined: a Ctrl-C after that line is not lost
        # when SIGINT came in ignored (a background job), which this handler overrides.
        with interrupt_ends_process(PROG, shutdown):
            confine_stdio_server()
            setup(PROG)  # after confinement, which must find one thread: exporters start some
            asyncio.run(serve_stdio(selected))
        return
    with long_lived_imports():
        from svc_mcp.serve.gateway.app import GatewayOptions, GatewayRefused, serve_http
        from svc_mcp.serve.gateway.sockets import PortUnavailable

    defaults = GatewayOptions()
    gateway = GatewayOptions(
        host=options.host or defaults.host,
        port=options.port or defaults.port,
        path=options.path or defaults.path,
        allow_remote=options.allow_remote,
        allowed_hosts=tuple(options.allowed_host),
        no_auth=options.no_auth,
        uds=options.uds,
        oauth_issuer=options.oauth_issuer,
        public_url=options.public_url,
        keep_static_token=options.keep_static_token,
    )
    try:
        with asyncio.Runner(loop_factory=_fast_loop()) as runner:
            runner.run(serve_http(selected, gateway))
    except GatewayRefused as refusal:
        fail(PROG, FailureKind.USAGE, str(refusal))
    except Misconfigured as misconfigured:  # OAuth's settings
        fail(PROG, FailureKind.MISCONFIGURED, str(misconfigured))
    except PortUnavailable as unavailable:
        fail(PROG, FailureKind.MISCONFIGURED, str(unavailable))


def _fast_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (not on Windows), as the stubs use it."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


DIRECT_COMMANDS = frozenset({"tools", *(spec.name for spec in TOOLS)})
"""Commands that may come first: then the parser holds that command only (building every tool's
command is most of the time `svc-mcp tools` spends in argparse)."""


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """svc-mcp's parser: every command, or the command `only` alone."""
    parser = _SuggestingParser(
        prog=PROG,
        description="MCP tools for the service portal (and the data service): serve them over "
        "stdio or HTTP, list them, or call one from the shell.",
        epilog=f"Set it up in an MCP host: {PROG} install --help; check it: {PROG} doctor.\n"
        "Exit codes, the gateway and every host: https://github.com/svc-mcp/svc-mcp#readme\n"
        "(README.md, docs/mcp.md and install/README.md in a checkout).",
        # The epilog's lines as written: argparse would break the URL at a hyphen.
        formatter_class=argparse_formatter,
    )
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    add_selection(parser, defaults=True)
    http = parser.add_argument_group("serving over streamable HTTP (instead of stdio)")
    http.add_argument("--http", action="store_true", help="serve streamable HTTP")
    http.add_argument("--host", help="address to bind (default 127.0.0.1)")
    http.add_argument("--port", type=bounded_int(1, 65535), help="port (default 8765)")
    http.add_argument("--path", type=url_path, help="endpoint path (default /mcp)")
    http.add_argument(
        "--allow-remote",
        action="store_true",
        help=f"allow a non-loopback --host; needs {GATEWAY_TOKEN_VARIABLE}",
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name clients may use (repeatable)",
    )
    http.add_argument(
        "--no-auth",
        action="store_true",
        help="serve without the gateway token (loopback or --uds only; every local user may call)",
    )
    http.add_argument(
        "--uds",
        type=Path,
        metavar="PATH",
        help="serve on this Unix socket, mode 0600 (ssh -L 8765:PATH host reaches it)",
    )
    http.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help=f"accept OAuth access tokens of this authorization server ({OAUTH_ISSUER_VARIABLE})",
    )
    http.add_argument(
        "--public-url",
        metavar="URL",
        help=f"the MCP URL as clients reach it, the tokens' audience ({PUBLIC_URL_VARIABLE})",
    )
    http.add_argument(
        "--keep-static-token",
        action="store_true",
        help="with OAuth, accept the static gateway token too (scripts, svc-mcp's own CLI)",
    )
    commands = parser.add_subparsers(dest="command", metavar="<command>", title="commands")
    if only in (None, "tools"):
        listing = commands.add_parser(
            "tools",
            help="list the tools (JSON unless on a terminal)",
            formatter_class=argparse_formatter,
        )
        listing.add_argument("--json", action="store_true", help="print JSON even on a terminal")
        add_selection(listing, defaults=False)
    if only is None:
        portal = commands.add_parser("portal", help="the svc-portal commands", add_help=False)
        portal.add_argument("portal_args", nargs=argparse.REMAINDER)
        _add_setup_commands(commands)
        _add_demo_command(commands)
    for spec in TOOLS:
        if only in (None, spec.name):
            add_tool_command(commands, spec.name, spec)
    return parser


class _SuggestingParser(OneLineParser):
    """A mistyped command or tool name gets the nearest names, not every choice."""

    def error(self, message: str) -> NoReturn:
        import difflib
        import re

        typed = re.match(r"argument <command>: invalid choice: '([^']*)'", message)
        if typed is not None:
            names = [*SPECIAL_COMMANDS, *SETUP_COMMANDS, *(spec.name for spec in TOOLS)]
            near = difflib.get_close_matches(typed[1], names, n=3)
            guess = f"; did you mean {' or '.join(near)}?" if near else ""
            message = f"no command or tool {typed[1]!r}{guess} ({PROG} tools lists the tools)"
        elif message.startswith("unrecognized arguments: "):
            message = near_options(message, self)
        super().error(message)


SPECIAL_COMMANDS = ("tools", "portal", "demo")


def _check_serving_options(parser: argparse.ArgumentParser, options: argparse.Namespace) -> None:
    given = any(value is not None for value in (options.host, options.port, options.path))
    serving = (
        options.allow_remote,
        options.allowed_host,
        options.no_auth,
        options.uds,
        options.oauth_issuer,
        options.public_url,
        options.keep_static_token,
    )
    if not options.http and (given or any(serving)):
        parser.error(
            "--host, --port, --path, --allow-remote, --allowed-host, --no-auth, --uds, "
            "--oauth-issuer, --public-url and --keep-static-token need --http"
        )
    if options.http and options.command is not None:
        parser.error("--http serves MCP and takes no command")
