# ruff: noqa: PT017 (either outcome is allowed, so the refusal is checked where it is caught)
"""The portal's data files, garbled or random: loading gives a snapshot or a DataError with a
message naming the file, never another exception."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server_stub.portal.demo_data import write_demo_data
from server_stub.portal.store import TRAILS, DataError, load_snapshot
from tests.fuzz.conftest import FUZZ, JSON_VALUES

FILES = ["catalog.json", "page.json", "principals.json"] + [f"audit/{n}" for n in TRAILS.values()]
RECORD_KEYS = st.sampled_from(
    ["id", "name", "version", "channels", "governanceState", "visibility", "mcp", "web", "cli",
     "kind", "role", "email", "event", "subject", "tokenHash", "createdAt", "expiresAt", "at",
     "title", "cards", "components", "type", "surfaceId", "decision", "reason"]
)  # fmt: skip
RECORDS = st.dictionaries(RECORD_KEYS, JSON_VALUES | st.just("2026-11-21T09:30:00Z"), max_size=8)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz-files") / "data"
    write_demo_data(path)
    return path


def _content(value: Any, garble: int | None) -> bytes:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return raw[:garble] if garble is not None else raw


@FUZZ
@given(
    name=st.sampled_from(FILES),
    value=st.one_of(
        JSON_VALUES,
        st.lists(RECORDS, max_size=3),
        RECORDS,
        st.binary(max_size=100),
        st.lists(RECORDS, max_size=3).map(lambda rows: "\n".join(map(json.dumps, rows)).encode()),
    ),
    garble=st.none() | st.integers(min_value=0, max_value=60),
)
def test_any_data_file_loads_or_is_a_data_error(
    template: Path,
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    value: Any,
    garble: int | None,
) -> None:
    data = tmp_path_factory.mktemp("case") / "data"
    shutil.copytree(template, data)
    (data / name).write_bytes(_content(value, garble))
    try:
        load_snapshot(data)
    except DataError as error:
        assert str(error)
        assert name.split("/")[-1] in str(error)
    finally:
        shutil.rmtree(data.parent)


@pytest.mark.parametrize("name", FILES)
def test_a_truncated_demo_file_names_the_file(template: Path, tmp_path: Path, name: str) -> None:
    data = tmp_path / "data"
    shutil.copytree(template, data)
    original = (data / name).read_bytes()
    (data / name).write_bytes(original[: len(original) // 2] or b"{")
    with pytest.raises(DataError, match=name.split("/")[-1].replace(".", r"\.")):
        load_snapshot(data)
