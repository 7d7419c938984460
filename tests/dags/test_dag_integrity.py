"""DAG-folder integrity and the spark-submit command lines the DAGs will really run."""

from __future__ import annotations

import ast
import datetime as dt
import sys
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
sys.path.insert(0, str(DAGS))

import dag_factory  # noqa: E402  (lives in the DAG folder, as Airflow imports it)

FORBIDDEN_IN_DAGS = {"pyspark", "wirecodecs", "great_expectations"}


@pytest.fixture(scope="module")
def dagbag(monkeypatch_module) -> DagBag:
    return DagBag(dag_folder=str(DAGS))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WIRELAKE_DATA", "/lake")
        patch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
        yield patch


def test_dag_folder_imports_cleanly(dagbag):
    assert dagbag.import_errors == {}
    assert "wirelake_kafka" in dagbag.dags


def test_every_dag_is_operable(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags and "wirelake" in dag.tags, dag_id
        assert dag.doc_md, dag_id
        assert dag.catchup is True, dag_id  # backfills of missed days
        for task in dag.tasks:
            assert task.owner and task.owner != "airflow", (dag_id, task.task_id)
            assert task.retries >= 1, (dag_id, task.task_id)
            assert task.execution_timeout is not None, (dag_id, task.task_id)


def test_dag_files_import_no_heavy_packages():
    for path in DAGS.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN_IN_DAGS, (path.name, name)


def test_kafka_dag_shape(dagbag):
    dag = dagbag.dags["wirelake_kafka"]
    assert [t.task_id for t in dag.topological_sort()] == [
        "wait_for_landing",
        "decode",
        "validate",
    ]


def _rendered_command(dagbag, task_id: str) -> list[str]:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    task = dagbag.dags["wirelake_kafka"].get_task(task_id)
    context = {"ds": "2026-11-20", "logical_date": dt.datetime(2026, 11, 20, tzinfo=dt.UTC)}
    task.render_template_fields(context)
    hook = SparkSubmitHook(
        conf=task.conf,
        conn_id=task._conn_id,
        name=task.name,
        application_args=task.application_args,
        driver_memory=task._driver_memory,
        executor_memory=task._executor_memory,
    )
    return hook._build_spark_submit_command(task.application)


def test_decode_command_line(dagbag, monkeypatch_module):
    command = _rendered_command(dagbag, "decode")
    assert command[:3] == ["spark-submit", "--master", "local[2]"]
    assert "spark.sql.session.timeZone=UTC" in command
    app = command.index(str(ROOT / "jobs" / "decode.py"))
    assert command[app + 1 :] == [
        "--source", "kafka",
        "--envelope", "kafka",
        "--payload", "raw",
        "--date", "2026-11-20",
        "--landing", "/lake/landing/kafka/dt=2026-11-20",
        "--warehouse", "/lake/warehouse",
        "--reports", "/lake/reports",
        "--error-policy", "quarantine",
        "--max-error-rate", "0.05",
        "--max-bad-byte-rate", "0.05",
    ]  # fmt: skip
    assert "wirelake-decode-kafka-2026-11-20" in command


def test_validate_command_line(dagbag):
    command = _rendered_command(dagbag, "validate")
    app = command.index(str(ROOT / "jobs" / "validate.py"))
    assert command[app + 1 :] == [
        "--source", "kafka",
        "--suite", "kafka",
        "--date", "2026-11-20",
        "--warehouse", "/lake/warehouse",
        "--reports", "/lake/reports",
        "--param", "crc_error_budget=0.05",
        "--param", "max_clock_skew_minutes=10",
        "--param", "max_lateness_hours=24",
    ]  # fmt: skip


def test_cluster_master_comes_from_the_connection_only(dagbag, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT",
        '{"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7077}',
    )
    command = _rendered_command(dagbag, "decode")
    assert command[1:3] == ["--master", "spark://10.0.0.5:7077"]


def test_landing_check_sees_the_marker(tmp_path):
    assert not dag_factory.landing_complete(str(tmp_path), "_SUCCESS")
    (tmp_path / "_SUCCESS").touch()
    assert dag_factory.landing_complete(str(tmp_path), "_SUCCESS")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"decode": {"error_policy": "ignore"}}, "error_policy"),
        ({"decode": {"max_error_rate": 2}}, "max_error_rate"),
        ({"decode": {"max_bad_byte_rate": -0.1}}, "max_bad_byte_rate"),
        ({"decode": {"max_bad_byte_rate": True}}, "max_bad_byte_rate"),
        ({"validate": {}}, "suite"),
        ({"validate": []}, "suite"),
        ({"validate": [{"suite": "kafka"}, {"suite": "kafka"}]}, "twice"),
        ({"envelopes": "kafka"}, "unknown key"),
    ],
)
def test_bad_config_is_rejected_with_a_clear_message(tmp_path, patch, message):
    import yaml

    config = yaml.safe_load((DAGS / "sources.yaml").read_text())
    config["sources"]["kafka"].update(patch)
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(dag_factory.ConfigError, match=message):
        dag_factory.load_config(path)


def test_several_suites_and_data_root_options(tmp_path, monkeypatch_module):
    """A list of validate entries gives one validate task per suite, all after decode;
    "{data_root}" in an option or a parameter becomes the data root (secrets beside the lake)."""
    import yaml

    config = yaml.safe_load((DAGS / "sources.yaml").read_text())
    kafka = config["sources"]["kafka"]
    config["sources"] = {"twice": kafka}
    kafka["decode"]["options"] = {"keys_file": "{data_root}/secrets/keys.json"}
    kafka["validate"] = [
        {"suite": "kafka", "params": {"crc_error_budget": 0.5}},
        {"suite": "other", "params": {"names": "{data_root}"}},
    ]
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    dag = dag_factory.build_dags(path)["wirelake_twice"]
    decode = dag.get_task("decode")
    assert sorted(decode.downstream_task_ids) == ["validate_kafka", "validate_other"]
    assert "keys_file=/lake/secrets/keys.json" in decode.application_args
    assert "names=/lake" in dag.get_task("validate_other").application_args
    assert "crc_error_budget=0.5" in dag.get_task("validate_kafka").application_args
