"""A sample landing day of Heka dumps for the `heka` source (dags/sources.yaml).

Three hekad hosts land one file each for day D, written with the project's own encoder:

* `web-01`: unsigned, every fifth body a raw snappy block, junk between frames (with a
  fake record separator) and a last record cut short (a host that died mid-write);
* `pay-01`: HMAC-signed by two signers (MD5 and SHA-1), one record whose body was altered
  after signing (digest mismatch) and one body that is not a protobuf (quarantined);
* `edge-01`: signed, the whole file gzip-compressed (as Mozilla's S3 objects).

Damage is recorded in the `SampleFile` counts (a digest mismatch counts as a checksum
failure). The signing keys are `SAMPLE_KEYS`, which the demo writes as a secrets file
(`SAMPLE_SECRETS_FILE`) for the source's `hmac_keys_file` option.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
from pathlib import Path

from wirecodecs.heka import encoder as enc
from wirecodecs.sample_day import SampleFile

SAMPLE_KEYS = {"ops_0": "sample-ops-key-rotate-me", "pay_2": "sample-pay-k\u00e9y-2"}
SAMPLE_SECRETS_FILE = "heka_hmac_keys.json"
SIGNERS = (
    enc.Signer("ops", 0, SAMPLE_KEYS["ops_0"].encode()),
    enc.Signer("pay", 2, SAMPLE_KEYS["pay_2"].encode(), "SHA1"),
)
DAY_NS = 86_400 * 10**9
_GARBAGE = (b"\x00\x00junk\x1f\xff", b"\x1e\x07\x08\x02\x03not-a-frame")  # the 2nd: a fake RS


def secrets() -> bytes:
    """The keys file the demo writes for the sample source (JSON, signer_version -> key)."""
    return json.dumps(SAMPLE_KEYS, ensure_ascii=False, indent=2).encode()


class _Host:
    """One hekad host: messages with its name, pid and logger, times spread over the day."""

    def __init__(self, name: str, day: dt.date, seed: int) -> None:
        self.name = name
        self.rng = random.Random(f"{seed}:{day.isoformat()}:heka:{name}")
        self.day_ns = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())
        self.day_ns *= 10**9
        self.pid = self.rng.randrange(100, 60000)

    def messages(self, count: int) -> list[enc.Message]:
        times = sorted(self.rng.randrange(DAY_NS) for _ in range(count))
        return [self._message(self.day_ns + ns) for ns in times]

    def _message(self, ns: int) -> enc.Message:
        rng = self.rng
        uuid = bytearray(rng.randbytes(16))
        uuid[6] = uuid[6] & 0x0F | 0x40  # version 4
        uuid[8] = uuid[8] & 0x3F | 0x80  # RFC 4122 variant
        status = rng.choice([200, 200, 200, 204, 301, 404, 500])
        agent: str | bytes = rng.choice(["curl/8.5", "Mozilla/5.0 (X11; Linux)", "k\u00e4fer/1"])
        if rng.random() < 0.03:
            agent = b"bot/\xff\xfe"  # producers never check UTF-8
        fields = [
            enc.Field("status", "INTEGER", value_integer=[status]),
            enc.Field("request_time", "DOUBLE", "s", value_double=[rng.random() * 2]),
            enc.Field("user_agent", value_string=[agent]),
            enc.Field("tags", value_string=rng.sample(["edge", "canary", "eu", "tls"], 2)),
            enc.Field("cached", "BOOL", value_bool=[rng.random() < 0.3]),
        ]
        if rng.random() < 0.2:
            fields.append(enc.Field("submission", "BYTES", value_bytes=[rng.randbytes(24)]))
        path = rng.choice(["/", "/api/v1/items", "/login", "/static/app.js"])
        return enc.Message(
            uuid=bytes(uuid),
            timestamp=ns,
            type="nginx.access",
            logger=f"{self.name}.nginx",
            severity=None if rng.random() < 0.1 else (3 if status >= 500 else 6),
            payload=json.dumps({"path": path, "status": status, "bytes": rng.randrange(100_000)}),
            env_version="0.10",
            pid=self.pid,
            hostname=f"{self.name}.example.net",
            fields=fields,
        )


def _write(path: Path, chunks: list[bytes], compress: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(chunks)
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)


def heka_sample_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """The three hosts' files for `day` (see the module docstring)."""
    stamp = day.strftime("%Y%m%d")
    files = []

    web = _Host("web-01", day, seed)
    chunks = []
    for i, message in enumerate(web.messages(160)):
        body = enc.encode_message(message, packed=i % 7 != 3)
        chunks.append(enc.frame(enc.snappy_block(body) if i % 5 == 0 else body))
        if i in (40, 111):
            chunks.append(_GARBAGE[i % 2])
    cut = enc.frame(enc.encode_message(web.messages(1)[0]))
    cut = cut[: len(cut) // 2]
    path = out / "web-01" / f"heka-{stamp}.heka"
    _write(path, [*chunks, cut])
    files.append(SampleFile(path, frames=160, records=160, truncated_tail_bytes=len(cut)))

    pay = _Host("pay-01", day, seed)
    chunks = []
    for i, message in enumerate(pay.messages(150)):
        body = enc.encode_message(message)
        framed = enc.frame(body, SIGNERS[i % 2])
        if i == 70:  # altered after signing: the digest no longer matches
            framed = framed[:-1] + bytes([framed[-1] ^ 0x01])
        if i == 90:  # a producer bug: the body is not a protobuf
            framed = enc.frame(b"\xff" * len(body), SIGNERS[i % 2])
        chunks.append(framed)
    path = out / "pay-01" / f"heka-{stamp}.heka"
    _write(path, chunks)
    files.append(
        SampleFile(
            path,
            frames=150,
            records=150,
            crc_invalid_frames=1,
            crc_invalid_records=1,
            undecodable_frames=1,
            undecodable_records=1,
        )
    )

    edge = _Host("edge-01", day, seed)
    chunks = [enc.frame(enc.encode_message(m), SIGNERS[1]) for m in edge.messages(120)]
    path = out / "edge-01" / f"heka-{stamp}.heka.gz"
    _write(path, chunks, compress=True)
    files.append(SampleFile(path, frames=120, records=120))
    return files
