"""File access for the jobs through pyarrow.fs: one code path for local disk, HDFS and S3.

`pyarrow.fs.FileSystem.from_uri` turns a location (a URI, or an absolute local path) into
a filesystem and a path inside it; relative local paths are made absolute first.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from pyarrow import fs as pafs

ASIDE_PREFIX = ".replaced-"  # an old folder moved aside by `replace_dir`, then deleted


def absolute(location: str) -> str:
    """`location` with a relative local path made absolute; URIs are kept as given."""
    return location if "://" in location else os.path.abspath(location)


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding `location` and the path inside it."""
    return pafs.FileSystem.from_uri(absolute(location))


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
    remove `location`. The old folder is first moved aside, beside it and hidden, so that
    `location` is never a mix of both; each move is a rename on local disk and HDFS (on
    object stores a move is a copy)."""
    filesystem, path = resolve(location)
    parent, name = path.rsplit("/", 1)
    aside = f"{parent}/{ASIDE_PREFIX}{name}-{uuid.uuid4().hex[:12]}"
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.move(path, aside)
    if new is not None:
        _, staged = resolve(new)
        if filesystem.get_file_info(staged).type == pafs.FileType.Directory:
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
