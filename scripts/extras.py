"""Prints requirements of pyproject.toml, one per line: of the build system (`build`), of the
project itself (`runtime`, its `dependencies`) and of optional extras (by name).

bootstrap.sh installs them with pip's ordinary build isolation before it builds our own
package without isolation and without dependencies; reading them here keeps pyproject.toml
their only owner. Usage: python scripts/extras.py [build] [runtime] [EXTRA ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib  # bootstrap runs on the machine's python3 (3.11 or newer)


def requirements(groups: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    found: list[str] = []
    for group in groups:
        if group == "build":
            found += project["build-system"]["requires"]
        elif group == "runtime":
            found += project["project"].get("dependencies", [])
        else:
            found += project["project"]["optional-dependencies"][group]
    return found


if __name__ == "__main__":
    # One line each, and nothing at all for none (not an empty line, which is no requirement).
    sys.stdout.write("".join(f"{line}\n" for line in requirements(sys.argv[1:])))
