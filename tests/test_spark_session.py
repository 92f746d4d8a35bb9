"""The session ``analyze`` makes: executors run the interpreter the command runs in, the
caps' variables go to the executors, Spark's log settings come from the file the package
ships, and ``java -version``'s answers are read right."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from dcpinspect.engines.spark.session import LOG4J, java_major, settings_for  # noqa: E402


def test_executors_run_this_interpreter(spark):
    def where(batches):
        import sys as worker_sys

        import pyarrow as pa

        import dcpinspect

        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.array([worker_sys.executable] * batch.num_rows),
                                              pa.array([dcpinspect.__file__] * batch.num_rows)],
                                             names=["python", "package"])

    got = {(r["python"], r["package"]) for r in spark.range(0, 2, 1, 2).mapInArrow(where, "python string, "
                                                                                   "package string").collect()}
    import dcpinspect

    assert got == {(sys.executable, dcpinspect.__file__)}
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.pyspark.python") == sys.executable
    assert conf.get("spark.executorEnv.PYSPARK_PYTHON") == sys.executable
    assert conf.get("spark.ui.showConsoleProgress") == "false"


def test_settings(monkeypatch):
    monkeypatch.setenv("DCPINSPECT_MAX_HELD", "16M")
    monkeypatch.setenv("DCPINSPECT_MAX_FLOWS", "5000")
    got = settings_for(None, {"spark.executor.memory": "2g"}, submitted=False)
    assert got["spark.executorEnv.DCPINSPECT_MAX_HELD"] == "16M"
    assert got["spark.executorEnv.DCPINSPECT_MAX_FLOWS"] == "5000"
    assert got["spark.master"] == "local[*]" and got["spark.executor.memory"] == "2g"
    assert f"-Dlog4j.configurationFile=file:{LOG4J}" in got["spark.driver.extraJavaOptions"]
    assert f"-Dlog4j.configurationFile=file:{LOG4J}" in got["spark.executor.extraJavaOptions"]
    assert "spark.master" not in settings_for(None, {}, submitted=True)  # spark-submit's stays
    assert settings_for("local[3]", {}, submitted=True)["spark.master"] == "local[3]"
    text = Path(LOG4J).read_text()
    assert "rootLogger.level = error" in text and "org.apache.spark.repl.Main" in text


def test_java_versions():
    assert java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_major('java version "1.8.0_392"') == 8
    assert java_major('openjdk version "21" 2023-09-19') == 21
    assert java_major("no version here") is None


def test_the_log_file_ships_with_the_package():
    """Named in the package data, so that an installed wheel has it."""
    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text()
    assert '"dcpinspect.engines.spark" = ["log4j2.properties"]' in text
    assert Path(LOG4J).parent == root / "dcpinspect" / "engines" / "spark" or os.path.exists(LOG4J)
