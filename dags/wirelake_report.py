"""wirelake's daily data-quality report: the Airflow DAG built by report_factory.py."""

from report_factory import build_report_dag

wirelake_report = build_report_dag()
