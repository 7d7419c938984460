"""DAG-folder integrity and the spark-submit command lines the DAGs will really run."""

from __future__ import annotations

import ast
import datetime as dt
import json
import sys
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

from jobs.spark_conf import SmallDayConf

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
sys.path.insert(0, str(DAGS))

import dag_factory  # noqa: E402  (lives in the DAG folder, as Airflow imports it)
import wirelake_alerts  # noqa: E402
import wirelake_tasks  # noqa: E402
from airflow.sdk import CronDataIntervalTimetable  # noqa: E402
from airflow.timetables.base import TimeRestriction  # noqa: E402

FORBIDDEN_IN_DAGS = {"pyspark", "wirecodecs", "great_expectations"}


@pytest.fixture(scope="module")
def dagbag(monkeypatch_module) -> DagBag:
    return DagBag(dag_folder=str(DAGS))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WIRELAKE_DATA", "/lake")
        yield patch


def test_dag_folder_imports_cleanly(dagbag):
    assert dagbag.import_errors == {}
    assert "wirelake_kafka" in dagbag.dags


def test_every_dag_is_operable(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags and "wirelake" in dag.tags, dag_id
        assert dag.doc_md, dag_id
        source_dag = dag_id != "wirelake_report"  # the report runs on Assets, without Spark
        if source_dag:
            assert dag.catchup is True, dag_id  # backfills of missed days
            assert isinstance(dag.timetable, CronDataIntervalTimetable), dag_id
        for task in dag.tasks:
            assert task.owner and task.owner != "airflow", (dag_id, task.task_id)
            assert task.retries >= 1, (dag_id, task.task_id)
            assert task.execution_timeout is not None, (dag_id, task.task_id)
            callbacks = task.on_failure_callback
            assert any(isinstance(c, wirelake_alerts.AlertLogNotifier) for c in callbacks)
            if source_dag and task.task_id != "wait_for_landing":
                assert task.pool == "wirelake_spark", (dag_id, task.task_id)
                assert isinstance(task, wirelake_tasks.SparkJobOperator), (dag_id, task.task_id)


def test_run_for_day_d_starts_when_d_has_ended(dagbag):
    """Data intervals: the first run covers the start date and may start a day later."""
    from airflow.serialization.encoders import coerce_to_core_timetable

    timetable = coerce_to_core_timetable(dagbag.dags["wirelake_kafka"].timetable)
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    first = timetable.next_dagrun_info(
        last_automated_data_interval=None, restriction=TimeRestriction(start, None, True)
    )
    assert first.logical_date == start
    assert first.data_interval.end == dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    assert first.run_after == dt.datetime(2026, 11, 2, tzinfo=dt.UTC)


def test_tables_are_declared_as_assets(dagbag):
    kafka = dagbag.dags["wirelake_kafka"]
    assert [a.uri for a in kafka.get_task("decode").outlets] == ["wirelake://kafka/kafka"]
    assert [a.uri for a in kafka.get_task("validate").outlets] == [
        "wirelake://kafka/kafka/validated"
    ]
    cernan = dagbag.dags["wirelake_cernan"]
    assert [a.uri for a in cernan.get_task("decode").outlets] == [
        "wirelake://cernan/cernan",
        "wirelake://cernan/cernan_packets",
    ]
    assert [a.uri for a in cernan.get_task("validate_cernan_packets").outlets] == [
        "wirelake://cernan/cernan_packets/validated"
    ]


def test_permanent_exit_codes_are_the_jobs_own():
    from jobs import cli

    assert set(wirelake_tasks.PERMANENT_EXIT_CODES) == set(cli.PERMANENT_EXIT_CODES)
    assert cli.EXIT_TRANSIENT not in wirelake_tasks.PERMANENT_EXIT_CODES


def test_exit_code_as_the_spark_submit_hook_states_it():
    # SparkSubmitHook.submit: f"Cannot execute: {cmd}. Error code is: {returncode}."
    error = RuntimeError("Cannot execute: spark-submit --master local[2] x.py. Error code is: 2.")
    assert wirelake_tasks.exit_code(error) == 2
    assert wirelake_tasks.exit_code(RuntimeError("Cannot execute: x. Error code is: -9.")) == -9
    assert wirelake_tasks.exit_code(RuntimeError("No driver id is known")) is None


def test_pool_command_sizes_the_pool_from_the_config():
    config = dag_factory.load_config(DAGS / "sources.yaml")
    command = dag_factory.pool_command(config)
    assert command[:5] == ["airflow", "pools", "set", "wirelake_spark", "1"]
    config["defaults"]["spark"]["pool_slots"] = 3
    assert dag_factory.pool_command(config)[4] == "3"


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


def _rendered(dagbag, task_id: str) -> wirelake_tasks.SparkJobOperator:
    """The kafka DAG's task with its templates rendered for day 2026-11-20: the fields the
    Airflow UI shows as the task's rendered templates, from which it runs spark-submit."""
    task = dagbag.dags["wirelake_kafka"].get_task(task_id)
    context = {"ds": "2026-11-20", "logical_date": dt.datetime(2026, 11, 20, tzinfo=dt.UTC)}
    task.render_template_fields(context)
    return task


def test_decode_command_line(dagbag):
    task = _rendered(dagbag, "decode")
    assert task.conf["spark.sql.session.timeZone"] == "UTC"
    assert task.application == str(ROOT / "jobs" / "decode.py")
    assert task.application_args == [
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
        "--retention-hours", "168",
    ]  # fmt: skip
    assert task.name == "wirelake-decode-kafka-2026-11-20"
    # job_conf.decode over conf: the quick JIT tier for the job whose JVM moves no rows
    assert task.conf["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def test_validate_command_line(dagbag):
    task = _rendered(dagbag, "validate")
    assert task.application == str(ROOT / "jobs" / "validate.py")
    assert task.application_args == [
        "--source", "kafka",
        "--suite", "kafka",
        "--date", "2026-11-20",
        "--warehouse", "/lake/warehouse",
        "--reports", "/lake/reports",
        "--param", "crc_error_budget=0.05",
        "--param", "max_clock_skew_minutes=10",
        "--param", "max_lateness_hours=24",
    ]  # fmt: skip
    assert task.conf["spark.driver.extraJavaOptions"] == "-XX:+UseSerialGC"  # conf as it is
    # job_conf.validate over conf: shuffles in parts small enough to keep every core busy
    assert task.conf["spark.sql.adaptive.coalescePartitions.parallelismFirst"] == "false"


def test_only_the_validate_job_takes_a_small_day_conf(dagbag):
    validate, decode = _rendered(dagbag, "validate"), _rendered(dagbag, "decode")
    assert decode.small_day is None  # the decode runs before its day's size is counted
    assert validate.small_day.warehouse == "/lake/warehouse"
    assert validate.small_day.conf.below_bytes > 0
    assert validate.small_day.conf.conf == {
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    }


@pytest.mark.parametrize(("landed", "added"), [(None, {}), (999, {"k": "small"}), (1000, {})])
def test_a_day_below_the_size_takes_the_small_day_conf(tmp_path, landed, added):
    small = wirelake_tasks.SmallDay(str(tmp_path), "kafka", SmallDayConf(1000, {"k": "small"}))
    task = wirelake_tasks.SparkJobOperator(task_id="validate", application="x.py", small_day=small)
    if landed is not None:  # None: the day has no decode manifest
        manifest = tmp_path / "_manifests" / "kafka" / "dt=2026-11-20" / "manifest.json"
        manifest.parent.mkdir(parents=True)
        manifest.write_text(json.dumps({"totals": {"bytes_total": landed}}))
    assert task.day_conf("2026-11-20") == added


def test_cluster_master_comes_from_the_connection_only(dagbag):
    """No task names a master of its own, so spark-submit's is the Spark connection's
    (local[2] or a cluster's spark://host:port)."""
    for dag in dagbag.dags.values():
        for task in dag.tasks:
            if isinstance(task, wirelake_tasks.SparkJobOperator):
                assert "spark.master" not in task.conf, (dag.dag_id, task.task_id)
                assert "--master" not in task.application_args, (dag.dag_id, task.task_id)


def test_landing_check_sees_the_marker(tmp_path):
    assert not wirelake_tasks.landing_complete(str(tmp_path), "_SUCCESS")
    (tmp_path / "_SUCCESS").touch()
    assert wirelake_tasks.landing_complete(str(tmp_path), "_SUCCESS")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"decode": {"error_policy": "ignore"}}, "error_policy"),
        ({"decode": {"max_error_rate": 2}}, "max_error_rate"),
        ({"decode": {"max_bad_byte_rate": -0.1}}, "max_bad_byte_rate"),
        ({"decode": {"max_bad_byte_rate": True}}, "max_bad_byte_rate"),
        ({"decode": {"retention_hours": -1}}, "retention_hours"),
        ({"decode": {"split_bytes": 0}}, "split_bytes must be a whole number >= 1, not 0"),
        ({"decode": {"split_bytes": "128m"}}, "split_bytes"),
        ({"decode": {"split_bytes": 1.5}}, "split_bytes"),
        ({"decode": {"partitions": True}}, "partitions must be a whole number >= 1, not True"),
        ({"decode": {"partitions": -2}}, "partitions"),
        ({"validate": {}}, "suite"),
        ({"validate": []}, "suite"),
        ({"validate": [{"suite": "kafka"}, {"suite": "kafka"}]}, "twice"),
        ({"envelopes": "kafka"}, "unknown key"),
        ({"alerts": [{"type": "pager"}]}, "unknown notifier type 'pager'"),
        ({"alerts": [{"type": "email"}]}, "alerts"),
    ],
)
def test_bad_config_is_rejected_with_a_clear_message(tmp_path, patch, message):
    import yaml

    config = yaml.safe_load((DAGS / "sources.yaml").read_text())
    if "alerts" in patch:
        config.update(patch)
    else:
        config["sources"]["kafka"].update(patch)
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(dag_factory.ConfigError, match=message):
        dag_factory.load_config(path)


def test_work_unit_settings_reach_the_decode_command_line(tmp_path, monkeypatch_module):
    """`decode.split_bytes` and `decode.partitions` of a source become the decode job's
    `--split-bytes` and `--partitions`; a source without them passes neither (the job's
    defaults apply, as in test_decode_command_line)."""
    import yaml

    config = yaml.safe_load((DAGS / "sources.yaml").read_text())
    kafka, heka = config["sources"]["kafka"], config["sources"]["heka"]
    kafka["decode"].update(split_bytes=67108864, partitions=6)
    heka["decode"]["split_bytes"] = 1048576
    config["sources"] = {"kafka": kafka, "heka": heka}
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    dags = dag_factory.build_dags(path)

    def flags(dag_id: str) -> dict[str, str]:
        args = dags[dag_id].get_task("decode").application_args
        return {flag: args[args.index(flag) + 1] for flag in ("--split-bytes", "--partitions")
                if flag in args}  # fmt: skip

    assert flags("wirelake_kafka") == {"--split-bytes": "67108864", "--partitions": "6"}
    assert flags("wirelake_heka") == {"--split-bytes": "1048576"}


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
    options = decode.application_args[decode.application_args.index("--options") + 1]
    assert json.loads(options) == {"keys_file": "/lake/secrets/keys.json"}
    assert "names=/lake" in dag.get_task("validate_other").application_args
    assert "crc_error_budget=0.5" in dag.get_task("validate_kafka").application_args


def _sensor(landing) -> wirelake_tasks.LandingSensor:
    return wirelake_tasks.LandingSensor(
        task_id="wait", landing=str(landing), marker="_SUCCESS", lateness_hours=2, timeout_hours=12
    )


def test_landing_window_closes_after_day_end_lateness_and_timeout():
    assert wirelake_tasks.landing_deadline("2026-11-20", 2, 12) == dt.datetime(
        2026, 11, 21, 14, tzinfo=dt.UTC
    )


def test_past_day_without_marker_is_skipped_as_no_landing(tmp_path):
    from airflow.sdk.exceptions import AirflowSkipException

    with pytest.raises(AirflowSkipException) as skipped:
        _sensor(tmp_path).poke({"ds": "2020-01-02"})
    assert str(skipped.value) == (
        f"no landing at {tmp_path} (marker _SUCCESS): its window closed at 2020-01-03 14:00 UTC"
    )
    (tmp_path / "_SUCCESS").touch()  # a late landing of a past day is still processed
    assert _sensor(tmp_path).poke({"ds": "2020-01-02"}) is True


def test_open_window_keeps_waiting_and_names_what_it_waits_for(tmp_path, capsys):
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert _sensor(tmp_path).poke({"ds": today}) is False
    assert f"waiting for marker _SUCCESS in {tmp_path}" in capsys.readouterr().out  # structlog


def test_alert_reason_is_the_jobs_own_failure_record():
    # SparkSubmitHook's message with spark-submit's log tail (lines stripped); the job logs
    # "%(asctime)s %(levelname)s %(name)s: decode SRC dt=D failed: REASON" (jobs/cli.py)
    error = RuntimeError(
        "Cannot execute: spark-submit --master local[2] decode.py. Error code is: 1.\n"
        "Last spark-submit output:\n"
        "2026-11-21 00:05:01,002 INFO wirelake.decode: planned 4 units\n"
        "2026-11-21 00:05:09,120 ERROR wirelake.decode: decode kafka dt=2026-11-20 failed: "
        "bad frames 1/383 = 0.26% over max_error_rate 0%\n"
        "first bad: orders-0/0.log@5120 corrupt_length: length 9999 over the file\n"
        "26/11/21 00:05:09 INFO SparkContext: Successfully stopped SparkContext"
    )
    assert wirelake_alerts.job_reason(error) == (
        "decode kafka dt=2026-11-20 failed: bad frames 1/383 = 0.26% over max_error_rate 0%\n"
        "first bad: orders-0/0.log@5120 corrupt_length: length 9999 over the file"
    )
    assert wirelake_alerts.job_reason(ValueError("no such file\nmore")) == "no such file"


def test_report_runs_after_every_validated_table_or_daily(dagbag):
    from airflow.sdk import AssetOrTimeSchedule

    report = dagbag.dags["wirelake_report"]
    assert isinstance(report.timetable, AssetOrTimeSchedule)
    uris = {asset.uri for asset in report.timetable.asset_condition.objects}
    config = dag_factory.load_config()
    checked = {
        f"wirelake://{name}/{entry.get('table', name)}/validated"
        for name, source in config["sources"].items()
        for entry in dag_factory.validations(source)
    }
    assert uris == checked
    assert report.timetable.timetable.expression == "0 6 * * *"


def test_the_decode_job_never_takes_a_small_day_conf():
    """Its day is not counted until it has run, whatever small_day lists."""
    spark = {"small_day": {"below_bytes": 10, "job_conf": {"decode": {"k": "v"}, "x": {}}}}
    assert SmallDayConf.of(spark, "decode") is None
    assert SmallDayConf.of(spark, "x") is None  # an empty conf adds nothing
    assert SmallDayConf.of({}, "validate") is None
