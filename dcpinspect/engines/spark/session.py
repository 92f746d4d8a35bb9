"""A SparkSession for ``analyze``: the Java it needs, the Python its executors run, Arrow
settings, quiet logs, and the ``dcpinspect`` data source registered."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

#: Java versions Spark 4 runs on
JAVA_VERSIONS = (17, 21)
JAVA_PACKAGE = "openjdk-17-jre-headless"
#: Spark's own log: errors only (Spark's default prints warnings and a banner)
LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def java_problem() -> str | None:
    """Why Spark cannot start here, in one line naming the package to install; None when a
    Java it runs on is found ($JAVA_HOME's, else the one on the PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    advice = f"install Java 17 (Debian/Ubuntu: apt-get install {JAVA_PACKAGE})"
    if not java or not os.access(java, os.X_OK):
        return f"Spark needs Java and none was found{' in JAVA_HOME' if home else ''}: {advice}"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {java} ({exc}): {advice}"
    major = java_major(out.stderr + out.stdout)
    if major not in JAVA_VERSIONS:
        return (f"Spark 4 runs on Java {' or '.join(map(str, JAVA_VERSIONS))}, and {java} is Java "
                f"{major if major else 'of an unknown version'}: {advice}")
    return None


def java_major(text: str) -> int | None:
    """The major version in ``java -version``'s output (``"1.8.0_392"`` is 8, ``"17.0.15"`` 17)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def jvm_log() -> str:
    """Where the Spark JVM's own output goes (its start-up lines, its log at ERROR level)."""
    return os.path.join(tempfile.gettempdir(), f"dcpinspect-spark-{os.getuid()}.log")


def settings_for(master: str | None, conf: dict[str, str] | None, submitted: bool) -> dict[str, str]:
    """The session's settings: those analyze needs, then ``conf`` (``--spark-conf``) over them."""
    java = f"-Dlog4j.configurationFile=file:{LOG4J}"
    settings = {
        "spark.app.name": "dcpinspect analyze",
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "4096",
        "spark.sql.execution.pythonUDF.arrow.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": java,
        "spark.executor.extraJavaOptions": java,
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
    }
    # the caps (and every other DCPINSPECT_ setting) hold in executors on other machines too
    for key, value in os.environ.items():
        if key.startswith("DCPINSPECT_"):
            settings[f"spark.executorEnv.{key}"] = value
    if master is not None or not submitted:
        settings["spark.master"] = master or "local[*]"
    settings.update(conf or {})
    return settings


def make_session(master: str | None = None, conf: dict[str, str] | None = None, app: str = "dcpinspect analyze",
                 remote: str | None = None):
    """A SparkSession (the running one if there is one: its settings stay) with the data
    source registered. ``master`` None: the one ``spark-submit`` gave, else ``local[*]``;
    ``remote``: a Spark Connect server (``sc://host:port``) instead. Raises
    ``RuntimeError`` with :func:`java_problem`'s line when Java is missing or of the wrong
    version, or with the JVM's last lines when it does not start."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # started by spark-submit: its JVM is up
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise RuntimeError("analyze needs PySpark: pip install 'dcpinspect[spark]'") from None
    from .source import DcpinspectSource

    if remote is not None:
        return _remote_session(remote, conf)
    problem = None if submitted else java_problem()
    if problem:
        raise RuntimeError(problem)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = settings_for(master, conf, submitted)
    settings["spark.app.name"] = app
    from pyspark import SparkConf, SparkContext

    if SparkContext._active_spark_context is None and not submitted:
        _start_context(SparkConf().setAll(list(settings.items())))
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(DcpinspectSource)
    return spark


def _start_context(conf) -> None:
    """The SparkContext, its JVM's stdout and stderr going to :func:`jvm_log` (the JVM's
    warnings at start-up, and its log), not to the user's terminal."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    path = jvm_log()
    with open(path, "ab") as log:
        start = log.tell()
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as exc:  # noqa: BLE001 - pyspark raises its own kinds
            raise RuntimeError(f"Spark did not start ({exc}); its output: {_tail(path, start)}") from None
    SparkContext(conf=conf, gateway=gateway)


def _tail(path: str, start: int, lines: int = 5) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return path
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return " / ".join(kept) + f" (all of it in {path})" if kept else path


def _unreachable(remote: str, seconds: float = 10.0) -> str | None:
    """Why nothing answers at a ``sc://host:port`` address (None: something listens there);
    the client itself would retry for minutes."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(remote)
        host, port = parts.hostname, parts.port or 15002
    except ValueError as exc:
        return str(exc)
    if parts.scheme != "sc" or not host:
        return "expected sc://HOST:PORT"
    try:
        with socket.create_connection((host, port), timeout=seconds):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _remote_session(remote: str, conf: dict[str, str] | None):
    """A Spark Connect session on ``remote`` with the data source registered there."""
    from pyspark.sql import SparkSession

    from .source import DcpinspectSource

    problem = _unreachable(remote)
    if problem:
        raise RuntimeError(f"cannot use the Spark Connect server {remote}: {problem}")
    try:
        builder = SparkSession.builder.remote(remote)
        for key, value in {"spark.sql.execution.arrow.maxRecordsPerBatch": "4096", **(conf or {})}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.dataSource.register(DcpinspectSource)
    except ImportError as exc:
        raise RuntimeError(f"--remote needs Spark Connect's client: pip install 'dcpinspect[spark]' ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - gRPC and Spark errors alike
        raise RuntimeError(f"cannot use the Spark Connect server {remote}: {str(exc).splitlines()[0]}") from None
    return spark


def _warm(batches):
    """A task that only starts its Python worker with what analyze's tasks import."""
    import pyarrow as pa
    import pyarrow.json  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    from . import partition  # noqa: F401
    from ...families import families

    families()
    for batch in batches:
        yield pa.RecordBatch.from_arrays([pa.array([True] * batch.num_rows)], names=["ok"])


def warm_up(spark, parallelism: int | None = None) -> None:
    """Start the executors' Python workers (and what they import) before the job, so that
    the job's time is the work's and the start-up's is Spark's (a worker is reused by the
    tasks that follow it)."""
    if parallelism is None:
        try:
            parallelism = spark.sparkContext.defaultParallelism
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            parallelism = 2
    spark.range(0, parallelism, 1, parallelism).mapInArrow(_warm, "ok boolean").collect()

