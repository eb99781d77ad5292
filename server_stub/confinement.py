"""The stubs' confinement (README "Security notes"): the portal writes nothing anywhere and
reads only its data folder; the data service writes only its database's own files and its private
folder (server_stub.service.private_dir), never the folder holding the database. Neither connects
anywhere but to the OTLP endpoint when telemetry is on; each binds only its own port; neither may
open a Unix socket or, unless the OTLP endpoint is named by a host name, a UDP one.
`SVC_STUB_CONFINEMENT` = auto | require | off."""

from __future__ import annotations

from pathlib import Path

from server_stub.service.private_dir import database_files, prepare_database_files, private_dir
from svc_serving.confine import Policy, confine
from svc_serving.confine_paths import shared_write_scope
from svc_serving.otel_settings import otlp_endpoints, otlp_ports
from svc_serving.socket_filter import resolver_needed

SETTING = "SVC_STUB_CONFINEMENT"


def portal_policy(data_dir: Path, port: int) -> Policy:
    return Policy(
        process="svc-stub portal",
        reads=(data_dir.resolve(),),
        bind_ports=(port,),
        connect_ports=otlp_ports(),
        datagrams=_resolver_needed(),
        socket_owners=True,  # admission counts a loopback peer under the user owning its socket
    )


def service_policy(db_path: Path, port: int) -> Policy:
    db = db_path.resolve()
    return Policy(
        process="svc-stub service",
        writes=(*database_files(db), private_dir(db)),
        bind_ports=(port,),
        connect_ports=otlp_ports(),
        datagrams=_resolver_needed(),
        socket_owners=True,  # the guard keys a loopback peer by the local user owning its socket
    )


def _resolver_needed() -> bool:
    """An OTLP endpoint named by a host name needs DNS (telemetry on only)."""
    return resolver_needed(otlp_endpoints())


def confine_portal(data_dir: Path, port: int) -> None:
    confine(portal_policy(data_dir, port), SETTING)


def confine_service(db_path: Path, port: int) -> None:
    db = db_path.resolve()
    # Nothing is created in a folder others can write: confine refuses to start there.
    if shared_write_scope(db) is None:
        prepare_database_files(db)
    confine(service_policy(db, port), SETTING)
