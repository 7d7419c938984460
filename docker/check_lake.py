"""The lake side of docker/check.sh, run inside the wirelake image (project packages at hand).

    python check_lake.py land DAY SOURCE...      sample day per source + the check's config
    python check_lake.py outputs DAY SOURCE...   what the stack wrote; exit 1 if incomplete

`land` writes each source's sample day with the project's own writers into
/data/landing/<source>/dt=DAY/ (with _SUCCESS) and /data/_check/sources.yaml: the project's
dags/sources.yaml with start_date DAY, so unpausing a DAG schedules exactly that day.
`outputs` reads back each source's partitions, manifest and validation reports.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import yaml

from jobs import lake, layout
from wirecodecs import samples

DATA = Path("/data")
PROJECT_CONFIG = Path("/opt/wirelake/dags/sources.yaml")
CHECK_CONFIG = DATA / "_check" / "sources.yaml"


def land(day: dt.date, sources: list[str]) -> int:
    for source in sources:
        landing = Path(layout.landing_dir(str(DATA / "landing"), source, day))
        written = samples.write_sample_day(source, landing, day)
        print(f"    sample {source}: {written.describe()} -> {landing}")
    config = yaml.safe_load(PROJECT_CONFIG.read_text())
    config["defaults"]["start_date"] = day.isoformat()
    CHECK_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CHECK_CONFIG.write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"    config {CHECK_CONFIG} (dags/sources.yaml with start_date {day})")
    return 0


def outputs(day: dt.date, sources: list[str]) -> int:
    warehouse, reports = str(DATA / "warehouse"), str(DATA / "reports")
    problems, summary = [], {}
    for source in sources:
        manifest_path = Path(layout.manifest_path(warehouse, source, day))
        if not manifest_path.exists():
            problems.append(f"{source}: no manifest at {manifest_path}")
            continue
        manifest = json.loads(manifest_path.read_text())
        totals = manifest["totals"]
        tables = [source] + [
            layout.table_name(source, table)
            for table in manifest.get("outputs", {}).get("tables", {})
        ]
        line = {"bytes": totals["bytes_total"], "bad_byte_rate": totals["bad_byte_rate"]}
        quarantine = layout.quarantine_table_dir(warehouse, source)
        line["quarantined"] = lake.day_rows(quarantine, day) or 0
        for table in tables:
            location = layout.table_dir(warehouse, table)
            count = lake.day_rows(location, day)
            if not count:
                problems.append(f"{table}: no rows in {location} dt={day}")
            result_path = Path(layout.validation_path(reports, table, day))
            docs = Path(layout.data_docs_dir(reports, table, day)) / "index.html"
            if not result_path.exists():
                problems.append(f"{table}: no validation result at {result_path}")
                verdict = "missing"
            else:
                outcome = [
                    item["success"] for item in json.loads(result_path.read_text())["results"]
                ]
                verdict = f"{outcome.count(True)} passed, {outcome.count(False)} failed"
            if not docs.exists():
                problems.append(f"{table}: no Data Docs at {docs}")
            line[table] = {"rows": count, "expectations": verdict}
            shown = f"{count or 0:>7,}  expectations {verdict}  {location} dt={day}"
            print(f"    {table:<16} rows {shown}")
        print(
            f"    {source:<16} manifest {manifest_path}: {totals['bytes_total']:,} bytes, "
            f"bad-byte rate {totals['bad_byte_rate']:.2%}, {line['quarantined']} quarantined"
        )
        summary[source] = line
    (DATA / "_check" / "outputs.json").write_text(json.dumps(summary, indent=2) + "\n")
    for problem in problems:
        print(f"    MISSING {problem}")
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    command, day, sources = argv[0], dt.date.fromisoformat(argv[1]), argv[2:]
    return {"land": land, "outputs": outputs}[command](day, sources)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
