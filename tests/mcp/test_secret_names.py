"""One secret-name rule (svc_serving.secret_names) for the records the client refuses and the
arguments a span never records: one word list, the union of the two former lists."""

from __future__ import annotations

import json

import pytest

from svc_mcp.core.records import SecretFreeRecord
from svc_mcp.serve.spans import REDACTED, captured
from svc_serving.secret_names import SECRET_WORDS, mentions_secret, names_secret


@pytest.mark.parametrize("word", SECRET_WORDS)
def test_every_word_is_read_both_ways(word: str) -> None:
    assert names_secret(f"session_{word}")
    assert names_secret(word.upper())
    assert mentions_secret(f"{word}_file")
    assert not names_secret(f"{word}_file")


@pytest.mark.parametrize(
    "name", ["auth_required", "authenticated", "credentialId", "credentialRef", "id", "issuer"]
)
def test_records_keep_fields_about_secrets(name: str) -> None:
    assert not names_secret(name)
    assert SecretFreeRecord.model_validate({name: "x"}).model_extra == {name: "x"}


@pytest.mark.parametrize("name", ["tokenHash", "password", "api_key", "sig", "passwd", "Cookie"])
def test_records_refuse_secret_fields(name: str) -> None:
    with pytest.raises(ValueError, match="secret-looking fields"):
        SecretFreeRecord.model_validate({name: "x"})


def test_a_span_redacts_every_name_that_mentions_a_secret() -> None:
    arguments = {
        "symbol": "ACME",
        "hash": "h",
        "envelope": {"body": {"note": "n"}, "sig": "s", "signedBy": "k"},
        "items": [{"password_hint": "p", "limit": 5}],
    }
    assert json.loads(captured(arguments)) == {
        "symbol": "ACME",
        "hash": REDACTED,
        "envelope": {"body": {"note": "n"}, "sig": REDACTED, "signedBy": REDACTED},
        "items": [{"password_hint": REDACTED, "limit": 5}],
    }
