"""Where the cluster harness resolves the TubeMQ jars: TUBEMQ_MAVEN_REPO (no Maven runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tubemq.cluster import maven


@pytest.fixture
def fake_mvn(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Records each Maven command and "resolves" a server and a client jar."""
    commands: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        out = Path(next(a for a in command if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        out.mkdir(parents=True)
        for name in (f"tubemq-server-{maven.SERVER_VERSION}.jar", "tubemq-client-1.13.0.jar"):
            (out / name).write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(maven.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(maven.subprocess, "run", run)
    return commands


def test_a_named_repository_holds_the_resolution_and_the_jars(tmp_path, monkeypatch, fake_mvn):
    repo = tmp_path / "m2" / "repository"
    monkeypatch.setenv("TUBEMQ_MAVEN_REPO", str(repo))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    jars = maven.server_classpath()
    assert [command[-1] for command in fake_mvn] == [f"-Dmaven.repo.local={repo}"]
    assert jars and all(jar.is_relative_to(repo) for jar in jars)
    assert not (tmp_path / "xdg").exists()
    # Resolved once: the next call (a cluster, the Java peer tests' javac) reuses the copy.
    assert maven.server_classpath() == jars
    assert len(fake_mvn) == 1


def test_another_repository_resolves_again(tmp_path, monkeypatch, fake_mvn):
    monkeypatch.setenv("TUBEMQ_MAVEN_REPO", str(tmp_path / "one"))
    maven.server_classpath()
    monkeypatch.setenv("TUBEMQ_MAVEN_REPO", str(tmp_path / "two"))
    assert all(jar.is_relative_to(tmp_path / "two") for jar in maven.server_classpath())
    assert len(fake_mvn) == 2


def test_without_it_maven_uses_its_default_repository(tmp_path, monkeypatch, fake_mvn):
    monkeypatch.delenv("TUBEMQ_MAVEN_REPO", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    jars = maven.server_classpath()
    assert not any(arg.startswith("-Dmaven.repo.local") for arg in fake_mvn[0])
    assert all(jar.is_relative_to(tmp_path / "xdg" / "tubemq") for jar in jars)


def test_a_relative_repository_is_made_absolute(tmp_path, monkeypatch):
    # Maven runs with -f elsewhere; a relative path would mean another directory to it.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUBEMQ_MAVEN_REPO", "repo")
    assert maven.local_repository() == tmp_path / "repo"
    assert maven.cache_dir().is_relative_to(tmp_path / "repo")
