"""File access for the jobs through pyarrow.fs: one code path for local disk, HDFS and S3.

`resolve` turns a location (a URI, or a local path made absolute) into a filesystem and a
path inside it (`wirecodecs.locations`: how an `s3://` location finds its endpoint, region
and credentials).

Spark reads the same locations through Hadoop's filesystems (`spark_location`): `s3://` as
`s3a://` (hadoop-aws, which `./wirelake` fetches from Maven Central), set up per bucket
with the same endpoint and region.
"""

from __future__ import annotations

import json
import urllib.parse
import uuid
from typing import Any

from pyarrow import fs as pafs

from wirecodecs.locations import (
    absolute,
    check_location,
    resolve,
    s3_endpoint_url,
    s3_settings,
)

ASIDE_PREFIX = ".replaced-"  # an old folder moved aside by `replace_dir`, then deleted
OBJECT_STORES = ("s3", "gcs")  # pyarrow filesystems without folders: no rename, a move copies


def spark_location(spark, location: str) -> str:
    """`location` as Spark reads it. An `s3://` one becomes `s3a://` (no query), with its
    endpoint and region set for its bucket in the session's Hadoop conf; S3A finds the
    credentials itself, in the AWS_* environment or an instance role."""
    location = absolute(location)
    check_location(location)
    parts = urllib.parse.urlsplit(location)
    if parts.scheme != "s3":
        return location
    settings = s3_settings(location)
    bucket = f"fs.s3a.bucket.{parts.netloc}"
    endpoint = s3_endpoint_url(settings)
    if endpoint:
        spark.conf.set(f"{bucket}.endpoint", endpoint)
        spark.conf.set(f"{bucket}.path.style.access", "true")  # no per-bucket DNS on a server
        spark.conf.set(f"{bucket}.connection.ssl.enabled", str(endpoint.startswith("https:")))
    if settings.get("region"):
        spark.conf.set(f"{bucket}.endpoint.region", settings["region"])
    return urllib.parse.urlunsplit(parts._replace(scheme="s3a", query=""))


def _type(location: str) -> pafs.FileType:
    filesystem, path = resolve(location)
    return filesystem.get_file_info(path).type


def is_dir(location: str) -> bool:
    return _type(location) == pafs.FileType.Directory


def exists(location: str) -> bool:
    return _type(location) != pafs.FileType.NotFound


def remove_dir(location: str) -> None:
    """Delete a folder and its content, if it exists."""
    filesystem, path = resolve(location)
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.delete_dir(path)


def remove_file(location: str) -> None:
    """Delete a file if it exists."""
    filesystem, path = resolve(location)
    if filesystem.get_file_info(path).type == pafs.FileType.File:
        filesystem.delete_file(path)


def replace_dir(new: str | None, location: str) -> None:
    """Put folder `new` (same filesystem) in the place of folder `location`; None: just
    remove `location`. Where the filesystem renames (local disk, HDFS) the old folder is
    first moved aside, beside it and hidden, so that `location` is never a mix of both.
    An object store has no folders to rename: the old objects are deleted, then the new
    ones copied into place (server side) and deleted from staging, so a reader may see the
    day empty or partly written in between."""
    filesystem, path = resolve(location)
    staged = None if new is None else resolve(new)[1]
    if staged is not None and filesystem.get_file_info(staged).type != pafs.FileType.Directory:
        staged = None
    if filesystem.type_name in OBJECT_STORES:
        remove_dir(location)
        if staged is not None:
            pafs.copy_files(
                staged, path, source_filesystem=filesystem, destination_filesystem=filesystem
            )
            filesystem.delete_dir(staged)
        return
    parent, name = path.rsplit("/", 1)
    aside = f"{parent}/{ASIDE_PREFIX}{name}-{uuid.uuid4().hex[:12]}"
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.move(path, aside)
    if staged is not None:
        filesystem.move(staged, path)
    if filesystem.get_file_info(aside).type == pafs.FileType.Directory:
        filesystem.delete_dir(aside)


def write_json(location: str, document: Any) -> None:
    filesystem, path = resolve(location)
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as out:
        out.write(json.dumps(document, indent=1, sort_keys=True).encode("utf-8"))


def read_json(location: str) -> Any:
    filesystem, path = resolve(location)
    with filesystem.open_input_stream(path) as stream:
        return json.loads(stream.read())


def publish_dir(local_dir: str, location: str) -> None:
    """Copy a local folder to `location` on any filesystem, replacing what was there."""
    remove_dir(location)
    filesystem, path = resolve(location)
    filesystem.create_dir(path, recursive=True)
    pafs.copy_files(
        local_dir,
        path,
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=filesystem,
    )
