"""Fill the image's numba cache at build time (docker/Dockerfile), so that no container
compiles the decoders' numba walks again at its first decode (measured in a fresh
container on a loaded 2-core machine: the first Hercules decode on the cluster took
110 s, against 15 s for Kafka). Each source of dags/sources.yaml decodes its sample day
once, as the decode job would (same format, same options); Kafka's compiled walk, which a
process otherwise takes only after 8 MB, is taken at once. A failure only skips the warm-up:
the decoders then compile at run time, as they would without it.
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

import yaml

from wirecodecs import samples
from wirecodecs.accounting import FileAccounting
from wirecodecs.options import resolve
from wirecodecs.registry import get

CONFIG = Path(__file__).resolve().parent.parent / "dags" / "sources.yaml"
DAY = dt.date(2026, 1, 1)


def main() -> int:
    try:
        import wirecodecs.kafka.decoder as kafka_decoder

        if hasattr(kafka_decoder, "COMPILED_AFTER_BYTES"):
            kafka_decoder.COMPILED_AFTER_BYTES = 0
    except ImportError:
        pass
    sources = yaml.safe_load(CONFIG.read_text())["sources"]
    with tempfile.TemporaryDirectory() as scratch:
        for name, source in sources.items():
            if name not in samples.formats():
                continue
            began = time.monotonic()
            try:
                landing = Path(scratch) / name
                samples.write_sample_day(name, landing, DAY)
                payload = source.get("payload", "raw")
                fmt = get(source["envelope"] + ("" if payload == "raw" else f"+{payload}"))
                options = dict(source["decode"].get("options") or {})
                options.pop("hmac_keys_file", None)  # a secret: not in the image
                resolved = resolve(fmt, options)
                for path in sorted(p for p in landing.rglob("*") if p.is_file()):
                    with path.open("rb") as stream:
                        accounting = FileAccounting(source=str(path), format=fmt.name)
                        for _ in fmt.decode(stream, str(path), accounting, resolved):
                            pass
                print(f"warm_numba: {name} decoded in {time.monotonic() - began:.1f} s")
            except Exception as error:  # a warm-up never fails the build
                print(f"warm_numba: {name} skipped: {type(error).__name__}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
