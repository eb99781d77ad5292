"""The README is a front door: short, with every page under docs/ one link away, and every relative
link in the documentation (a file, and a heading in it) leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import ROOT

README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCUMENTS = [README, *PAGES, ROOT / "install" / "README.md", ROOT / "bench" / "results.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```$", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated one numbered."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(path: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(path))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # https:, mailto: ...
    ]


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_every_page_is_one_link_from_the_readme() -> None:
    linked = {
        (README.parent / target.split("#", 1)[0]).resolve() for target in relative_links(README)
    }
    # notes-<branch>.md: a helper's notes, waiting for the lead to fold them into a page.
    pages = [page for page in PAGES if not page.name.startswith("notes-")]
    assert [page.name for page in pages if page.resolve() not in linked] == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(document: Path) -> None:
    def leads_somewhere(target: str) -> bool:
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            return False
        return not anchor or linked.suffix != ".md" or anchor in anchors(linked)

    assert [target for target in relative_links(document) if not leads_somewhere(target)] == []


def test_each_superseded_decision_names_one_that_exists() -> None:
    """A decision a later one replaced starts with `*Superseded by "<title>" ...*`, and the
    title is the bold start of a paragraph of the log."""
    text = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    marks = re.findall(r'^\*Superseded (?:in part )?by "([^"]+)"', text, re.M)
    assert marks
    titles = {title.rstrip(".") for title in re.findall(r"\*\*(.+?)\*\*", text)}
    assert [mark for mark in marks if mark.rstrip(".") not in titles] == []
