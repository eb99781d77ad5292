"""`svc-stub intel sign` and `svc-stub intel verify`: the operator's side of signed intel.

The envelope module is imported by these commands only: every `svc-stub` start loads this file."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

intel = typer.Typer(
    help="Sign and verify svc.intel.v1 envelopes with SERVICE_INTEL_HMAC.", no_args_is_help=True
)
FileArg = Annotated[str, typer.Option("--file", help="JSON file to read, or - for standard input.")]


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"svc-stub intel: {message}", err=True)
    raise typer.Exit(code)


def _key() -> bytes:
    from server_stub.intel.envelope import key_bytes

    secret = os.environ.get("SERVICE_INTEL_HMAC", "")
    if not secret:
        _fail("set SERVICE_INTEL_HMAC to the signing secret (at least 32 bytes)")
    try:
        return key_bytes(secret)
    except ValueError as exc:
        _fail(str(exc))


def _read(source: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
        return json.loads(text)
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        _fail(f"{source} is not JSON: {exc}")


@intel.command("sign")
def sign_command(
    source: FileArg,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here instead of standard output.")
    ] = None,
) -> None:
    """Complete a draft (id, issued_at) and sign it."""
    from server_stub.intel.envelope import IntelRejected, sign

    key = _key()
    draft = _read(source)
    if not isinstance(draft, dict):
        _fail("the draft must be a JSON object")
    try:
        envelope = sign(draft, key, datetime.now(UTC))
    except IntelRejected as exc:
        _fail(exc.message)
    text = json.dumps(envelope, indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)


@intel.command("verify")
def verify_command(source: FileArg) -> None:
    """Check an envelope's shape, signature and freshness; exit 1 when it fails."""
    from server_stub.intel.envelope import IntelRejected, verify

    key = _key()
    try:
        envelope = verify(_read(source), key, datetime.now(UTC))
    except IntelRejected as exc:
        _fail(f"{exc.code}: {exc.message}", code=1)
    typer.echo(f"valid: {envelope.id} ({envelope.kind} from {envelope.source})")
