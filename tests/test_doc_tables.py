"""Every Markdown table of the README, the docs and the committed results is well formed.

A table whose rows have more or fewer cells than its header renders as garbage on GitHub and PyPI (the
README once put thirteen-cell rows of figures under a four-column header). Cells are split as GitHub
splits them: on every ``|`` that is not escaped as ``\\|``, code spans included.
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted(
    {
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks" / "results").rglob("*.md"),
    }
)
SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def cells(line: str) -> list[str]:
    """The cells of a table row: split on unescaped pipes, outer pipes dropped."""
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") and not text.endswith("\\|") else text
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", text)]


def tables(path: pathlib.Path) -> list[tuple[int, list[str]]]:
    """``(line number of the header, the table's lines)`` of every table outside code fences."""
    lines = path.read_text().splitlines()
    found, in_fence, index = [], False, 0
    while index < len(lines):
        line = lines[index]
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and "|" in line and index + 1 < len(lines) and SEPARATOR.match(lines[index + 1]):
            end = index + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            found.append((index + 1, lines[index:end]))
            index = end
            continue
        index += 1
    return found


def test_the_pages_have_tables() -> None:
    assert len(tables(ROOT / "README.md")) >= 4
    assert sum(len(tables(page)) for page in PAGES) >= 20


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_every_row_has_as_many_cells_as_its_header(page: pathlib.Path) -> None:
    for start, lines in tables(page):
        width = len(cells(lines[0]))
        assert len(cells(lines[1])) == width, f"{page.name}:{start + 1}: the separator has another width"
        for offset, row in enumerate(lines[2:], start=start + 2):
            assert len(cells(row)) == width, f"{page.name}:{offset}: {len(cells(row))} cells under {width}: {row}"


def test_a_bad_table_is_caught(tmp_path: pathlib.Path) -> None:
    page = tmp_path / "bad.md"
    page.write_text("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n| `x \\| y` | 2 |\n")
    (start, lines), = tables(page)
    assert [len(cells(line)) for line in lines] == [2, 2, 3, 2]
