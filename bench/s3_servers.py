"""Which S3-compatible server the tests start: moto's standalone server against SeaweedFS
(`weed mini`), each on loopback, for start-up time, throughput and a few fidelity checks.

Not a test, and SeaweedFS is not part of the set-up: build it first with the Go module
proxy (a wrapper module, since its go.mod has replace directives that `go install` refuses;
docs/storage.md gives the commands) and pass the binary.

    ./wirelake run python bench/s3_servers.py [--weed PATH] [--mb 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pyarrow import fs as pafs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "store"))  # the loopback server the tests start

from s3server import START_TIMEOUT, S3Server, free_port, moto_server, wait_until_serving  # noqa: E402

ACCESS_KEY, SECRET_KEY = "bench-access", "bench-secret-0123456789"
COPY_TIMEOUT = 300  # s; the SDK's default of 3 s without a byte fails moto's copy of 256 MB


@contextlib.contextmanager
def weed_server(weed: str, folder: str) -> Iterator[S3Server]:
    """SeaweedFS's all-in-one `weed mini` (master, volume, filer, S3) with one identity."""
    config = Path(folder) / "s3.json"
    identity = {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}
    actions = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(
        json.dumps(
            {"identities": [{"name": "bench", "credentials": [identity], "actions": actions}]}
        )
    )
    ports = {name: free_port() for name in ("master", "volume", "filer", "s3", "admin")}
    command = [weed, "mini", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
    command += [f"-s3.config={config}", "-admin.ui=false", f"-admin.port={ports['admin']}"]
    command += ["-admin.port.legacy=0"]
    for name in ("master", "volume", "filer", "s3"):
        command += [f"-{name}.port={ports[name]}", f"-{name}.port.grpc={free_port()}"]
    with open(Path(folder) / "weed.log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            endpoint = f"http://127.0.0.1:{ports['s3']}"
            wait_until_serving(endpoint, process, START_TIMEOUT)
            yield S3Server(endpoint, ACCESS_KEY, SECRET_KEY)
        finally:
            process.terminate()
            process.wait(timeout=30)


def first_write(server: S3Server, bucket: str) -> None:
    """Until a bucket is created and an object written (a server may listen before its
    storage is ready)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            client = server.filesystem()
            client.create_dir(bucket)
            with client.open_output_stream(f"{bucket}/probe") as out:
                out.write(b"x")
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def checks(server: S3Server, bucket: str, mb: int) -> dict:
    client = server.filesystem(request_timeout=COPY_TIMEOUT)
    block = os.urandom(1 << 20)
    started = time.monotonic()
    with client.open_output_stream(f"{bucket}/big/part-0") as out:  # multipart upload
        for _ in range(mb):
            out.write(block)
    write_s = time.monotonic() - started
    started = time.monotonic()
    with client.open_input_stream(f"{bucket}/big/part-0") as stream:
        while stream.read(8 << 20):
            pass
    read_s = time.monotonic() - started
    started = time.monotonic()
    client.copy_file(f"{bucket}/big/part-0", f"{bucket}/copy/part-0")
    copy_s = time.monotonic() - started
    with client.open_input_file(f"{bucket}/copy/part-0") as file:
        file.seek(5 << 20)
        ranged = file.read(16) == block[:16]  # the object is the block over and over
    listed = client.get_file_info(pafs.FileSelector(bucket, recursive=True))
    client.delete_dir(f"{bucket}/copy")
    wrong = pafs.S3FileSystem(
        access_key=server.access_key,
        secret_key="not-the-secret",
        endpoint_override=server.endpoint,
        region="us-east-1",
    )
    try:
        wrong.get_file_info(f"{bucket}/probe")
        wrong_key = "accepted"
    except OSError:
        wrong_key = "refused"
    return {
        f"write_{mb}_mb_s": round(write_s, 2),
        "write_mb_per_s": round(mb / write_s),
        f"read_{mb}_mb_s": round(read_s, 2),
        f"server_side_copy_{mb}_mb_s": round(copy_s, 2),
        "ranged_read_right": ranged,
        "listing_entries": len(listed),
        "a_wrong_secret_key_is": wrong_key,
    }


def measure(start, repeat: int, mb: int) -> dict:
    starts = []
    result = {}
    for round_ in range(repeat):
        with tempfile.TemporaryDirectory(dir=ROOT / ".tmp") as folder:
            began = time.monotonic()
            with start(folder) as server:
                first_write(server, "bench")
                starts.append(round(time.monotonic() - began, 2))
                if round_ == 0:
                    result = checks(server, "bench", mb)
    return {"start_to_first_write_s": starts, **result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weed", help="a SeaweedFS `weed` binary")
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = {"moto": measure(lambda d: moto_server(f"{d}/moto.log"), args.repeat, args.mb)}
    if args.weed:
        results["seaweedfs"] = measure(lambda d: weed_server(args.weed, d), args.repeat, args.mb)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
