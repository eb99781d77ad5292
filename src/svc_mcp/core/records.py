"""The base of both backends' record models: the one secret-field check.

A field whose name says it holds a secret is refused: payloads never carry tokens, hashes or
secrets. Unknown fields are otherwise allowed (a backend may add some).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from svc_serving.secret_names import names_secret


def refuse_secret_fields(value: Any) -> Any:
    if isinstance(value, dict):
        leaked = sorted(key for key in value if isinstance(key, str) and names_secret(key))
        if leaked:
            raise ValueError(f"the record carries secret-looking fields {leaked}; not passed on")
    return value


class SecretFreeRecord(BaseModel):
    """The one secret-field check of both backends' records: a field whose name says it holds
    a secret is refused. Unknown fields are otherwise allowed."""

    # defer_build: schemas are built on first use, so importing the models stays cheap.
    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, value: Any) -> Any:
        return refuse_secret_fields(value)
