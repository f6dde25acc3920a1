"""A local TubeMQ cluster for tests and demos: one master and one broker on loopback by
default, or several brokers and a replicated group of masters.

``LocalCluster(workdir).up(topics=[...])`` resolves the official server jars with Maven,
writes the configuration into ``workdir``, starts the JVMs on free ports, creates the
topics and returns once they are publishable and subscribable; ``brokers=``, ``masters=``
and ``host=`` choose the topology. ``tubemq cluster`` is the same from the command line.
"""

from tubemq.cluster.errors import ClusterError
from tubemq.cluster.local_cluster import LocalCluster

__all__ = ["ClusterError", "LocalCluster"]
