"""Fault tests run on clusters of their own: stopping a broker or restarting a master makes
topics unusable for tens of seconds, which would disturb tests on the session cluster."""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tubemq.cluster import LocalCluster


@pytest.fixture(scope="session")
def private_cluster(tmp_path_factory: pytest.TempPathFactory):
    """``with private_cluster(topics, ...) as cluster:`` in a module-scoped fixture."""
    return functools.partial(_private_cluster, tmp_path_factory)


@contextlib.contextmanager
def _private_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    topics: list[str],
    partitions: int = 4,
    master_settings: Mapping[str, str] | None = None,
    broker_env=None,
    tls: bool = False,
) -> Iterator[LocalCluster]:
    """A cluster for one test module, stopped when the module is done."""
    cluster = LocalCluster(tmp_path_factory.mktemp("private-cluster"))
    cluster.up(
        topics=topics,
        partitions=partitions,
        master_settings=master_settings,
        broker_env=broker_env,
        tls=tls,
    )
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def bind_remap_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/faults/bind_remap.c built as a shared library, for LD_PRELOAD."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build the bind_remap shim"
    library = tmp_path_factory.mktemp("shim") / "bind_remap.so"
    source = Path(__file__).parent / "bind_remap.c"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return library
