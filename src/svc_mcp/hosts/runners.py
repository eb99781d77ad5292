"""What an entry runs: this installation (its `svc-mcp`, or `uv run --project` for a checkout), or
svc-mcp fetched by uvx from the package index or GitHub. Each program by its absolute path (GUI
hosts do not inherit the shell's PATH), checked to be there before anything is written; `--source
pypi` first asks the package index whether it has a release.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from svc_mcp.hosts.errors import IndexUnreachable, InstallError

Source = Literal["here", "pypi", "github", "local"]
PACKAGE = "svc-mcp"
GITHUB_URL = "https://github.com/svc-mcp/svc-mcp"
DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
"""Where `--source pypi` looks when --index-url is not given, the first one set wins."""
SELECTION_OPTIONS = ("--tools", "--exclude-tools")
"""The options of `svc-mcp` that an installed entry may carry after the command."""
UV_TRUST = {"UV_SYSTEM_CERTS": "1"}
"""What an entry that runs uv or uvx sets: uv then trusts the system's certificates as pip does,
so it fetches through a proxy that re-signs TLS with the company's own authority (by default uv
trusts only the certificates it bundles: `invalid peer certificate: UnknownIssuer`)."""


@dataclass(frozen=True)
class Runners:
    """The programs an entry may run, each by its absolute path (None: not found)."""

    uvx: str | None = None
    uv: str | None = None
    script: str | None = None
    """This installation's own `svc-mcp` (a venv's, pipx's or `uv tool`'s)."""
    checkout: Path | None = None
    """The checkout this installation runs from (an editable install), if it does."""


def launch_command(
    source: Source,
    runners: Runners,
    *,
    index_url: str | None = None,
    check: bool = True,
    unpinned: bool = False,
) -> list[str]:
    """`command` followed by `args`. `here` is this installation; the others fetch svc-mcp, pinned
    to this installation's version (for github: the commit it was built from when known, else
    its release tag) unless `unpinned`.
    With `check` (not for --print), the command must be an executable file."""
    if source == "here":
        if runners.checkout is not None and (runners.uv is not None or runners.script is None):
            return [need(runners.uv, "uv", "--uv", check=check), *_uv_run(runners.checkout)]
        # An editable install without uv: its own svc-mcp runs the checkout as it is too.
        if runners.script is None:
            raise InstallError(
                f"cannot find this installation's {PACKAGE} command beside {sys.executable}; "
                "pass --source pypi, github or local"
            )
        if any(part.startswith("archive-v") for part in Path(runners.script).parts):
            # `uvx svc-mcp install` runs from uv's cache, which uv may clear at any time.
            raise InstallError(
                f"this {PACKAGE} runs from uv's cache (uvx), which uv may clear, so a host could "
                f"not rely on it: install it first (`uv tool install {PACKAGE}` or a venv) and run "
                "install from there, or pass --source github"
            )
        return [need(runners.script, PACKAGE, None, check=check)]
    if source == "local":
        if runners.checkout is None:
            raise InstallError("--source local needs the checkout's path")
        return [need(runners.uv, "uv", "--uv", check=check), *_uv_run(runners.checkout)]
    uvx = need(runners.uvx, "uvx", "--uvx", check=check)
    if source == "github":
        pin = "" if unpinned else f"@{release_commit() or 'v' + own_version()}"
        return [uvx, "--from", f"git+{GITHUB_URL}{pin}", PACKAGE]
    return [uvx, *index_args(index_url), PACKAGE if unpinned else f"{PACKAGE}=={own_version()}"]


def index_args(index_url: str | None) -> list[str]:
    """uvx's arguments for the index an entry resolves from: none for PyPI."""
    return [] if index_url in (None, DEFAULT_INDEX) else ["--default-index", str(index_url)]


def runner_env(command: Sequence[str]) -> dict[str, str]:
    """The variables the entry's program itself needs (uv's trust of the system store)."""
    return dict(UV_TRUST) if Path(command[0]).name.removesuffix(".exe") in ("uv", "uvx") else {}


def own_version() -> str:
    """The version of svc-mcp running this command."""
    return importlib.metadata.version(PACKAGE)


def release_commit() -> str | None:
    """The GitHub commit this installation was built from, when its metadata says (PEP 610's
    `direct_url.json` of an install from git): an entry pinned to it runs exactly this code,
    where the release tag could be moved by whoever controls the repository."""
    try:
        text = importlib.metadata.distribution(PACKAGE).read_text("direct_url.json")
        origin = json.loads(text or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    vcs = origin.get("vcs_info") if isinstance(origin, dict) else None
    url = str(origin.get("url", "")).removeprefix("git+").removesuffix(".git").rstrip("/")
    commit = vcs.get("commit_id") if isinstance(vcs, dict) and vcs.get("vcs") == "git" else None
    if url != GITHUB_URL or not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        return None
    return commit


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _uv_run(checkout: Path) -> list[str]:
    # `uv run --project` syncs the checkout's environment (an editable install) on each start, so
    # the entry runs the checkout as it is now, never a cached build of an older state.
    return ["run", "--project", str(checkout.resolve()), PACKAGE]


def need(path: str | None, name: str, option: str | None, *, check: bool = True) -> str:
    """`path` when it is an absolute path to an executable file; refused otherwise."""
    how = f" or pass {option} PATH" if option else ""
    if path is None:
        raise InstallError(f"{name} is not on PATH; install uv (https://docs.astral.sh/uv/){how}")
    if not Path(path).is_absolute():
        raise InstallError(f"{name} must be given by its absolute path, not {path!r}")
    if check and not (Path(path).is_file() and os.access(path, os.X_OK)):
        fix = f"install uv{how}" if option else "reinstall svc-mcp or pass --source"
        raise InstallError(
            f"{name} at {path} is not an executable file; the host could not start it: {fix}"
        )
    return path


def index_url(option: str | None, environ: Mapping[str, str]) -> str:
    """The package index `--source pypi` uses: --index-url, else uv's or pip's variable.

    An index URL that carries a user name or password is refused: it would be written into the
    host's file and shown in messages; uvx reads such an index from the host's environment."""
    index = option or next(
        (environ[name] for name in INDEX_VARIABLES if environ.get(name)), DEFAULT_INDEX
    )
    if "@" in index.partition("://")[2].partition("/")[0]:
        raise InstallError(
            "the package index URL carries credentials (user@host), which would be written into "
            "the host's file; give the host UV_INDEX_URL in its own environment and pass "
            "--index-url with the index's URL without them"
        )
    return index


def check_on_index(index: str, package: str = PACKAGE, *, version: str | None = None) -> None:
    """Refused unless the index (PEP 503 simple API) lists the package (in `version`, if given)."""
    import httpx  # only `--source pypi` and doctor pay for it

    url = f"{index.rstrip('/')}/{package}/"
    try:
        response = httpx.get(url, timeout=10.0, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise IndexUnreachable(
            f"cannot reach the package index {index} to check that {package} is there "
            f"({type(exc).__name__}); check the network, or install from what you have: drop "
            "--source (this installation) or use --source local"
        ) from None
    if response.status_code == 404:
        raise InstallError(
            f"{package} is not on the package index {index} (no release is published there), so "
            f"the host could not start it: drop --source to run this installation, or use "
            "--source github or --source local"
        )
    if response.status_code >= 400:
        raise IndexUnreachable(
            f"the package index {index} answered {response.status_code} for {package}; "
            "try again, or drop --source to run this installation"
        )
    name = re.escape(package).replace(r"\-", "[-_.]")
    if version and not re.search(rf"{name}-{re.escape(version)}[.-]", response.text, re.I):
        raise InstallError(
            f"the package index {index} has no {package} {version} (the version running this "
            "install, which the entry pins): pass --unpinned to run the newest release there, or "
            "drop --source to run this installation"
        )


def this_installation(environ: Mapping[str, str]) -> Runners:
    """Where the programs are for this installation, found without running anything."""
    package = Path(__file__).resolve().parent.parent
    root = package.parent.parent
    checkout = (
        root if package.parent.name == "src" and _is_our_project(root / "pyproject.toml") else None
    )
    bin_dir = Path(sys.executable).absolute().parent
    script = bin_dir / (f"{PACKAGE}.exe" if sys.platform.startswith("win") else PACKAGE)
    return Runners(
        uvx=_which("uvx", bin_dir),
        uv=environ.get("UV") or _which("uv", bin_dir),
        script=str(script) if script.is_file() else None,
        checkout=checkout,
    )


def _which(name: str, beside: Path) -> str | None:
    """A program's absolute path: GUI hosts do not inherit the shell's PATH."""
    found = shutil.which(name)
    if found is not None:
        return str(Path(found).absolute())
    return str(beside / name) if (beside / name).is_file() else None


def find_checkout(starts: Iterable[Path]) -> Path:
    """The nearest directory at or above one of `starts` whose pyproject.toml is svc-mcp's."""
    looked = []
    for start in starts:
        looked.append(str(start))
        for directory in (start, *start.parents):
            if _is_our_project(directory / "pyproject.toml"):
                return directory
    raise InstallError(
        f"--source local needs a checkout of {PACKAGE} (a pyproject.toml naming it) at or above "
        f"{' or '.join(looked)}; run it from inside the checkout"
    )


def _is_our_project(pyproject: Path) -> bool:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == PACKAGE


_PINNED_GIT = re.compile(rf"git\+{re.escape(GITHUB_URL)}(?:@[\w.\-/]+)?")
_PINNED_PACKAGE = re.compile(rf"{re.escape(PACKAGE)}(?:==[\w.!+\-]+)?")


def runs_svc_mcp(command: str, args: Sequence[str]) -> bool:
    """Whether `command args` is svc-mcp as install writes it, from any source, pinned or not."""
    program = Path(command).name.removesuffix(".exe")
    rest = list(args)
    # `install --tools` / `--exclude-tools` add their pairs at the end.
    while len(rest) >= 2 and rest[-2] in SELECTION_OPTIONS:
        del rest[-2:]
    if program == PACKAGE:
        return not rest
    if program == "uv":
        return len(rest) == 4 and rest[:2] == ["run", "--project"] and rest[3] == PACKAGE
    if program != "uvx":
        return False
    if rest[:1] == ["--from"]:
        return len(rest) == 3 and bool(_PINNED_GIT.fullmatch(rest[1])) and rest[2] == PACKAGE
    if rest[:1] == ["--default-index"]:
        rest = rest[2:]
    return len(rest) == 1 and bool(_PINNED_PACKAGE.fullmatch(rest[0]))
