"""Where a file is: a local path or a URI, opened through pyarrow.fs (local disk, HDFS, S3).

The jobs and the inspector (`python -m wirecodecs dump s3://...`) open locations the same
way. An `s3://` location takes its endpoint and region from the URI's query where it names
them (`?endpoint_override=...&region=...`), else from the standard AWS environment
(`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION` or `AWS_DEFAULT_REGION`): found
here once, so that every client of a location (pyarrow, and the jobs' Spark and Delta
readers) is given the same ones. Credentials only ever come from the AWS SDK's own chain
(the `AWS_*` variables, a profile, an instance role): a location that carries them is
refused, since locations are logged, passed on command lines and written into manifests.
"""

from __future__ import annotations

import os
import urllib.parse

from pyarrow import fs as pafs

CREDENTIAL_KEYS = ("access_key", "secret_key", "session_token")  # pyarrow's S3 URI options
# What an s3:// location's query may set (pyarrow's S3FileSystem arguments), as their types.
S3_OPTIONS = {
    "endpoint_override": str,
    "region": str,
    "scheme": str,
    "request_timeout": float,
    "connect_timeout": float,
}
# Seconds an S3 request may go without a byte. The SDK's default, 3 s, fails the commit's
# server-side copy of a large part, which sends nothing until it is done (128 MB on a
# loopback server: over 3 s under load).
S3_REQUEST_TIMEOUT = 300.0


def absolute(location: str) -> str:
    """`location` with a relative local path made absolute; URIs are kept as given."""
    return location if "://" in location else os.path.abspath(location)


def s3_settings(location: str) -> dict[str, str]:
    """The endpoint and region of an `s3://` location: its query's, else the environment's."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
    environment = {
        "endpoint_override": os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL"),
        "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
    }
    settings = {key: value for key, value in environment.items() if value}
    settings.update(query)
    return settings


def s3_endpoint_url(settings: dict[str, str]) -> str | None:
    """The endpoint of `s3_settings` as a URL (pyarrow spells it host[:port] and its scheme
    apart), for the clients that take a URL; None for AWS itself."""
    endpoint = settings.get("endpoint_override")
    if endpoint and "://" not in endpoint:
        endpoint = f"{settings.get('scheme', 'https')}://{endpoint}"
    return endpoint


def check_location(location: str) -> None:
    """Refuse a location that carries credentials (they belong in the environment)."""
    parts = urllib.parse.urlsplit(location)
    keys = {key for key, _ in urllib.parse.parse_qsl(parts.query)}
    if "@" in parts.netloc or keys & set(CREDENTIAL_KEYS):
        raise ValueError(
            f"{parts.scheme}://{parts.hostname or ''}{parts.path}: credentials in a location "
            "are refused (locations are logged and recorded); use the AWS_* environment"
        )


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding `location` and the path inside it."""
    location = absolute(location)
    check_location(location)
    parts = urllib.parse.urlsplit(location)
    if parts.scheme != "s3":
        return pafs.FileSystem.from_uri(location)
    options: dict = {"request_timeout": S3_REQUEST_TIMEOUT}
    for key, value in s3_settings(location).items():
        if key not in S3_OPTIONS:
            raise ValueError(f"s3://{parts.netloc}{parts.path}: unknown option {key!r}")
        options[key] = S3_OPTIONS[key](value)
    path = urllib.parse.unquote(f"{parts.netloc}{parts.path}").rstrip("/")
    return pafs.S3FileSystem(**options), path
