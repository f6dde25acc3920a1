"""The one error of the cluster tool."""


class ClusterError(Exception):
    """The local cluster could not be prepared, started, queried or stopped; says why."""
