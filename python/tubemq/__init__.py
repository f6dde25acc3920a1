"""tubemq: a Python client for Apache InLong TubeMQ with a native C++ core."""
