"""Resolving the TubeMQ server's jars from Maven Central, once, into a local cache.

Maven Central holds ``tubemq-server`` 2.4.0, but neither its parent POMs nor the matching
``tubemq-core`` 2.4.0, so Maven cannot resolve its dependencies on its own. We therefore
fetch the server jar alone (``dependency:copy``, which does not read its POM) and write a
small POM of our own for the rest: the newest published ``tubemq-core``/``tubemq-client``
(1.13.0, whose parents do resolve) and the third-party libraries the server declares, at
the versions InLong's 1.13.0 build manages (``dependency:copy-dependencies``). The local
repository (``~/.m2``) makes later runs offline and fast.

``TUBEMQ_MAVEN_REPO`` names another local repository (Maven's ``-Dmaven.repo.local``). The
copied jars then live inside that repository too, so a run with an empty one resolves
everything afresh and uses nothing from ``~/.m2`` or ``~/.cache/tubemq``
(``scripts/fresh_check.sh`` relies on that).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tubemq.cluster.errors import ClusterError

SERVER_VERSION = "2.4.0"
CORE_VERSION = "1.13.0"

# (groupId, artifactId, version) of what the server needs besides the TubeMQ jars.
_THIRD_PARTY = [
    ("com.sleepycat", "je", "18.1.11"),  # BDB-JE metadata store; "provided" upstream
    ("io.prometheus", "simpleclient_httpserver", "0.14.1"),
    ("org.apache.zookeeper", "zookeeper", "3.7.2"),
    ("log4j", "log4j", "1.2.17"),
    ("org.ini4j", "ini4j", "0.5.4"),
    ("commons-io", "commons-io", "2.11.0"),
    ("org.apache.velocity", "velocity-engine-core", "2.3"),
    ("com.google.guava", "guava", "32.1.2-jre"),
    ("javax.servlet", "javax.servlet-api", "4.0.1"),
    ("org.apache.logging.log4j", "log4j-jcl", "2.17.2"),
    ("org.springframework", "spring-core", "5.3.34"),
    ("org.springframework", "spring-context", "5.3.34"),
    ("org.springframework", "spring-jdbc", "5.3.34"),
    ("org.springframework", "spring-orm", "5.3.34"),
    ("org.apache.velocity.tools", "velocity-tools-generic", "3.1"),
    ("commons-cli", "commons-cli", "1.4"),
    ("org.apache.httpcomponents", "httpclient", "4.5.13"),
    ("org.eclipse.jetty", "jetty-server", "9.4.51.v20230217"),
    ("org.eclipse.jetty", "jetty-servlet", "9.4.51.v20230217"),
    ("org.dom4j", "dom4j", "2.1.3"),
    ("com.beust", "jcommander", "1.78"),
]

# Transitive dependencies that are large and never used by the server as we run it.
_EXCLUDED = [
    ("io.opentelemetry", "*"),
    ("io.opentelemetry.javaagent", "*"),
    ("org.apache.inlong", "audit-sdk"),
    ("org.apache.inlong", "tubemq-example"),
    ("jline", "jline"),
    ("com.github.spotbugs", "*"),
    ("io.netty", "netty"),
    ("org.slf4j", "slf4j-log4j12"),
]


def _dependency(group: str, artifact: str, version: str) -> str:
    exclusions = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in _EXCLUDED
    )
    return (
        f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>\n"
    )


def _pom() -> str:
    dependencies = _dependency("org.apache.inlong", "tubemq-core", CORE_VERSION)
    dependencies += _dependency("org.apache.inlong", "tubemq-client", CORE_VERSION)
    dependencies += "".join(_dependency(*coordinates) for coordinates in _THIRD_PARTY)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>local.tubemq-python</groupId>\n"
        f"  <artifactId>tubemq-server-runtime</artifactId><version>{SERVER_VERSION}</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{dependencies}  </dependencies>\n"
        "</project>\n"
    )


REPO_ENV = "TUBEMQ_MAVEN_REPO"


def local_repository() -> Path | None:
    """The Maven local repository named by ``TUBEMQ_MAVEN_REPO``; None: Maven's default."""
    repo = os.environ.get(REPO_ENV)
    return Path(repo).expanduser().absolute() if repo else None


def cache_dir() -> Path:
    """Where the resolved jars are copied to (and found on later runs)."""
    repo = local_repository()
    if repo is not None:
        # Inside the named repository, never shared with the default one: a jar found here
        # was fetched into that repository. Maven ignores the directory (no groupId has a dot
        # in front).
        return repo / ".tubemq-python" / f"server-{SERVER_VERSION}"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tubemq" / f"server-{SERVER_VERSION}"


def server_classpath() -> list[Path]:
    """The jars that run the TubeMQ master and broker, resolving them on first use."""
    return _resolve(
        cache_dir(),
        _pom(),
        ["dependency:copy", f"-Dartifact=org.apache.inlong:tubemq-server:{SERVER_VERSION}"],
        "tubemq-server-",
    )


INLONG_COMMON_VERSION = "1.5.0"  # the newest inlong-common on Maven Central (docs/inlong.md)


def _inlong_common_pom() -> str:
    dependency = (
        "    <dependency><groupId>org.apache.inlong</groupId>"
        f"<artifactId>inlong-common</artifactId><version>{INLONG_COMMON_VERSION}</version>"
        "</dependency>\n"
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>local.tubemq-python</groupId>\n"
        f"  <artifactId>inlong-common-runtime</artifactId><version>{INLONG_COMMON_VERSION}"
        "</version>\n  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{dependency}  </dependencies>\n"
        "</project>\n"
    )


def inlong_common_classpath() -> list[Path]:
    """InLong's ``inlong-common`` and what it needs: its ``InLongMsg`` class is the
    reference encoder and decoder of InLongMsg packs in the tests."""
    return _resolve(
        cache_dir().parent / f"inlong-common-{INLONG_COMMON_VERSION}",
        _inlong_common_pom(),
        [],
        "inlong-common-",
    )


def _resolve(root: Path, pom: str, goals: list[str], expected: str) -> list[Path]:
    """Copies the jars ``pom`` depends on (plus ``goals``) into ``root/lib`` once; later
    calls with the same POM return them without running Maven."""
    lib = root / "lib"
    done = root / "resolved.ok"
    if done.exists() and done.read_text() == pom and lib.is_dir():
        return sorted(lib.glob("*.jar"))
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError(
            "Maven ('mvn') is not on PATH; it resolves the jars of the TubeMQ server "
            "and of the tests' Java peers "
            "(Debian: apt-get install maven)"
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / "pom.xml").write_text(pom)
    if lib.exists():
        shutil.rmtree(lib)
    command = [
        mvn,
        "-B",
        "-q",
        "-U",
        "-f",
        str(root / "pom.xml"),
        "dependency:copy-dependencies",
        *goals[:1],
        f"-DoutputDirectory={lib}",
        *goals[1:],
    ]
    repo = local_repository()
    if repo is not None:
        command.append(f"-Dmaven.repo.local={repo}")
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise ClusterError(
            f"resolving the jars of {root.name} failed ({' '.join(command)}):\n{tail}"
        )
    jars = sorted(lib.glob("*.jar"))
    if not any(jar.name.startswith(expected) for jar in jars):
        raise ClusterError(f"Maven finished but {lib} holds no {expected}* jar")
    done.write_text(pom)
    return jars
