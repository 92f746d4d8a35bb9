"""``dcpinspect analyze`` on Apache Spark (the ``spark`` extra): the ``dcpinspect`` PySpark
data source (:mod:`.source`), what a task does with its packets (:mod:`.partition`), the
session (:mod:`.session`) and the job (:mod:`.job`). Nothing here is imported by the other
commands."""
