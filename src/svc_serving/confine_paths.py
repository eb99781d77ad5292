"""The paths a confinement policy names: what any Python process reads to keep running, and
whether a path it would write is shared with others (svc_serving.confine applies both)."""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Iterable
from pathlib import Path

_SHARED_FOLDERS = ("/", "/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 (named to be refused)
_MODULE_SUFFIXES = (".py", ".pyc", ".so")


def runtime_paths() -> tuple[Path, ...]:
    """What a Python process reads to keep running: its installation (the prefixes and the import
    path they hold), the packages and modules in any other import path folder (never the folder:
    an editable install puts a checkout on the path, and its `.env`, `.git` and databases are not
    the runtime), where its loaded packages came from, shared libraries, time zones, the
    resolver's files and the TLS trust store. Never the working folder or HOME as a whole: a
    program started from HOME must not read the rest of it."""
    cwd = os.getcwd()
    home = os.path.expanduser("~")
    prefixes = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    candidates = [*prefixes]
    for entry in sys.path:
        folder = os.path.abspath(entry) if entry else cwd
        if folder == cwd or _contains(folder, home):
            continue
        if any(_contains(prefix, folder) for prefix in prefixes) or not os.path.isdir(folder):
            candidates.append(folder)  # the standard library, site-packages, a zip
        else:
            candidates += _importable_in(folder)
    candidates += _loaded_package_locations()
    candidates += [
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/usr/share/zoneinfo",
        "/dev/null",
        "/dev/urandom",
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/nsswitch.conf",
        "/etc/gai.conf",
        "/etc/host.conf",
        "/etc/ssl",
        "/etc/pki",
        "/etc/ca-certificates",
        "/usr/share/ca-certificates",
    ]
    candidates += _trust_store()
    kept: list[str] = []
    for path in sorted({os.path.abspath(candidate) for candidate in candidates}):
        # A folder holding HOME (an import path entry of "/" or HOME itself) would open all of it;
        # a path inside one already kept adds nothing.
        if _contains(path, home) or any(_contains(folder, path) for folder in kept):
            continue
        if os.path.exists(path):
            kept.append(path)
    return tuple(Path(path) for path in kept)


def _importable_in(folder: str) -> Iterable[str]:
    """The packages, modules and package metadata an import path folder holds (not hidden ones)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            metadata = entry.name.endswith((".dist-info", ".egg-info"))
            if metadata or os.path.exists(os.path.join(entry.path, "__init__.py")):
                yield entry.path
        elif entry.name.endswith(_MODULE_SUFFIXES):
            yield entry.path


def _loaded_package_locations() -> Iterable[str]:
    for name, module in list(sys.modules.items()):
        if "." in name:
            continue
        spec = getattr(module, "__spec__", None)
        locations = getattr(spec, "submodule_search_locations", None)
        if locations:
            yield from locations
        elif spec is not None and isinstance(spec.origin, str) and os.path.isabs(spec.origin):
            yield spec.origin


def _trust_store() -> Iterable[str]:
    paths = ssl.get_default_verify_paths()
    for value in (paths.cafile, paths.capath, paths.openssl_cafile, paths.openssl_capath):
        if value:
            yield value
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        if os.environ.get(variable):
            yield os.environ[variable]


def _contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def shared_write_scope(path: Path) -> str | None:
    """Why making `path` writable would open what others share, or None. A folder must not be
    HOME or hold it, `/` or a temporary folder; neither a folder nor the folder holding a file
    may be writable by other users (they could plant or swap what the process then writes)."""
    home = os.path.realpath(os.path.expanduser("~"))
    try:
        is_folder = os.path.isdir(path)
        folder = os.path.realpath(path if is_folder else os.path.dirname(os.path.abspath(path)))
        state = os.stat(folder)
    except OSError:
        return None
    if is_folder and (_contains(folder, home) or folder in _SHARED_FOLDERS):
        return f"{folder} would become writable, and it holds files that are not the process's own"
    if state.st_mode & 0o022 or state.st_uid not in (os.geteuid(), 0):
        return (
            f"{folder} is writable by other users, who could plant or swap the files {path.name} "
            "needs there: use a folder of your own (mkdir -m 700)"
        )
    return None
