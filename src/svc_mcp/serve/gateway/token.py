"""The gateway token kept for the person when SVC_MCP_GATEWAY_TOKEN is not set, as Jupyter does.

`svc-mcp --http` without the variable makes a random 256-bit token once and keeps it in a file
only its owner can read, in the user's state directory (`$XDG_STATE_HOME/svc-mcp/gateway-token`,
else `~/.local/state/svc-mcp/gateway-token`); every later start reuses it, so configured clients
keep working. `install --http` and `doctor` read the same file when the variable is unset. This
module imports nothing heavy, so they can.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE, state_directory

TOKEN_FILE_NAME = "gateway-token"  # noqa: S105 (a file name)
TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 32


class GatewayTokenFileError(Exception):
    """The token file cannot be used; the message names the file and what to do, never the
    token."""


def gateway_token_path(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the gateway keeps its token when SVC_MCP_GATEWAY_TOKEN is not set."""
    return state_directory(environ) / TOKEN_FILE_NAME


def read_gateway_token(path: Path | None = None) -> str | None:
    """The kept token, or None when there is no file yet. GatewayTokenFileError when the file is
    not this user's alone (others could read the token) or holds no usable token."""
    path = path or gateway_token_path()
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GatewayTokenFileError(f"cannot read the gateway token file {path}: {exc}") from None
    with os.fdopen(descriptor, encoding="ascii", errors="replace") as file:
        status = os.fstat(file.fileno())
        if status.st_uid != os.getuid() or status.st_mode & 0o077:
            raise GatewayTokenFileError(
                f"the gateway token file {path} may be read by other users: delete it (a new "
                f"token is made at the next start) or make it yours alone (chmod 600 {path})"
            )
        token = file.read(4096).strip()
    if len(token) < MIN_TOKEN_CHARS or not all("!" <= char <= "~" for char in token):
        raise GatewayTokenFileError(
            f"the gateway token file {path} holds no usable token: delete it, and a new one is "
            "made at the next start"
        )
    return token


def ensure_gateway_token(path: Path | None = None) -> tuple[str, bool]:
    """The kept token, made (random, 256 bits, in a file of mode 0600) when there is none yet;
    and whether it was made now."""
    path = path or gateway_token_path()
    existing = read_gateway_token(path)
    if existing is not None:
        return existing, False
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            file.write(token + "\n")
        # link() fails when the name exists: of two gateways starting together, one token wins
        # and both use it, and nobody ever reads a half-written file.
        os.link(draft, path)
    except FileExistsError:
        return ensure_gateway_token(path)
    finally:
        draft.unlink(missing_ok=True)
    return token, True


def client_gateway_token(environ: Mapping[str, str] = os.environ) -> str | None:
    """The token a client of a gateway on this machine sends: SVC_MCP_GATEWAY_TOKEN when set,
    else the token kept in the state directory (install --http-token plain and doctor use it);
    None when neither can be had."""
    if value := environ.get(GATEWAY_TOKEN_VARIABLE, "").strip():
        return value
    try:
        return read_gateway_token(gateway_token_path(environ))
    except GatewayTokenFileError:
        return None
