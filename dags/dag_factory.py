"""Builds one wirelake DAG per source from dags/sources.yaml.

Kept free of pyspark, wirecodecs and Great Expectations so that the DAG folder parses in
milliseconds (jobs.decode_settings imports nothing heavy): the DAGs only pass paths, dates
and options to spark-submit.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import DAG, Asset, CronDataIntervalTimetable
from wirelake_alerts import notifiers
from wirelake_tasks import LandingSensor, SmallDay, SparkJobOperator

from jobs.decode_settings import (
    DEFAULT_ERROR_POLICY,
    DEFAULT_RETENTION_HOURS,
    ERROR_POLICIES,
    GATES,
    with_data_root,
)
from jobs.spark_conf import SmallDayConf, job_conf, store_conf, store_env

PROJECT_ROOT = Path(__file__).resolve().parent.parent
JOBS_DIR = PROJECT_ROOT / "jobs"
# $WIRELAKE_CONFIG names another sources config (tests, a second deployment).
DEFAULT_CONFIG = Path(os.environ.get("WIRELAKE_CONFIG") or Path(__file__).parent / "sources.yaml")
SPARK_POOL = "wirelake_spark"  # every spark-submit task takes one slot of this Airflow pool

SOURCE_KEYS = {"description", "tags", "envelope", "payload", "decode", "validate", "defaults"}
# Work-unit settings under a source's `decode` -> the decode job's flag. Left out, the job's
# default applies (split_bytes: jobs.decode_settings.DEFAULT_SPLIT_BYTES; partitions: enough
# for every core and about 128 MiB each), and the flag is not passed.
WORK_UNIT_SETTINGS = {"split_bytes": "--split-bytes", "partitions": "--partitions"}


class ConfigError(ValueError):
    """The sources config is malformed; the message names the file and the offending key."""


def load_config(path: Path = DEFAULT_CONFIG) -> dict[str, Any]:
    """Read and check the sources config, so a typo fails at parse time with a clear message."""
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read sources config: {error}") from error
    if not isinstance(config, dict) or not isinstance(config.get("sources"), dict):
        raise ConfigError(f"{path}: needs a 'sources' mapping")
    for name, source in config["sources"].items():
        _check_source(path, name, source)
    try:
        notifiers(config.get("alerts"), "-", "-")
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(f"{path}: alerts: {error}") from error
    return config


def _check_source(path: Path, name: str, source: Any) -> None:
    where = f"{path}: sources.{name}"
    if not isinstance(source, dict):
        raise ConfigError(f"{where} must be a mapping")
    unknown = sorted(set(source) - SOURCE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(SOURCE_KEYS)}")
    for key in ("envelope", "decode", "validate"):
        if key not in source:
            raise ConfigError(f"{where}: missing '{key}'")
    policy = source["decode"].get("error_policy", DEFAULT_ERROR_POLICY)
    if policy not in ERROR_POLICIES:
        raise ConfigError(f"{where}.decode.error_policy is {policy!r}; use one of {ERROR_POLICIES}")
    for gate, default in GATES.items():
        rate = source["decode"].get(gate, default)
        if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 <= rate <= 1:
            raise ConfigError(f"{where}.decode.{gate} must be a number in [0, 1], not {rate!r}")
    hours = source["decode"].get("retention_hours", DEFAULT_RETENTION_HOURS)
    if not isinstance(hours, int | float) or isinstance(hours, bool) or hours < 0:
        raise ConfigError(f"{where}.decode.retention_hours must be a number >= 0, not {hours!r}")
    for key in WORK_UNIT_SETTINGS:
        value = source["decode"].get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ConfigError(f"{where}.decode.{key} must be a whole number >= 1, not {value!r}")
    entries = validations(source)
    if not entries or not all(isinstance(entry, dict) and "suite" in entry for entry in entries):
        raise ConfigError(f"{where}.validate: needs a mapping with a 'suite' (or a list of them)")
    suites = [entry["suite"] for entry in entries]
    if len(set(suites)) != len(suites):
        raise ConfigError(f"{where}.validate: suite listed twice in {suites}")


def _data_root(config: dict[str, Any]) -> str:
    """$WIRELAKE_DATA, else the config's paths.data_root, relative to the project."""
    data_root = os.environ.get("WIRELAKE_DATA") or config.get("paths", {}).get("data_root", "data")
    return data_root if "://" in data_root else str((PROJECT_ROOT / data_root).resolve())


def source_paths(config: dict[str, Any], source: str) -> dict[str, str | None]:
    """Landing (templated with {{ ds }}), warehouse and reports locations for a source: what
    its DAG passes to the jobs, and where `./wirelake backfill` reads each day's figures;
    and the Airflow connection holding the store's credentials (`store_conn_id`, None: the
    workers' own AWS_* environment)."""
    paths = config.get("paths", {})
    fields = {"data_root": _data_root(config), "source": source, "ds": "{{ ds }}"}
    return {
        **{
            key: paths.get(key, default).format(**fields)
            for key, default in (
                ("landing", "{data_root}/landing/{source}/dt={ds}"),
                ("warehouse", "{data_root}/warehouse"),
                ("reports", "{data_root}/reports"),
            )
        },
        "store_conn_id": paths.get("store_conn_id"),
    }


def _pairs(flag: str, mapping: dict[str, Any], data_root: str) -> list[str]:
    """`flag key=value` per entry, "{data_root}" in a value made the data root."""
    args: list[str] = []
    for key, value in sorted(mapping.items()):
        args += [flag, f"{key}={with_data_root(value, data_root)}"]
    return args


def _work_units(decode: dict[str, Any]) -> list[str]:
    """The source's `decode.split_bytes` and `decode.partitions` as the decode job's flags
    (none for a setting left out)."""
    args: list[str] = []
    for key, flag in WORK_UNIT_SETTINGS.items():
        if decode.get(key) is not None:
            args += [flag, str(decode[key])]
    return args


def _options(options: dict[str, Any], data_root: str) -> list[str]:
    """A source's decoder options as the one JSON argument of the decode job (none when the
    source sets none), "{data_root}" in a value made the data root."""
    if not options:
        return []
    return ["--options", json.dumps(with_data_root(options, data_root), sort_keys=True)]


def validations(source: dict[str, Any]) -> list[dict[str, Any]]:
    """The source's `validate` entries: one mapping, or a list of them (one suite each)."""
    validate = source["validate"]
    return validate if isinstance(validate, list) else [validate]


def pool_slots(config: dict[str, Any]) -> int:
    """Size of the Spark pool: how many Spark applications may run at once."""
    return int(config.get("defaults", {}).get("spark", {}).get("pool_slots", 1))


def _asset(source: str, table: str, suffix: str = "") -> Asset:
    """The Airflow Asset of a table (or of its checked state), for data-aware schedules."""
    return Asset(name=f"wirelake_{table}{suffix}", uri=f"wirelake://{source}/{table}{suffix}")


def validated_assets(config: dict[str, Any]) -> list[Asset]:
    """The "validated" Asset of every table the sources' suites check (the report's schedule)."""
    return [
        _asset(name, table, "/validated")
        for name, source in config["sources"].items()
        for table in dict.fromkeys(entry.get("table", name) for entry in validations(source))
    ]


def _spark_task(
    task_id: str,
    job: str,
    args: list[str],
    source: str,
    settings: dict,
    outlets: list[Asset],
    paths: dict[str, str | None],
) -> Any:
    """A spark-submit of `job`, with `spark.small_day`'s conf on a small day (read from the
    day's decode manifest in the warehouse) where the job has one, and the store's
    credentials from connection `paths["store_conn_id"]` where there is one."""
    spark = settings.get("spark", {})
    warehouse = paths["warehouse"]
    small_conf = SmallDayConf.of(spark, Path(job).stem)
    return SparkJobOperator(
        small_day=SmallDay(warehouse, source, small_conf) if small_conf else None,
        task_id=task_id,
        pool=SPARK_POOL,
        outlets=outlets,
        application=str(JOBS_DIR / job),
        application_args=args,
        conn_id=settings.get("spark_conn_id", "spark_default"),
        name=f"wirelake-{task_id}-{source}-{{{{ ds }}}}",
        conf={**store_conf(Path(job).stem, warehouse), **job_conf(spark, Path(job).stem)},
        env_vars=store_env(Path(job).stem, warehouse),
        store_conn_id=paths["store_conn_id"],
        driver_memory=spark.get("driver_memory"),
        executor_memory=spark.get("executor_memory"),
        py_files=spark.get("py_files"),
    )


def build_dag(name: str, source: dict[str, Any], config: dict[str, Any]) -> DAG:
    """One daily DAG: wait for the landing marker, decode to Parquet, validate the partition."""
    settings = {**config.get("defaults", {}), **source.get("defaults", {})}
    paths = source_paths(config, name)
    on_failure = notifiers(config.get("alerts"), name, paths["reports"])
    check = settings.get("landing_check", {})
    decode = source["decode"]
    suites = [entry["suite"] for entry in validations(source)]
    data_root = _data_root(config)
    default_args = {
        "owner": settings.get("owner", "data-platform"),
        # WIRELAKE_RETRIES=0 (set by the demo) makes an interactive run fail at the first
        # error instead of sleeping through retry delays.
        "retries": int(os.environ.get("WIRELAKE_RETRIES", settings.get("retries", 2))),
        "retry_delay": dt.timedelta(minutes=settings.get("retry_delay_minutes", 10)),
        "execution_timeout": dt.timedelta(minutes=settings.get("execution_timeout_minutes", 180)),
        "on_failure_callback": on_failure,
    }
    lateness, timeout = check.get("lateness_hours", 2), check.get("timeout_hours", 12)
    doc = (
        f"### wirelake: {name}\n\n{source.get('description', '')}\n\n"
        f"Envelope `{source['envelope']}`, payload `{source.get('payload', 'raw')}`. Each run "
        f"starts when its day has ended and waits for `{check.get('marker', '_SUCCESS')}` in "
        f"`{paths['landing']}` up to {lateness + timeout} h after the day's end (then the day "
        f"is skipped as *no landing*), decodes the "
        f"day into `{paths['warehouse']}/{name}/dt=<ds>/` (quarantine and manifest beside it), "
        f"then runs the expectation suite(s) {', '.join(f'`{suite}`' for suite in suites)} and "
        f"publishes the results under `{paths['reports']}/`. Backfill with "
        f"`airflow backfill create --dag-id wirelake_{name} --from-date START --to-date END`; "
        f"a rerun replaces only its own day's partition."
    )
    with DAG(
        dag_id=f"wirelake_{name}",
        description=f"Decode and validate the daily {name} landing",
        doc_md=doc,
        schedule=CronDataIntervalTimetable(settings.get("schedule", "0 0 * * *"), timezone="UTC"),
        start_date=dt.datetime.fromisoformat(str(settings["start_date"])).replace(tzinfo=dt.UTC),
        catchup=settings.get("catchup", True),
        max_active_runs=settings.get("max_active_runs", 3),
        default_args=default_args,
        tags=["wirelake", *source.get("tags", [])],
    ) as dag:
        poke_interval = check.get("poke_interval_seconds", 300)
        wait = LandingSensor(
            task_id="wait_for_landing",
            landing=paths["landing"],
            marker=check.get("marker", "_SUCCESS"),
            lateness_hours=lateness,
            timeout_hours=timeout,
            store_conn_id=paths["store_conn_id"],
            mode="reschedule",
            poke_interval=poke_interval,
            # a backstop only: the sensor skips the day itself when its window closes
            timeout=(lateness + timeout + 24) * 3600,
        )
        decode_args = [
            "--source", name,
            "--envelope", source["envelope"],
            "--payload", source.get("payload", "raw"),
            "--date", "{{ ds }}",
            "--landing", paths["landing"],
            "--warehouse", paths["warehouse"],
            "--reports", paths["reports"],
            "--error-policy", decode.get("error_policy", DEFAULT_ERROR_POLICY),
            "--max-error-rate", str(decode.get("max_error_rate", GATES["max_error_rate"])),
            "--max-bad-byte-rate",
            str(decode.get("max_bad_byte_rate", GATES["max_bad_byte_rate"])),
            "--retention-hours", str(decode.get("retention_hours", DEFAULT_RETENTION_HOURS)),
            *_work_units(decode),
            *_options(decode.get("options", {}), data_root),
        ]  # fmt: skip
        tables = list(dict.fromkeys(entry.get("table", name) for entry in validations(source)))
        outlets = [_asset(name, table) for table in tables]
        decoded = wait >> _spark_task(
            "decode", "decode.py", decode_args, name, settings, outlets, paths
        )
        for entry in validations(source):
            validate_args = [
                "--source", name,
                "--suite", entry["suite"],
                "--date", "{{ ds }}",
                "--warehouse", paths["warehouse"],
                "--reports", paths["reports"],
                *_pairs("--param", entry.get("params", {}), data_root),
            ]  # fmt: skip
            task_id = "validate" if len(suites) == 1 else f"validate_{entry['suite']}"
            checked = [_asset(name, entry.get("table", name), "/validated")]
            decoded >> _spark_task(
                task_id, "validate.py", validate_args, name, settings, checked, paths
            )
    return dag


def build_dags(path: Path = DEFAULT_CONFIG) -> dict[str, DAG]:
    config = load_config(path)
    return {
        dag.dag_id: dag
        for dag in (build_dag(name, source, config) for name, source in config["sources"].items())
    }


def pool_command(config: dict[str, Any]) -> list[str]:
    """The command that creates (or resizes) the Spark pool from the config; Airflow needs
    the pool before the scheduler can start any spark-submit task."""
    description = "wirelake: Spark applications at once (sources.yaml defaults.spark.pool_slots)"
    return ["airflow", "pools", "set", SPARK_POOL, str(pool_slots(config)), description]


if __name__ == "__main__":  # python dags/dag_factory.py pool: create the Spark pool
    import subprocess
    import sys

    if sys.argv[1:] != ["pool"]:
        sys.exit("usage: python dags/dag_factory.py pool")
    sys.exit(subprocess.call(pool_command(load_config(DEFAULT_CONFIG))))
