"""TLS files named in options, on the Spark standalone cluster: given as paths relative to
the driver's working directory (where the executors, under their workers, have another),
they are read on the driver and travel with the tasks, so the source, the sink and the
barrier helper work over TLS; a file missing on the driver is refused there, naming the
option and the path."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_standalone import check_exactly_once

import tubemq
from tubemq.cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "spark_tls"


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("tls-cluster"))
    cluster.up(topics=[TOPIC], partitions=2, tls=True)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def relative(tls_cluster: LocalCluster, tmp_path: Path) -> dict[str, Any]:
    """TLS settings whose files are named relative to the working directory the driver
    (this process, its JVM and the JVM's Python workers) runs in; the executors, under
    their workers, run elsewhere, so these paths name nothing there."""
    cert, key = tls_cluster.tls_client_files
    names = {}
    for source, option in (
        (tls_cluster.tls_ca_file, "tls_ca_file"),
        (cert, "tls_cert_file"),
        (key, "tls_key_file"),
    ):
        copy = tmp_path / Path(source).name
        shutil.copy(source, copy)
        names[option] = os.path.relpath(copy)
        assert not os.path.isabs(names[option])
    return {"tls_enable": True, **names}


def _options(cluster: LocalCluster, relative: dict[str, Any]) -> dict[str, str]:
    return {
        "master": cluster.master_tls_address,
        **{
            f"tubemq.{key}": str(value).lower() if value is True else str(value)
            for key, value in relative.items()
        },
    }


def _produce(
    cluster: LocalCluster, relative: dict[str, Any], mark: str, count: int
) -> dict[int, bytes]:
    values = [f"{mark}-{index}".encode() for index in range(count)]
    with tubemq.Producer(master=cluster.master_tls_address, **relative) as producer:
        producer.publish(TOPIC)
        futures = [producer.send_async(TOPIC, value) for value in values]
        producer.flush(timeout=60)
    return {f.result().message_id: v for f, v in zip(futures, values)}


def test_the_source_sink_and_barrier_helper_work_over_tls_with_relative_paths(
    cluster_spark: Any, tls_cluster: LocalCluster, relative: dict[str, Any]
) -> None:
    from tubemq.spark import consume_in_barrier
    from tubemq.spark._offsets import query_ranges
    from tubemq.spark._options import source_options

    options = _options(tls_cluster, relative)
    start = {
        key: span.high
        for key, span in query_ranges(
            source_options({**options, "topic": TOPIC}, streaming=False)
        ).items()
    }
    mark = f"tls-{uuid.uuid4().hex[:8]}"
    acked = _produce(tls_cluster, relative, mark, 500)

    # The sink: rows written through the executors' producers.
    sunk = [f"{mark}-sink-{index}".encode() for index in range(300)]
    frame = cluster_spark.createDataFrame([(value,) for value in sunk], "value binary")
    writer = frame.write.format("tubemq").option("topic", TOPIC)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()

    # The source: a batch read from the planned start.
    reader = cluster_spark.read.format("tubemq").option("topic", TOPIC)
    for key, value in options.items():
        reader = reader.option(key, value)
    import json

    rows = reader.option("startingOffsets", json.dumps(start)).load().collect()
    check_exactly_once(
        acked, [r for r in rows if not bytes(r.value).startswith(b"%s-sink" % mark.encode())], mark
    )
    assert {bytes(r.value) for r in rows if b"-sink-" in bytes(r.value)} == set(sunk)

    # The barrier helper.
    fn, schema = consume_in_barrier(
        tls_cluster.master_tls_address,
        [TOPIC],
        starting_offsets=start,
        idle_timeout_s=4.0,
        deadline_s=90.0,
        config={**relative, "heartbeat_period_ms": 1000},
    )
    barrier_rows = (
        cluster_spark.range(0, 2, 1, numPartitions=2).mapInArrow(fn, schema, barrier=True).collect()
    )
    check_exactly_once(acked, [r for r in barrier_rows if b"-sink-" not in bytes(r.value)], mark)


def test_a_tls_file_missing_on_the_driver_is_refused_there(
    cluster_spark: Any, tls_cluster: LocalCluster, relative: dict[str, Any]
) -> None:
    options = {**_options(tls_cluster, relative), "tubemq.tls_ca_file": "missing.pem"}
    reader = cluster_spark.read.format("tubemq").option("topic", TOPIC)
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as info:
        reader.load().collect()
    text = str(info.value)
    assert "tubemq.tls_ca_file" in text and "missing.pem" in text and "driver" in text
