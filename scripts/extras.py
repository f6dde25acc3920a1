"""Prints the requirements of pyproject.toml's build system and optional extras, one per line.

bootstrap.sh installs them with pip's ordinary build isolation before it builds our own
package without isolation; reading them here keeps pyproject.toml their only owner.
Usage: python scripts/extras.py [build] [EXTRA ...]
"""

from __future__ import annotations

import sys
import tomllib  # bootstrap runs on the machine's python3 (3.11 or newer)
from pathlib import Path


def requirements(groups: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    found: list[str] = []
    for group in groups:
        if group == "build":
            found += project["build-system"]["requires"]
        else:
            found += project["project"]["optional-dependencies"][group]
    return found


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
