"""The stubs' confinement (README "Security notes"): the portal writes nothing anywhere and
reads only its data folder; the data service writes only in its database's folder. Neither
connects anywhere but to the OTLP endpoint when telemetry is on; each binds only its own port.
`SVC_STUB_CONFINEMENT` = auto | require | off."""

from __future__ import annotations

import os
from pathlib import Path

from svc_serving.confine import Policy, confine
from svc_serving.otel_settings import otlp_ports

SETTING = "SVC_STUB_CONFINEMENT"


def portal_policy(data_dir: Path, port: int) -> Policy:
    return Policy(
        process="svc-stub portal",
        reads=(data_dir.resolve(),),
        bind_ports=(port,),
        connect_ports=otlp_ports(),
    )


def service_policy(db_path: Path, port: int) -> Policy:
    return Policy(
        process="svc-stub service",
        writes=(db_path.resolve().parent,),
        bind_ports=(port,),
        connect_ports=otlp_ports(),
    )


def confine_portal(data_dir: Path, port: int) -> None:
    confine(portal_policy(data_dir, port), SETTING)


def confine_service(db_path: Path, port: int) -> None:
    # SQLite's temporary files (large sorts) go beside the database, the one writable folder.
    os.environ.setdefault("SQLITE_TMPDIR", str(db_path.resolve().parent))
    confine(service_policy(db_path, port), SETTING)
