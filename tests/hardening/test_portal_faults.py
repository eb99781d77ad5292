"""The portal stub while `catalog.json` is swapped under it between two valid versions and broken
ones: every answer is entirely version A, entirely version B or a clean error, never a mix; a
broken file is logged clearly and the last good data keeps being served."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.hardening.conftest import seconds_from_env, wait_for
from tests.support import PORT, Server, running_server

PATHS = ("/api/catalog", "/api/page")
MIN_CYCLES = 11


@e2e_fixture()
def portal(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    data = tmp_path / "data"
    stub_data.portal_folder(data)
    args = ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT]
    with running_server(args, log_path=tmp_path / "portal.log", ready_path="/api/page") as server:
        yield server, data


def versions(original: list[dict[str, Any]]) -> dict[str, bytes]:
    """Two valid catalogs that differ everywhere a response shows them, and two broken ones."""
    a = [surface | {"version": "1.0.0-A"} for surface in original]
    # B also drops the surface a public card of the page shows, so /api/page differs too.
    b = [surface | {"version": "2.0.0-B"} for surface in original if surface["id"] != "search"]
    encoded_a = json.dumps(a, indent=1).encode()
    return {
        "A": encoded_a,
        "B": json.dumps(b).encode(),
        "truncated": encoded_a[: len(encoded_a) // 2],
        "invalid": json.dumps([{"id": "x"}]).encode(),
    }


def write_atomically(path: Path, content: bytes) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)


def fetch_all(http: httpx.Client) -> dict[str, httpx.Response]:
    return {path: http.get(path) for path in PATHS}


def test_catalog_swapped_mid_flight_is_never_mixed(portal: tuple[Server, Path]) -> None:
    server, data = portal
    catalog = data / "catalog.json"
    content = versions(json.loads(catalog.read_bytes()))
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        expected: dict[str, dict[str, Any]] = {}
        for name in ("A", "B"):
            write_atomically(catalog, content[name])
            wait_for(lambda name=name: name in http.get("/api/catalog").text)  # type: ignore[misc]
            expected[name] = {path: response.json() for path, response in fetch_all(http).items()}
        assert expected["A"]["/api/page"] != expected["B"]["/api/page"]

        seen: Counter[str] = Counter()
        failures: list[str] = []
        stop = threading.Event()

        def reader() -> None:
            with httpx.Client(base_url=server.base_url, timeout=10) as own:
                while not stop.is_set():
                    for path in PATHS:
                        response = own.get(path)
                        body = response.json()
                        if response.status_code == 200 and body == expected["A"][path]:
                            seen["A"] += 1
                        elif response.status_code == 200 and body == expected["B"][path]:
                            seen["B"] += 1
                        elif response.status_code >= 500 and body.get("ok") is False:
                            seen["error"] += 1
                        else:
                            failures.append(f"{path}: {response.status_code} {response.text[:300]}")

        readers = [threading.Thread(target=reader) for _ in range(4)]
        for thread in readers:
            thread.start()
        writes: Counter[str] = Counter()
        deadline = time.monotonic() + seconds_from_env("SVC_SWAP_SECONDS", 3)
        give_up = deadline + 60
        try:
            cycle = ["A", "truncated", "B", "invalid"]
            # Each good version waits for a reader, so a loaded machine gets through fewer cycles
            # in the same seconds: the swapping goes on past the deadline until there are enough.
            while (
                (time.monotonic() < deadline or min(writes.values(), default=0) < MIN_CYCLES)
                and time.monotonic() < give_up
                and not failures
            ):
                for name in cycle:
                    if name == "truncated":
                        catalog.write_bytes(content[name])  # in place: a torn, half-written file
                    else:
                        write_atomically(catalog, content[name])
                    writes[name] += 1
                    if name in expected:
                        # A good version stays until a reader has seen it: on a loaded machine a
                        # reload takes longer than a few ms, and A would always be replaced first.
                        before = seen[name]
                        settle = time.monotonic() + 2
                        while seen[name] == before and time.monotonic() < settle and not failures:
                            time.sleep(0.001)
                    time.sleep(0.005)  # let a few requests see each version
        finally:
            stop.set()
            for thread in readers:
                thread.join(timeout=30)
        assert not failures, failures[:5]
        assert seen["A"] > 0, seen
        assert seen["B"] > 0, seen
        assert min(writes.values()) >= MIN_CYCLES, writes

        # Broken after good: the last good data stays, and the log says why.
        write_atomically(catalog, content["B"])
        wait_for(lambda: fetch_all(http)["/api/page"].json() == expected["B"]["/api/page"])
        refusal = "catalog.json: not readable JSON"
        refusals = server.log().count(refusal)
        catalog.write_bytes(content["truncated"])

        def logged_refusal() -> bool:
            http.get("/api/catalog")  # the store looks at its files when asked
            return server.log().count(refusal) > refusals

        wait_for(logged_refusal)
        for path, response in fetch_all(http).items():
            assert response.status_code == 200
            assert response.json() == expected["B"][path]
    log = server.log()
    assert "data directory changed but does not load; serving the last good data" in log
    assert "catalog.json: not readable JSON" in log
    assert "Traceback" not in log
