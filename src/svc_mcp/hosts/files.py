"""A host's file: read, parsed (JSON, JSONC, TOML with its comments kept), rendered, and
written atomically with its mode kept (0600 when it holds a token) and the old file as a backup."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from svc_mcp.hosts.backups import write_backup
from svc_mcp.hosts.errors import UnreadableConfig
from svc_mcp.hosts.table import Host

MAX_CONFIG_BYTES = 4 << 20
"""A host's file larger than this is refused: none is near it, and /dev/zero never ends."""


def read_text(
    path: Path, *, dir_fd: int | None = None, follow: bool = True, shown: Path | None = None
) -> str:
    """The file's text, or "" when there is none; line endings as they are. Only a regular file
    of at most `MAX_CONFIG_BYTES` is read: a FIFO would hang, a device never end. With `dir_fd`,
    `path` is a name in that folder (`shown` names the file in messages); without `follow`, a
    link there is refused."""
    shown = shown or path
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        descriptor = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise UnreadableConfig(f"cannot read {shown} ({_reason(exc)}); left untouched") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableConfig(
                f"{shown} is not a regular file ({_file_type(status.st_mode)}); left untouched"
            )
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise UnreadableConfig(
            f"{shown} is larger than {MAX_CONFIG_BYTES >> 20} MiB, which no host's file is; "
            "left untouched"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableConfig(f"cannot read {shown} ({exc}); left untouched") from None


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "it is a symbolic link, which a project's file must not be"
    return error.strerror or type(error).__name__


def _file_type(mode: int) -> str:
    kinds = {stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a device", stat.S_ISBLK: "a device"}
    kinds |= {stat.S_ISDIR: "a folder", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "not a file")


def parse(path: Path, text: str, host: Host) -> Any:
    """The document in `text`, as the host reads it (a JSONC comment is refused later)."""
    file_format, jsonc = host.file_format, host.jsonc
    if not text.strip():
        return tomlkit.document() if file_format == "toml" else {}
    comment_line = None
    if jsonc:
        text, comment_line = strip_jsonc(text)
    try:
        document: Any = tomlkit.parse(text) if file_format == "toml" else json.loads(text)
    except RecursionError:
        raise UnreadableConfig(
            f"{path} is nested too deeply to be a host's file; it was left untouched"
        ) from None
    except (json.JSONDecodeError, tomlkit.exceptions.ParseError) as exc:
        hint = " (comments are not valid JSON)" if file_format == "json" and not jsonc else ""
        raise UnreadableConfig(
            f"{path} is not valid {file_format.upper()} ({exc}); it was left untouched: fix it"
            f"{hint} or pass --config to use another file"
        ) from None
    if file_format == "json" and not isinstance(document, dict):
        raise UnreadableConfig(f"{path} does not hold a JSON object; it was left untouched")
    if comment_line is not None and isinstance(document, dict):
        document[_COMMENT_MARK] = comment_line
    return document


_COMMENT_MARK = "\0comment-line"
"""Put on a parsed JSONC document that had comments: the line of the first one."""


def strip_jsonc(text: str) -> tuple[str, int | None]:
    """JSON from JSONC (JSON with comments): comments blanked (lines kept, so JSON errors name the
    right line) and trailing commas dropped; with the line of the first comment, if any."""
    out: list[str] = []
    first: int | None = None
    i, n, in_string = 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            step = 2 if char == "\\" else 1
            out.append(text[i : i + step])
            in_string = char != '"'
            i += step
        elif text.startswith("//", i) or text.startswith("/*", i):
            block = text[i + 1] == "*"
            end = text.find("*/", i + 2) + 2 if block else text.find("\n", i)
            end = n if end < (2 if block else 0) else end
            first = first or text.count("\n", 0, i) + 1
            out.append("".join("\n" if c == "\n" else " " for c in text[i:end]))
            i = end
        else:
            in_string = char == '"'
            out.append(char)
            i += 1
    return _drop_trailing_commas("".join(out)), first


def _drop_trailing_commas(text: str) -> str:
    out = list(text)
    in_string, escaped, comma = False, False, None
    for index, char in enumerate(text):
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string, comma = True, None
        elif char == ",":
            comma = index
        elif char in "}]" and comma is not None:
            out[comma] = " "
            comma = None
        elif not char.isspace():
            comma = None
    return "".join(out)


def refuse_comments(document: Any, path: Path) -> None:
    line = document.pop(_COMMENT_MARK, None) if isinstance(document, dict) else None
    if line is not None:
        raise UnreadableConfig(
            f"{path} line {line} holds a comment, which rewriting the file would lose; it was "
            "left untouched: remove the comments, or add the entry by hand "
            "(`svc-mcp install --print --config /dev/null` shows it)"
        )


def render(document: Any, file_format: str) -> str:
    if file_format == "toml":
        return tomlkit.dumps(document)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def servers_of(document: Any, host: Host, path: Path, *, create: bool) -> Any:
    servers = document.get(host.servers_key)
    if servers is None and create:
        servers = tomlkit.table(is_super_table=True) if host.file_format == "toml" else {}
        document[host.servers_key] = servers
    if servers is not None and not isinstance(servers, dict):
        raise UnreadableConfig(
            f"{path}: {host.servers_key!r} is not a table of servers; it was left untouched"
        )
    return servers


def plain(value: Any) -> Any:
    """A tomlkit item as plain Python data (JSON values are plain already)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def store(servers: Any, name: str, entry: dict[str, Any]) -> None:
    """Puts the entry in place; an existing TOML table is updated key by key (comments kept)."""
    existing = servers.get(name)
    if not (isinstance(existing, dict) and hasattr(existing, "unwrap")):
        servers[name] = entry
        return
    for key in [key for key in existing if key not in entry]:
        del existing[key]
    for key, value in entry.items():
        if plain(existing.get(key)) != value:
            existing[key] = value


def write_atomically(path: Path, text: str, *, private: bool, backup: Path | None) -> int | None:
    """Replaces `path` with `text`, first copying the old file to `backup` (0600), if given;
    returns, when `private` narrowed it to 0600, the file's old mode.

    A symbolic link is followed, so a config kept in a dotfiles repository stays linked.
    """
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600  # a new file may hold a token
    old_mode = None
    if path.exists():
        if backup is not None:
            write_backup(path, backup)
        mode = path.stat().st_mode & 0o777
        if private and mode & 0o077:
            old_mode, mode = mode, 0o600
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return old_mode


def narrow(path: Path) -> int | None:
    """Makes an existing file 0600; its old mode when that changed it."""
    if not path.exists():
        return None
    mode = path.stat().st_mode & 0o777
    if not mode & 0o077:
        return None
    os.chmod(path.resolve(), 0o600)
    return mode
