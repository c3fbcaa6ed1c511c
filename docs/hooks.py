"""MkDocs hook: serves the benchmark plots of benchmarks/results/ as ``benchmarks/<name>.png``.

MkDocs only reads files under docs/; the plots stay where the benchmark scripts write them
(no copies, no symlinks) and the pages link to ``benchmarks/figure10.png`` and the like.
"""

from __future__ import annotations

import pathlib

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds every PNG under benchmarks/results/ to the site under ``benchmarks/`` (subfolders kept)."""
    for path in sorted(RESULTS.rglob("*.png")):
        name = path.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, f"benchmarks/{name}", abs_src_path=str(path)))
    return files
