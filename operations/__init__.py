"""The commands an operator runs, as opposed to the Spark jobs (`jobs/`) the DAGs submit:
the Airflow stack (`./wirelake up|down|status`, stack.py), backfills (backfill.py), the
demo and the sample history it writes first (demo.py, sample_history.py), Airflow commands
run one after another in one process (airflow_lane.py, the demo's lanes), and the record
of Spark's JVM classes that every job's start maps (class_archive.py). They use `jobs/`;
nothing in `jobs/` or `dags/` imports them."""
