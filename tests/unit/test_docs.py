"""The documentation builds without warnings, and its generated reference pages match the
code they are generated from."""

from __future__ import annotations

import importlib.util
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
