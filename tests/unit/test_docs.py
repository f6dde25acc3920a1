"""The documentation builds without warnings, and its generated reference pages match the
code they are generated from."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_reference", ROOT / "docs" / "generate_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    generator = _generator()
    for name, render in generator.PAGES.items():
        committed = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert committed == render(), f"docs/{name} is stale: run python docs/generate_reference.py"


def test_every_config_key_is_documented():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    from tubemq._config import ASSIGNED_CONSUMER_SCHEMA, CONSUMER_SCHEMA, PRODUCER_SCHEMA

    for schema in (PRODUCER_SCHEMA, CONSUMER_SCHEMA, ASSIGNED_CONSUMER_SCHEMA):
        for key in schema.keys:
            assert f"| `{key}` |" in page, key


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").exists()


# A citation such as "behaviour.md §3.10", "protocol.md §5.9-5.11" or "design.md §2".
_CITATION = re.compile(r"\b(protocol|behaviour|design)\.md\s+§(\d+(?:\.\d+)*)(?:-(\d+(?:\.\d+)*))?")
_CITING_TREES = ("cpp", "bindings", "python", "proto", "tests", "scripts", "bench", "examples")
_CITING_SUFFIXES = {".cc", ".h", ".py", ".pyi", ".proto", ".sh", ".java"}


def _section_numbers(page: str) -> set[str]:
    numbers = set()
    for line in (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if heading:
            numbers.add(heading.group(1))
    return numbers


def test_every_cited_section_is_a_heading_of_our_docs():
    """The code explains itself by citing docs/protocol.md, docs/behaviour.md and
    docs/design.md by section: each cited number must be one of their headings."""
    sections = {
        page: _section_numbers(f"{page}.md") for page in ("protocol", "behaviour", "design")
    }
    assert all(sections.values())
    dangling = []
    cited = 0
    for tree in _CITING_TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.suffix not in _CITING_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for page, first, last in _CITATION.findall(text):
                for number in filter(None, (first, last)):
                    cited += 1
                    if number not in sections[page]:
                        dangling.append(f"{path.relative_to(ROOT)}: {page}.md §{number}")
    assert cited > 50  # the scan found the citations at all
    assert not dangling, dangling
