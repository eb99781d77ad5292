"""A project's file, read and written from the project folder down by directory descriptors, each
step refusing a link: a folder of the project swapped for a link (to the home, say) while install
runs cannot turn the read or the write to a file outside the project."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from svc_mcp.hosts.backups import BackupPlan, save_backup
from svc_mcp.hosts.errors import UnreadableConfig
from svc_mcp.hosts.files import read_text

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def parts_in(project: Path, path: Path) -> tuple[str, ...] | None:
    """`path`'s names below `project`, as written (no link followed); None when not inside."""
    if not path.is_absolute() or not path.is_relative_to(project):
        return None
    parts = path.relative_to(project).parts
    return parts if parts and ".." not in parts else None


@contextmanager
def folder(project: Path, parts: tuple[str, ...], *, create: bool) -> Iterator[int]:
    """The folder holding the file `parts` names below `project`, open; each folder on the way
    opened by name in the one before, never through a link (made, 0755, when missing and
    `create`). FileNotFoundError when one is missing and not `create`."""
    descriptor = os.open(project, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            try:
                step = _open_folder(name, descriptor, project, parts)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=descriptor)
                step = _open_folder(name, descriptor, project, parts)
            os.close(descriptor)
            descriptor = step
        yield descriptor
    finally:
        os.close(descriptor)


def _open_folder(name: str, parent: int, project: Path, parts: tuple[str, ...]) -> int:
    try:
        return os.open(name, _FOLDER, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnreadableConfig(
                f"{project.joinpath(*parts)}: {name} is a link or not a folder; a project's file "
                "is read and written only inside the project, never through a link: left untouched"
            ) from None
        raise


def read_in_project(project: Path, parts: tuple[str, ...]) -> str:
    """The file's text ("" when it or its folder is missing), read without following a link."""
    try:
        with folder(project, parts, create=False) as descriptor:
            shown = project.joinpath(*parts)
            return read_text(Path(parts[-1]), dir_fd=descriptor, follow=False, shown=shown)
    except FileNotFoundError:
        return ""


def write_in_project(
    project: Path, parts: tuple[str, ...], text: str, *, private: bool, backup: BackupPlan | None
) -> int | None:
    """As `files.write_atomically`, by descriptors from `project`: the old file copied to
    `backup.to` (beside it by name, or outside the project), `backup.stale` removed by name; the
    new file written beside and renamed over the old. Returns the old mode when narrowed."""
    name = parts[-1]
    with folder(project, parts, create=True) as where:
        mode, old_mode = 0o600, None
        old = _open_existing(name, where, project, parts)
        if old is not None:
            with os.fdopen(old, "rb") as handle:
                old_data = handle.read()
                mode = os.fstat(handle.fileno()).st_mode & 0o777
            if private and mode & 0o077:
                old_mode, mode = mode, 0o600
            if backup is not None and backup.to is not None:
                _keep(old_data, backup.to, where, project, parts)
        temp = f".{name}.{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(temp, flags, 0o600, dir_fd=where)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=where, dst_dir_fd=where)
        except BaseException:
            os.unlink(temp, dir_fd=where)
            raise
        if backup is not None and backup.stale is not None and backup.stale != backup.to:
            _remove_beside(backup.stale, where, project, parts)
        return old_mode


def narrow_in_project(project: Path, parts: tuple[str, ...]) -> int | None:
    """Makes the existing file 0600 (never through a link); its old mode when that changed it."""
    try:
        with folder(project, parts, create=False) as where:
            descriptor = _open_existing(parts[-1], where, project, parts)
            if descriptor is None:
                return None
            try:
                mode = os.fstat(descriptor).st_mode & 0o777
                if not mode & 0o077:
                    return None
                os.fchmod(descriptor, 0o600)
                return mode
            finally:
                os.close(descriptor)
    except FileNotFoundError:
        return None


def _open_existing(name: str, where: int, project: Path, parts: tuple[str, ...]) -> int | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(name, flags, dir_fd=where)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableConfig(
                f"{project.joinpath(*parts)} is a link; a project's file is written only inside "
                "the project, never through a link: left untouched"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UnreadableConfig(f"{project.joinpath(*parts)} is not a regular file; left untouched")
    return descriptor


def _beside(path: Path, project: Path, parts: tuple[str, ...]) -> str | None:
    """The name of `path` when it is in the same project folder as the file, else None."""
    return path.name if path.parent == project.joinpath(*parts).parent else None


def _keep(data: bytes, to: Path, where: int, project: Path, parts: tuple[str, ...]) -> None:
    name = _beside(to, project, parts)
    if name is None:
        save_backup(data, to)
        return
    _remove_beside(to, where, project, parts)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(name, flags, 0o600, dir_fd=where), "wb") as handle:
        handle.write(data)


def _remove_beside(path: Path, where: int, project: Path, parts: tuple[str, ...]) -> None:
    name = _beside(path, project, parts)
    if name is None:
        path.unlink(missing_ok=True)
        return
    with suppress(FileNotFoundError):
        os.unlink(name, dir_fd=where)
