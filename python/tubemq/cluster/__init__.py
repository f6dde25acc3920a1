"""A local TubeMQ cluster (one master, one broker) on loopback, for tests and demos.

``LocalCluster(workdir).up(topics=[...])`` resolves the official server jars with Maven,
writes the configuration into ``workdir``, starts both JVMs on free ports, creates the
topics and returns once they are publishable and subscribable. ``tubemq cluster`` is the
same from the command line.
"""

from tubemq.cluster.errors import ClusterError
from tubemq.cluster.local_cluster import LocalCluster

__all__ = ["ClusterError", "LocalCluster"]
