"""Results pages a script writes part of: the script rewrites its part and keeps the report around it."""

from __future__ import annotations

import pathlib

from benchmark_scripts import BENCHMARKS, load_benchmark


def test_a_script_rewrites_only_its_part_of_a_results_page(tmp_path: pathlib.Path) -> None:
    timing = load_benchmark("_timing")
    start, end = timing.GENERATED
    page = tmp_path / "page.md"
    fresh = timing.write_generated(page, "| a |\n|---|\n| 1 |\n", "`python make.py`")
    assert fresh == f"# `python make.py`\n\n{start}\n| a |\n|---|\n| 1 |\n{end}\n"
    page.write_text(fresh.replace("# `python make.py`", "# A report\n\n**Question.** Why?") + "\n**Reading.** So.\n")
    text = timing.write_generated(page, "| a |\n|---|\n| 2 |", "`python make.py`")
    assert text.startswith("# A report\n\n**Question.** Why?\n") and text.endswith(f"{end}\n\n**Reading.** So.\n")
    assert "| 2 |" in text and "| 1 |" not in text


def test_the_pages_the_docs_include_by_section_have_their_markers() -> None:
    start, end = load_benchmark("_timing").GENERATED
    docs = (BENCHMARKS.parent / "docs" / "benchmarks.md").read_text()
    for page in ("benchmarks/results/tuning/matrix.md",):
        assert f'--8<-- "{page}:generated"' in docs
        text = (BENCHMARKS.parent / page).read_text()
        assert text.index(start) < text.index(end)
