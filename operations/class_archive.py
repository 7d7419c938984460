"""The workload whose JVM classes `./wirelake` records once into a class-data archive.

Every spark-submit starts a JVM that loads and verifies some ten thousand classes before
the job does anything; a class-data sharing archive (JDK 17's `-XX:ArchiveClassesAtExit`,
then `-XX:SharedArchiveFile`) maps them ready-made instead. `./wirelake` runs this script
under spark-submit with the first flag when `.venv/spark-classes.jsa` is missing, and
passes the second to every later driver JVM (SPARK_SUBMIT_OPTS). What runs here is what
the decode and validate jobs do, so their classes are in the archive: a Python-side
partition job, a Parquet write and read, an aggregate and a window over it. An archive
that no longer fits the JDK or Spark's jars is ignored by the JVM (start-up is then as
slow as without one); `./wirelake` records it again when it reinstalls the packages.
"""

from __future__ import annotations

import tempfile

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(scratch: str) -> None:
    """Run the jobs' kinds of work once, on a few rows written to `scratch`."""
    spark = SparkSession.builder.appName("wirelake-class-archive").getOrCreate()
    try:
        rows = spark.sparkContext.parallelize(range(1000), 2).map(lambda n: (n % 7, n)).collect()
        frame = spark.createDataFrame(rows, "k int, v long").withColumn("t", F.current_timestamp())
        frame.write.mode("overwrite").parquet(scratch)
        read = spark.read.parquet(scratch)
        read.groupBy("k").agg(F.count("*"), F.min("v"), F.max("t")).collect()
        repeats = F.count(F.lit(1)).over(Window.partitionBy(F.struct("k", "v")))
        read.withColumn("n", repeats).filter(F.col("n") > 1).count()
        read.filter(F.col("v") > 10).limit(5).collect()
    finally:
        spark.stop()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="wirelake-class-archive-") as folder:
        main(f"{folder}/table")
