"""Alerts of failed tasks, built on Airflow's notifier interface (`on_failure_callback`).

Each alert names the source, the day, the task and the reason as the job stated it. The
notifiers are listed under `alerts:` in sources.yaml; secrets (SMTP password, webhook URL)
come from Airflow connections or the environment, never from the config.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any

from airflow.sdk import BaseHook, BaseNotifier

# What a job logs when it fails (jobs/cli.py run_job, validate's critical expectations):
# the record goes on until the next log record (SparkSubmitHook strips the indentation).
_JOB_FAILURE = re.compile(
    r"^.*?((?:decode|validate) \S+ dt=\S+ failed.*|critical expectation\(s\) failed.*)$", re.M
)
_NEW_RECORD = re.compile(r"\d\d(\d\d)?[-/]\d\d[-/]\d\d[ T]\d\d:\d\d")  # Python's or Spark's
_SPARK_TAIL = "Last spark-submit output:"


def job_reason(error: BaseException | str | None) -> str:
    """The job's own failure message out of a task's exception (spark-submit's log tail is
    part of it), else the exception's first line."""
    text = str(error or "unknown (no exception recorded)")
    found = ([None, *_JOB_FAILURE.finditer(text)])[-1]  # the last failure record of the tail
    if found is None:
        return text.split(_SPARK_TAIL)[0].strip().splitlines()[0] if text.strip() else text
    lines = [found.group(1)]
    for line in text[found.end() :].splitlines()[1:]:
        if not line.strip() or _NEW_RECORD.match(line):
            break
        lines.append(line.rstrip())
    return "\n".join(lines)


def alert(context: Any, source: str) -> dict[str, Any]:
    """The facts of one failed task, as every notifier sends them."""
    ti = context["ti"]
    return {
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": source,
        "day": context["ds"],
        "dag_id": ti.dag_id,
        "task_id": ti.task_id,
        "run_id": ti.run_id,
        "try_number": ti.try_number,
        "reason": job_reason(context.get("exception")),
        "log_url": getattr(ti, "log_url", None),
    }


def anomalies_alert(day: str, anomalies: list[dict[str, Any]], page: str) -> dict[str, Any]:
    """The facts of a daily report that found anomalies (jobs/report.py), for the same
    notifiers: what is unusual, per source, and where the page is."""
    return {
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": ", ".join(sorted({anomaly["source"] for anomaly in anomalies})),
        "day": day,
        "task_id": "report",
        "title": f"wirelake: daily report {day}: {len(anomalies)} anomal"
        + ("y" if len(anomalies) == 1 else "ies"),
        "reason": "\n".join(f"{a['source']}: {a['message']}" for a in anomalies),
        "page": page,
    }


def text(facts: dict[str, Any]) -> str:
    """One readable message: first line says what failed, then the job's reason."""
    if "title" in facts:  # a daily report's anomalies
        return f"{facts['title']}\n{facts['reason']}\nreport: {facts['page']}"
    return (
        f"wirelake: {facts['source']} {facts['day']} task {facts['task_id']} failed "
        f"(try {facts['try_number']}, run {facts['run_id']})\n{facts['reason']}"
        + (f"\nlog: {facts['log_url']}" if facts.get("log_url") else "")
    )


class _AlertNotifier(BaseNotifier):
    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def notify(self, context: Any) -> None:
        self.send(alert(context, self.source))

    def send(self, facts: dict[str, Any]) -> None:
        raise NotImplementedError


class AlertLogNotifier(_AlertNotifier):
    """Appends the alert as one JSON line to a file under the reports folder."""

    def __init__(self, source: str, path: str) -> None:
        super().__init__(source)
        self.path = path

    def send(self, facts: dict[str, Any]) -> None:
        path = Path(self.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(facts, sort_keys=True) + "\n")


class EmailNotifier(_AlertNotifier):
    """Mails the alert through Airflow's SMTP connection (host, login, password, from)."""

    def __init__(self, source: str, to: list[str], conn_id: str) -> None:
        super().__init__(source)
        self.to = to
        self.conn_id = conn_id

    def send(self, facts: dict[str, Any]) -> None:
        from airflow.providers.smtp.hooks.smtp import SmtpHook  # only when a mail is due

        body = text(facts).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        with SmtpHook(smtp_conn_id=self.conn_id) as hook:
            hook.send_email_smtp(
                to=self.to,
                subject=text(facts).splitlines()[0],
                html_content=f"<pre>{body}</pre>",
            )


class WebhookNotifier(_AlertNotifier):
    """POSTs a Slack-compatible body {"text": ...}; the URL is read when an alert is due,
    from the environment variable `url_env` if set, else from connection `conn_id` (its
    host holds the whole URL)."""

    def __init__(self, source: str, conn_id: str | None, url_env: str | None) -> None:
        super().__init__(source)
        self.conn_id = conn_id
        self.url_env = url_env

    def url(self) -> str:
        if self.url_env and os.environ.get(self.url_env):
            return os.environ[self.url_env]
        if self.conn_id:
            return BaseHook.get_connection(self.conn_id).host
        raise ValueError(f"webhook: no URL in ${self.url_env} and no connection configured")

    def send(self, facts: dict[str, Any]) -> None:
        request = urllib.request.Request(
            self.url(),
            data=json.dumps({"text": text(facts)}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()


def notifiers(config: list[dict[str, Any]] | None, source: str, reports: str) -> list:
    """The notifiers of `alerts:` (default: the alert log only) for one source's DAG."""
    built = []
    for entry in config or [{"type": "log"}]:
        kind = entry.get("type")
        if kind == "log":
            path = entry.get("path", "{reports}/_alerts/alerts.jsonl").format(reports=reports)
            built.append(AlertLogNotifier(source, path))
        elif kind == "email":
            to = entry["to"] if isinstance(entry["to"], list) else [entry["to"]]
            built.append(EmailNotifier(source, to, entry.get("conn_id", "smtp_default")))
        elif kind == "webhook":
            built.append(WebhookNotifier(source, entry.get("conn_id"), entry.get("url_env")))
        else:
            raise ValueError(f"alerts: unknown notifier type {kind!r}; use log, email or webhook")
    return built
