"""Another local user, as tests play it (we are root): `setpriv` to uid 4242, running a Python
that does not depend on where this checkout lies.

A checkout often lies in a folder other users cannot enter (a home of mode 0700, a `mktemp -d`),
and so do this run's `.venv` and pytest's temporary folders: a process of another uid started
from there fails `No module named svc_mcp`, or cannot start the interpreter at all. `python()`
builds, once per test process, a virtual environment in a fresh world-readable temporary folder:
copies of svc-mcp's packages from the checkout and of the installed files of every distribution
it needs to run, beside a link to an interpreter every user may run. It is removed at exit.
"""

from __future__ import annotations

import atexit
import functools
import importlib.metadata
import re
import shutil
import stat
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support import ROOT

OTHER_UID = 4242
AS_OTHER_USER = ("setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups")
"""The command prefix that runs what follows as uid 4242 (group 4242, no other groups)."""
OUR_PACKAGES = ("src/svc_mcp", "src/portal_tools", "src/svc_serving", "server_stub")
"""What svc-mcp's wheel holds (pyproject.toml, [tool.hatch.build.targets.wheel])."""


def as_other_user(*command: str) -> list[str]:
    return [*AS_OTHER_USER, *command]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(root: str = "svc-mcp") -> list[importlib.metadata.Distribution]:
    """`root` and every distribution it needs to run (no extras), as installed here."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        dist = found[name] = importlib.metadata.distribution(name)
        for line in dist.requires or []:
            wanted = Requirement(line)
            if wanted.marker is None or wanted.marker.evaluate({"extra": ""}):
                todo.append(wanted.name)
    return list(found.values())


def anyone_may_run(path: Path) -> bool:
    """Whether a user with no group in common may run `path` (every folder above it enterable)."""
    real = path.resolve()
    folders_enterable = all(folder.stat().st_mode & stat.S_IXOTH for folder in real.parents)
    return folders_enterable and bool(real.stat().st_mode & stat.S_IXOTH)


def shared_interpreter() -> Path:
    """This Python's base interpreter, or the system's of the same version, whichever another
    user may run (the compiled modules copied beside it are for this version)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(getattr(sys, "_base_executable", sys.executable))
    for candidate in (base, Path("/usr/bin") / version, Path("/usr/local/bin") / version):
        if candidate.is_file() and anyone_may_run(candidate):
            return candidate
    pytest.fail(
        f"another local user cannot run {base.resolve()} (a folder above it is private) and "
        f"the system has no {version}: install {version} or run the tests with a Python "
        "every user may run"
    )


def _copy_installed(dist: importlib.metadata.Distribution, site: Path) -> None:
    for file in dist.files or []:
        if ".." in file.parts or "__pycache__" in file.parts or file.suffix == ".pth":
            continue
        source = Path(str(dist.locate_file(file)))
        if source.is_file():
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


@functools.cache
def python() -> Path:
    """A Python another local user can run, with svc-mcp (this checkout's) and what it needs."""
    folder = Path(tempfile.mkdtemp(prefix="svc-mcp-tests-other-user-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    venv = folder / "venv"
    relative_site = Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)
    site = venv / relative_site
    site.mkdir(parents=True)
    for dist in runtime_distributions():  # svc-mcp's own: its metadata, not the editable link
        _copy_installed(dist, site)
    for package in OUR_PACKAGES:
        shutil.copytree(
            ROOT / package, site / Path(package).name, ignore=shutil.ignore_patterns("__pycache__")
        )
    interpreter = shared_interpreter()
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(interpreter)
    (venv / "pyvenv.cfg").write_text(
        f"home = {interpreter.parent}\ninclude-system-site-packages = false\n"
        f"version = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    for path in (folder, *folder.rglob("*")):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return venv / "bin" / "python"
