"""No README, docs or install line tells a user to run svc-mcp from an index by name without
saying it needs a published release (or the team's own index): whoever registers an unpublished
name would run code with the user's tokens (issue 31, finding 8; issue 35, item 3)."""

from __future__ import annotations

import re

from tests.support import ROOT

# What fetches svc-mcp from an index by its name.
FROM_AN_INDEX = re.compile(
    r"uvx (?:--from )?'?svc-mcp(?:\[otel\])?'?(?:==|\s|`|$)|pip install '?svc-mcp"
    r"|uv tool install svc-mcp|pipx install svc-mcp"
)
# What makes the line honest: it says a release must be published first, or that the index is
# checked before the entry is written.
CAVEAT = re.compile(
    r"published|no release|refused|has that exact release|asks the package index", re.IGNORECASE
)
PAGES = [
    "README.md",
    "install/README.md",
    *(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")),
]
# Pages that record history, not instructions.
HISTORY = {"docs/decisions.md", "CHANGELOG.md"}


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*[-|] )", text) if p.strip()]


def test_each_promise_of_an_index_name_says_it_needs_a_release() -> None:
    unchecked = [
        f"{page}: {paragraph.strip()[:160]}"
        for page in PAGES
        if page not in HISTORY
        for paragraph in paragraphs((ROOT / page).read_text(encoding="utf-8"))
        if FROM_AN_INDEX.search(paragraph) and not CAVEAT.search(paragraph)
    ]
    assert unchecked == []


def test_the_check_does_find_a_bare_promise() -> None:
    bare = "Install it:\n\n    pip install 'svc-mcp[otel]'\n\nthen run it.\n"
    assert [p for p in paragraphs(bare) if FROM_AN_INDEX.search(p) and not CAVEAT.search(p)]
