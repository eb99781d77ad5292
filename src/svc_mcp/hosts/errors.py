"""Why install, uninstall or doctor refused; the message says what to fix."""

from __future__ import annotations

from typing import ClassVar

from svc_mcp.core.failures import FailureKind


class InstallError(Exception):
    """Refused; the message says what to fix. Nothing was written."""

    kind: ClassVar[FailureKind] = FailureKind.USAGE


class IndexUnreachable(InstallError):
    """The package index could not be asked."""

    kind: ClassVar[FailureKind] = FailureKind.UNREACHABLE


class UnreadableConfig(InstallError):
    """The existing file does not parse or has an unexpected shape; it is left untouched."""

    kind: ClassVar[FailureKind] = FailureKind.MISCONFIGURED
