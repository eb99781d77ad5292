"""Shared pieces of the fuzz tests: bounded hypothesis settings, JSON values, envelope checks."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=200)


def assert_envelope(response: Any) -> dict[str, Any]:
    """A JSON envelope whose `ok` matches the status, and never a 5xx."""
    assert response.status_code < 500, response.text
    body: dict[str, Any] = response.json()
    assert body["ok"] is (response.status_code < 400)
    if not body["ok"]:
        assert set(body["error"]) == {"code", "message"}
        assert isinstance(body["error"]["code"], str)
    return body
