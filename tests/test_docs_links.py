"""Every relative link of README.md and docs/*.md leads somewhere: the file exists, and an
anchor names a heading of the page it points at (GitHub's heading ids). No Spark, no
network: links to other sites are not followed."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The page without code blocks and inline code, where brackets are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id of a heading: markup dropped, lower case, letters, digits, `_`, `-` and
    spaces kept, spaces as `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    kept = "".join(char for char in text if char in " -_" or unicodedata.category(char)[0] in "LMN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    ids = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        ids.add(base if count == 0 else f"{base}-{count}")
    return ids


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    found = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            found.append(f"{target}: no file {os.path.relpath(linked, root)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            found.append(f"{target}: no heading #{anchor} in {os.path.relpath(linked, root)}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(page: Path):
    assert broken_links(page) == []


def test_slugs_follow_github():
    assert slug("12. Decoder speed") == "12-decoder-speed"
    assert slug("3.4 Two record walks, one result") == "34-two-record-walks-one-result"
    assert slug("Row model (`hercules`, one row)") == "row-model-hercules-one-row"
    assert slug("Second round: within 2 \u00d7 the floor") == "second-round-within-2--the-floor"


def test_a_broken_link_is_found(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere) `[code](x.md)`\n")
    assert [line.split(":")[0] for line in broken_links(page, tmp_path)] == [
        "missing.md",
        "#nowhere",
    ]
