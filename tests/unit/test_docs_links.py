"""Every relative link in README.md and docs/*.md leads to a file in the repository, and every
`#anchor` to a heading of that file (GitHub's heading slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def links(page: Path) -> list[str]:
    text = INLINE_CODE.sub("", FENCE.sub("", page.read_text()))
    return [m.group(1) for m in LINK.finditer(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if match := re.match(r"#{1,6}\s+(.*)", line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def problems(page: Path, root: Path = ROOT) -> list[str]:
    out = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: are not checked
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif root not in dest.parents and dest != root:
            out.append(f"{target}: outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target}: no heading #{anchor} in {dest.name}")
    return out


def test_docs_exist() -> None:
    assert (ROOT / "docs" / "README.md").exists()
    assert len(PAGES) > 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert problems(page) == []


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n[ok](#title) [bad](#nope) [gone](missing.md)\n")
    assert problems(page, tmp_path) == [
        "#nope: no heading #nope in page.md",
        "missing.md: no such file",
    ]


def test_slugs_follow_github() -> None:
    assert slug("`weir dev` and `weir start`") == "weir-dev-and-weir-start"
    assert slug("12. Signatures and keys") == "12-signatures-and-keys"
    assert slug("`Context`, `ContextSync`") == "context-contextsync"


def test_every_public_sdk_name_is_documented() -> None:
    import weir.sdk

    reference = (ROOT / "docs" / "sdk.md").read_text()
    missing = [name for name in weir.sdk.__all__ if f"`{name}" not in reference]
    assert missing == []
