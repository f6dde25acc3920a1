"""scripts/bootstrap.sh on a fresh machine: what it installs, and how, read from its text.

The README's two commands once failed on a machine with an empty pip cache: bootstrap
installed ``.[test,spark,docs]`` with ``--no-build-isolation``, which turns isolation off for
every sdist among the dependencies too, and pyspark's sdist then found no ``wheel`` package
("invalid command 'bdist_wheel'"). A warm cache hid it (pip reused a wheel it had built
before). These tests need no network: they read the script and pyproject.toml.
``scripts/fresh_check.sh`` is the real, slow check.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+, as scripts/extras.py

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "scripts" / "bootstrap.sh"
EXTRAS = ROOT / "scripts" / "extras.py"

# Extras the README's commands do not need, each with the reason; any other extra must be
# installed by bootstrap, so that adding one forces a decision here.
NOT_BOOTSTRAPPED = {"bench": "matplotlib, for bench charts only (pip install -e '.[bench]')"}

# What the requirements of bootstrap's third-party install may come from: extras.py output.
_FROM_EXTRAS = re.compile(r"^(\$\(python3? scripts/extras\.py [^)]*\)|\$\{requirements\[@\]\})$")
_ASSIGNED = re.compile(r"^requirements=\$\(python3? scripts/extras\.py [^)]*\)$", re.MULTILINE)


def shell_words(text: str) -> list[str]:
    """The words of a shell command line; a command substitution ``$(...)``, quoted or not,
    stays one word, as the shell keeps it."""
    parts = re.split(r"(\$\([^)]*\))", text)  # odd indices: the substitutions
    held = "".join(part if i % 2 == 0 else f"@{i}@" for i, part in enumerate(parts))
    return [re.sub(r"@(\d+)@", lambda m: parts[int(m.group(1))], w) for w in shlex.split(held)]


def pip_installs(script: str) -> list[list[str]]:
    """The words after ``pip install`` of every such command in a shell script."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*", "", line)  # a comment starts at a word's beginning
        match = re.search(r"\bpip3? install\b(.*)", line)
        if match:
            commands.append(shell_words(match.group(1)))
    return commands


def extras_groups(script: str) -> list[str]:
    """The groups the script asks scripts/extras.py for."""
    calls = re.findall(r"scripts/extras\.py((?: [\w-]+)+)", script)
    assert len(calls) == 1, f"expected one call of scripts/extras.py, found {calls}"
    return calls[0].split()


def isolation_problems(script: str) -> list[str]:
    """Why a bootstrap script would not install the way a fresh machine needs, if it would not.

    Only our own package (``.``, without extras or dependencies) may be built without
    isolation; every third-party requirement comes from scripts/extras.py, never from the
    script itself, and installs with isolation.
    """
    problems = []
    for words in pip_installs(script):
        targets = [word for word in words if not word.startswith("-")]
        if "--no-build-isolation" in words:
            if targets != ["."]:
                problems.append(f"built without isolation: {targets} (only '.' may be)")
            if "--no-deps" not in words:
                problems.append(f"'--no-build-isolation' without '--no-deps': {words}")
            continue
        for target in targets:
            if target == "pip" or _FROM_EXTRAS.match(target):
                continue
            problems.append(f"requirement not read from pyproject.toml: {target!r}")
        if "${requirements[@]}" in targets and not _ASSIGNED.search(script):
            problems.append("${requirements[@]} is not the output of scripts/extras.py")
    return problems


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_only_our_own_package_is_built_without_isolation():
    assert isolation_problems(BOOTSTRAP.read_text()) == []


def test_the_check_rejects_the_install_that_failed_on_a_fresh_machine():
    old = 'python -m pip install -q --no-build-isolation ".[test,spark,docs]"\n'
    assert isolation_problems(old)
    assert isolation_problems("pip install -q pyspark\n")  # a requirement of its own
    assert isolation_problems("pip install --no-build-isolation --no-deps . pyspark\n")
    assert isolation_problems('pip install "${requirements[@]}"\n')  # from where?
    assert not isolation_problems("pip install -q $(python scripts/extras.py build test)\n")
    assert not isolation_problems("pip install --no-build-isolation --no-deps -Cx=y .\n")


def test_bootstrap_installs_third_party_packages_and_then_our_own():
    installs = pip_installs(BOOTSTRAP.read_text())
    third_party = [i for i, words in enumerate(installs) if any(map(_FROM_EXTRAS.match, words))]
    ours = [i for i, words in enumerate(installs) if "." in words]
    assert len(third_party) == 1 and len(ours) == 1, installs
    # Our build runs without isolation on what is already installed: its build tools first.
    assert third_party[0] < ours[0]


def test_bootstrap_asks_for_every_group_the_commands_need():
    groups = extras_groups(BOOTSTRAP.read_text())
    extras = pyproject()["project"]["optional-dependencies"]
    # build: our package builds without isolation; runtime: it installs with --no-deps.
    assert {"build", "runtime"} <= set(groups)
    unknown = set(groups) - {"build", "runtime"} - set(extras)
    assert not unknown, f"bootstrap asks for extras pyproject.toml lacks: {unknown}"
    left_out = set(extras) - set(groups) - set(NOT_BOOTSTRAPPED)
    assert not left_out, f"extras bootstrap leaves out (else add to NOT_BOOTSTRAPPED): {left_out}"
    assert not set(groups) & set(NOT_BOOTSTRAPPED)


def run_extras(*groups: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXTRAS), *groups], capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_extras_prints_each_groups_requirements_from_pyproject():
    project = pyproject()
    extras = project["project"]["optional-dependencies"]
    for name, wanted in extras.items():
        assert run_extras(name) == wanted, name
    assert run_extras("build") == project["build-system"]["requires"]
    assert run_extras("runtime") == project["project"].get("dependencies", [])


def test_extras_prints_exactly_what_bootstrap_installs():
    project = pyproject()
    groups = extras_groups(BOOTSTRAP.read_text())
    expected = []
    for group in groups:
        if group == "build":
            expected += project["build-system"]["requires"]
        elif group == "runtime":
            expected += project["project"].get("dependencies", [])
        else:
            expected += project["project"]["optional-dependencies"][group]
    printed = run_extras(*groups)
    assert printed == expected
    assert all(line and line == line.strip() for line in printed)  # one requirement a line


def test_extras_fails_on_an_unknown_extra():
    # bootstrap stops then (set -e on the assignment) rather than installing nothing.
    done = subprocess.run(
        [sys.executable, str(EXTRAS), "no-such-extra"], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "requirements=$(python scripts/extras.py" in BOOTSTRAP.read_text()
