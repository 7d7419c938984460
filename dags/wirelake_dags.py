"""wirelake Airflow DAGs: one per source in sources.yaml (decode landed dumps, then validate).

The factory lives in dag_factory.py; this file only publishes what it builds.
"""

from dag_factory import build_dags

globals().update(build_dags())
