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
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


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


def make_session(master: str | None = None, conf: dict[str, str] | None = None, app: str = "dcpinspect analyze"):
    """A SparkSession (the running one if there is one: its settings stay) with the data
    source registered. ``master`` None: the one ``spark-submit`` gave, else ``local[*]``.
    Raises ``RuntimeError`` with :func:`java_problem`'s line when Java is missing or of the
    wrong version."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # started by spark-submit: its JVM is up
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise RuntimeError("analyze needs PySpark: pip install 'dcpinspect[spark]'") from None
    problem = None if submitted else java_problem()
    if problem:
        raise RuntimeError(problem)

    from .source import DcpinspectSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    log = os.path.join(tempfile.gettempdir(), "dcpinspect-log4j2.properties")
    if not os.path.exists(log):
        with open(log, "w") as f:
            f.write(_LOG4J)
    settings = {
        "spark.app.name": app,
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2048",
        "spark.sql.execution.pythonUDF.arrow.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{log}",
        "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile=file:{log}",
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
    }
    if master is not None or not submitted:
        settings["spark.master"] = master or "local[*]"
    settings.update(conf or {})
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(DcpinspectSource)
    return spark
