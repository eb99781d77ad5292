"""https:// to a server that speaks plain HTTP, or http:// to one that speaks TLS, is said as that
mistake, not only "is it running?" (issue 35). Real servers on loopback: a plain HTTP one, and a
TLS one with a certificate made here."""

from __future__ import annotations

import datetime
import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from svc_mcp.cli import main as svc_mcp_cli
from tests.mcp.conftest import run_in_process


def certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    made = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    cert, key_file = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key_file


def serving(tls: Path | None = None) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*certificate(tls))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def plain_port() -> Iterator[int]:
    yield from serving()


@pytest.fixture
def tls_port(tmp_path: Path) -> Iterator[int]:
    yield from serving(tmp_path)


def told(base_url: str) -> str:
    done = run_in_process(svc_mcp_cli.main, ["get_system"], {"SERVICE_API_BASE": base_url})
    assert done.returncode == 8, done.stderr
    return done.stderr


def test_https_to_a_plain_http_server_says_so(plain_port: int) -> None:
    said = told(f"https://127.0.0.1:{plain_port}")
    assert "it answered in plain HTTP, not TLS: is it http://, not https://?" in said


def test_http_to_a_tls_server_asks_about_https(tls_port: int) -> None:
    said = told(f"http://127.0.0.1:{tls_port}")
    assert "does it speak https (use https://)?" in said


def test_nothing_there_is_still_is_it_running(plain_port: int) -> None:
    said = told("http://127.0.0.1:9")
    assert "; is it running? SERVICE_API_BASE sets the address" in said
