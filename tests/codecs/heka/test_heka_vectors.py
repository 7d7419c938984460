"""Every Heka golden vector decodes to exactly what its sidecar says.

The sidecars (tests/data/heka/*.json.gz) are the truth, with wirelake's two divergences
from their strict reader applied: a record with a bad or unverifiable signature is a row
with its verdict (hmac_valid false), and so is a message whose uuid is not 16 bytes
(uuid_valid false), not dropped. Records the strict reader drops for their body (no
timestamp, not a protobuf) are quarantined; garbage is skipped; a partial last record is a
truncated tail.
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import hashlib
import struct

import pytest
from heka_support import DATA, VECTORS, decode, sidecar, signers_file

from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.heka.schema import HEKA_SCHEMA

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
STATUS = {  # sidecar hmac_check -> hmac_status
    "unsigned": None,
    "valid": "valid",
    "invalid_digest": "invalid_digest",
    "unknown_signer": "unknown_signer",
}


def raw(message: dict, name: str) -> bytes | None:
    value = message.get(f"{name}_raw_hex")
    return None if value is None else bytes.fromhex(value)


def double_from_bits(bits: str) -> float:
    return struct.unpack("<d", int(bits, 16).to_bytes(8, "little"))[0]


def expected_field(field: dict) -> dict:
    strings_raw = field.get("value_string_raw_hex")
    return {
        "name": field["name"],
        "value_type": field["value_type"],
        "representation": field["representation"],
        "representation_raw": None,
        "value_string": field["value_string"],
        "value_string_raw": None
        if strings_raw is None
        else [bytes.fromhex(v) for v in strings_raw],
        "value_bytes": [base64.b64decode(v) for v in field["value_bytes_b64"]],
        "value_integer": field["value_integer"],
        "value_double": [double_from_bits(bits) for bits in field["value_double_bits"]],
        "value_bool": field["value_bool"],
        "unknown_fields": None,
    }


def emitted(record: dict) -> bool:
    """A row, by wirelake's policy: a complete frame with a message that has a timestamp."""
    message = record["message"]
    return not record.get("truncated") and message is not None and message["timestamp"] is not None


def expected_uuid(message: dict) -> dict:
    """The sidecar's canonical text for 16 bytes; else its bytes (`uuid_hex`) as text."""
    if message["uuid"] is not None:
        return {"uuid": message["uuid"], "uuid_raw": None, "uuid_valid": True}
    sent = None if message["uuid_hex"] is None else bytes.fromhex(message["uuid_hex"])
    assert sent is None or len(sent) != 16
    text = None if sent is None else sent.decode("utf-8", "replace")
    raw = None if sent is None or text.encode() == sent else sent
    return {"uuid": text, "uuid_raw": raw, "uuid_valid": False}


def expected_row(record: dict, source: str) -> dict:
    message, header = record["message"], record["header"]
    status = STATUS[record["hmac_check"]]
    ns = message["timestamp"]
    return {
        "source_file": source,
        "byte_offset": record["offset"],
        "hmac_valid": None if status is None else status == "valid",
        "event_time": EPOCH + dt.timedelta(microseconds=ns // 1000),
        "hmac_status": status,
        **expected_uuid(message),
        "timestamp": ns,
        "type": message["type"],
        "type_raw": raw(message, "type"),
        "logger": message["logger"],
        "logger_raw": raw(message, "logger"),
        "severity": message["severity_effective"],
        "severity_present": message["severity"] is not None,
        "payload": message["payload"],
        "payload_raw": raw(message, "payload"),
        "env_version": message["env_version"],
        "env_version_raw": raw(message, "env_version"),
        "pid": message["pid"],
        "hostname": message["hostname"],
        "hostname_raw": raw(message, "hostname"),
        "fields": [expected_field(field) for field in message["fields"]],
        "unknown_fields": None,
        "hmac_hash_function": header["hmac_hash_function"],
        "hmac_signer": header["hmac_signer"],
        "hmac_key_version": header["hmac_key_version"],
        "hmac": None if header["hmac_hex"] is None else bytes.fromhex(header["hmac_hex"]),
        "body_encoding": record["body_encoding"],
        "frame_length": record["framed_length"],
    }


def comparable(row: dict) -> dict:
    """A decoded row with field names' raw bytes checked and dropped (the sidecars give
    names with U+FFFD only) and doubles compared by their bits."""
    fields = []
    for field in row["fields"]:
        field = dict(field)
        name_raw = field.pop("name_raw")
        if name_raw is None:
            assert "\ufffd" not in (field["name"] or "")
        else:
            assert name_raw.decode("utf-8", "replace") == field["name"]
        field["value_double"] = [struct.pack("<d", v) for v in field["value_double"]]
        fields.append(field)
    return {**row, "fields": fields}


def stream_of(name: str) -> bytes:
    data = (DATA / name).read_bytes()
    return gzip.decompress(data) if sidecar(name)["outer_compression"] == "gzip" else data


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory) -> str:
    """Every signer of every sidecar (they share one table; size_limits adds a long one)."""
    signers = {}
    for name in VECTORS:
        signers.update(sidecar(name)["signers"])
    return signers_file(tmp_path_factory.mktemp("keys"), signers)


@pytest.mark.parametrize("name", VECTORS)
def test_stream_is_the_one_described(name):
    side = sidecar(name)
    stream = stream_of(name)
    assert (len(stream), hashlib.sha256(stream).hexdigest()) == (
        side["stream_length"],
        side["stream_sha256"],
    )


@pytest.mark.parametrize("name", VECTORS)
def test_rows_match_the_sidecar(name, keys_file):
    side = sidecar(name)
    source = f"/landing/heka/{name}"
    with (DATA / name).open("rb") as fh:
        got = decode(fh, source=source, hmac_keys_file=keys_file)
    expected = [expected_row(r, source) for r in side["records"] if emitted(r)]
    for batch in got.batches:
        assert batch.schema == HEKA_SCHEMA
    for row in expected:
        for field in row["fields"]:
            field["value_double"] = [struct.pack("<d", v) for v in field["value_double"]]
    assert [comparable(row) for row in got.rows] == expected


@pytest.mark.parametrize("name", VECTORS)
def test_the_strict_reader_keeps_the_rows_with_valid_or_no_signature_and_valid_uuid(
    name, keys_file
):
    """`expected_messages` (the strict, authenticating reader) = our rows whose signature
    verdict is not false and whose uuid is valid."""
    side = sidecar(name)
    with (DATA / name).open("rb") as fh:
        got = decode(fh, hmac_keys_file=keys_file)
    offsets = {r["index"]: r["offset"] for r in side["records"]}
    kept = [
        row["byte_offset"]
        for row in got.rows
        if row["hmac_valid"] is not False and row["uuid_valid"]
    ]
    assert kept == [offsets[i] for i in side["expected_messages"]]


@pytest.mark.parametrize("name", VECTORS)
def test_every_byte_is_accounted_for(name, keys_file):
    side = sidecar(name)
    stream = stream_of(name)
    with (DATA / name).open("rb") as fh:
        got = decode(fh, hmac_keys_file=keys_file)
    acc = got.accounting
    assert acc.balanced
    assert acc.bytes_total == (DATA / name).stat().st_size
    records = side["records"]
    bad = [r for r in records if not emitted(r) and not r.get("truncated")]
    tail = side["truncated_tail"]
    assert (acc.frames_good, acc.records_good) == (len(got.rows), len(got.rows))
    assert (acc.frames_bad, acc.records_bad) == (len(bad), len(bad))
    assert acc.stop_reason == ("truncated_tail" if tail else "eof")
    if side["outer_compression"] is None:
        assert acc.bytes_skipped == sum(g["length"] for g in side["garbage"])
        assert acc.bytes_truncated_tail == (tail["bytes_present"] if tail else 0)
        assert acc.bytes_quarantined == sum(r["framed_length"] for r in bad)
        assert [(q.byte_offset, q.length) for q in got.quarantined] == [
            (r["offset"], r["framed_length"]) for r in bad
        ]
        for q in got.quarantined:
            assert q.head == stream[q.byte_offset : q.byte_offset + min(q.length, HEAD_BYTES)]
    else:  # a clean compressed stream: all of the file decoded
        assert acc.bytes_decoded == acc.bytes_total


def test_quarantine_kinds_say_why():
    got = decode((DATA / "invalid_bodies.heka").read_bytes())
    assert [(q.byte_offset, q.kind) for q in got.quarantined] == [
        (674, "missing_timestamp"),
        (711, "invalid_protobuf"),
        (728, "invalid_protobuf"),
    ]


def test_messages_without_a_16_byte_uuid_are_rows_marked_invalid():
    """The 15-byte uuid of invalid_bodies.heka and the uuid-less messages of Heka's Go
    client test, which Heka Go delivers and the strict reader drops."""
    got = decode((DATA / "invalid_bodies.heka").read_bytes())
    assert [(r["byte_offset"], r["uuid"], r["uuid_raw"], r["uuid_valid"]) for r in got.rows] == [
        (0, "e25e2276-5648-45b0-b9eb-b0066bbd1b1d", None, True),
        (638, "\x01" * 15, None, False),
        (1041, "c9d5ebae-1661-41e6-b76d-9e6f5ca7a9df", None, True),
    ]
    got = decode((DATA / "go_client_vectors.heka").read_bytes())
    assert [(r["uuid"], r["uuid_valid"], r["type"]) for r in got.rows] == [
        (None, False, "TEST")
    ] * 2
    assert not got.quarantined


def test_without_keys_signed_records_are_unverifiable():
    got = decode((DATA / "signed_mixed.heka").read_bytes())
    assert [row["hmac_status"] for row in got.rows] == [None] + ["unknown_signer"] * 3
    assert [row["hmac_valid"] for row in got.rows] == [None, False, False, False]


def test_heka_default_size_limit_skips_the_oversize_record(keys_file):
    """With Heka's own 64 KiB limit the 70 029-byte body is not trusted: the search goes on
    inside it (Heka's splitter) and its bytes are skipped; the records around it decode."""
    side = sidecar("size_limits.heka")
    big = side["records"][1]
    got = decode(
        (DATA / "size_limits.heka").read_bytes(),
        hmac_keys_file=keys_file,
        max_message_size=65536,
    )
    assert big["exceeds_heka_default_max_message_size"]
    assert [row["byte_offset"] for row in got.rows] == [0, side["records"][2]["offset"]]
    assert got.accounting.bytes_skipped == big["framed_length"]
    assert got.accounting.balanced


def test_keys_file_must_be_readable(tmp_path):
    with pytest.raises(ValueError, match="hmac_keys_file"):
        decode(b"", hmac_keys_file=str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"ops_0": 7}')
    with pytest.raises(ValueError, match="strings"):
        decode(b"", hmac_keys_file=str(bad))
