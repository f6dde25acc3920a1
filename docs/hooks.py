"""MkDocs hook: the benchmarks page shows the latest committed results of ``python -m
bench`` (bench/results/latest.md and latest.png) without keeping a copy under docs/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def on_files(files: Files, config: Any) -> Files:
    chart = RESULTS / "latest.png"
    if chart.exists():
        files.append(
            File("latest.png", str(RESULTS), config["site_dir"], config["use_directory_urls"])
        )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri != "benchmarks.md":
        return markdown
    table = (RESULTS / "latest.md").read_text(encoding="utf-8")
    # The results file has its own title; the page keeps the page's.
    body = "\n".join(line for line in table.splitlines() if not line.startswith("# "))
    return markdown.replace("<!-- latest results -->", body)
