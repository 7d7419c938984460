"""The Heka encoder against the truth, and the decoder against the encoder's input.

Anchors: Heka's Go client test bytes (the encoder reproduces them), the protobuf runtime
reading message.proto built in the test (`heka_proto`: an oracle independent of the
decoder's wire reader), and the encoder input itself (what the decoder must give back).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hmac
import itertools
import struct
import uuid as uuids

import pytest
import zstandard
from budget import examples
from heka_proto import classes
from heka_support import DATA, decode, signers_file
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecodecs.heka import encoder as enc

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
KEYS = {"ops_0": "s3cr3t", "dev_3": "kl\u00fcssel-\u2603", "empty_0": ""}
SIGNERS = [
    enc.Signer("ops", 0, b"s3cr3t"),
    enc.Signer("dev", 3, "kl\u00fcssel-\u2603".encode(), "SHA1"),
    enc.Signer("empty", 0, b"", "SHA1"),
]
ROUNDTRIP = settings(
    max_examples=examples(1.5), suppress_health_check=[HealthCheck.function_scoped_fixture]
)

utf8 = st.text(max_size=20)
texts = st.one_of(utf8, st.binary(max_size=12))  # producers never check UTF-8
doubles = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
uuid_bytes = st.one_of(
    st.binary(min_size=16, max_size=16),  # what message.proto defines
    st.uuids().map(lambda u: str(u).encode()),  # 36 characters of text (python_moztelemetry)
    st.binary(max_size=40),  # any other length, UTF-8 or not
    st.none(),  # none at all (Heka's Go client test)
)


def heka_messages(texts) -> st.SearchStrategy[enc.Message]:
    """Messages whose string fields come from `texts`."""
    optional_texts = st.one_of(st.none(), texts)
    fields = st.builds(
        enc.Field,
        name=texts,
        value_type=st.sampled_from(["STRING", "BYTES", "INTEGER", "DOUBLE", "BOOL", None]),
        representation=optional_texts,
        value_string=st.lists(texts, max_size=3),
        value_bytes=st.lists(st.binary(max_size=8), max_size=3),
        value_integer=st.lists(INT64, max_size=4),
        value_double=st.lists(doubles, max_size=3),
        value_bool=st.lists(st.booleans(), max_size=3),
    )
    return st.builds(
        enc.Message,
        uuid=uuid_bytes,
        timestamp=st.one_of(INT64, st.integers(0, 4_102_444_800 * 10**9)),
        type=optional_texts,
        logger=optional_texts,
        severity=st.one_of(st.none(), INT32),
        payload=optional_texts,
        env_version=optional_texts,
        pid=st.one_of(st.none(), INT32),
        hostname=optional_texts,
        fields=st.lists(fields, max_size=4),
    )


messages = heka_messages(texts)


def as_text(value) -> tuple[str | None, bytes | None]:
    if value is None:
        return None, None
    data = value.encode() if isinstance(value, str) else value
    try:
        return data.decode(), None
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), data


def expected_uuid(uuid: bytes | None) -> dict:
    """16 bytes: canonical text; another length: the text as sent, its bytes when not UTF-8."""
    if uuid is not None and len(uuid) == 16:
        return {"uuid": str(uuids.UUID(bytes=uuid)), "uuid_raw": None, "uuid_valid": True}
    text, raw = as_text(uuid)
    return {"uuid": text, "uuid_raw": raw, "uuid_valid": False}


def bits(values) -> list[bytes]:
    return [struct.pack("<d", v) for v in values]


def expected_field(field: enc.Field) -> dict:
    name, name_raw = as_text(field.name)
    representation, representation_raw = as_text(field.representation)
    strings = [as_text(v) for v in field.value_string]
    any_raw = any(raw is not None for _, raw in strings)
    return {
        "name": name,
        "name_raw": name_raw,
        "value_type": field.value_type or "STRING",
        "representation": representation,
        "representation_raw": representation_raw,
        "value_string": [text for text, _ in strings],
        "value_string_raw": [v.encode() if isinstance(v, str) else v for v in field.value_string]
        if any_raw
        else None,
        "value_bytes": list(field.value_bytes),
        "value_integer": list(field.value_integer),
        "value_double": bits(field.value_double),
        "value_bool": list(field.value_bool),
        "unknown_fields": None,
    }


def expected_row(message: enc.Message, offset: int, framed: bytes, body: bytes, signer, snappy):
    """The row a correct decoder gives for a record, worked out from the encoder's input."""
    ns = message.timestamp
    in_calendar = -62135596800 * 10**9 <= ns <= 253402300799999999999
    row = {
        "source_file": "mem.heka",
        "byte_offset": offset,
        "hmac_valid": None if signer is None else True,
        "event_time": EPOCH + dt.timedelta(microseconds=ns // 1000) if in_calendar else None,
        "hmac_status": None if signer is None else "valid",
        **expected_uuid(message.uuid),
        "timestamp": ns,
        "severity": 7 if message.severity is None else message.severity,
        "severity_present": message.severity is not None,
        "pid": message.pid,
        "fields": [expected_field(field) for field in message.fields],
        "unknown_fields": None,
        "hmac_hash_function": None
        if signer is None or signer.hash_function == "MD5"
        else signer.hash_function,
        "hmac_signer": None if signer is None else signer.name,
        "hmac_key_version": None if signer is None else signer.key_version,
        "hmac": None
        if signer is None
        else hmac.digest(signer.key, body, signer.hash_function.lower()),
        "body_encoding": "snappy" if snappy else "protobuf",
        "frame_length": len(framed),
    }
    for name in ("type", "logger", "payload", "env_version", "hostname"):
        row[name], row[f"{name}_raw"] = as_text(getattr(message, name))
    return row


def comparable(row: dict) -> dict:
    fields = [{**f, "value_double": bits(f["value_double"])} for f in row["fields"]]
    return {**row, "fields": fields}


records = st.lists(
    st.tuples(messages, st.sampled_from([None, *SIGNERS]), st.booleans(), st.booleans()),
    min_size=1,
    max_size=5,
)


def write(items) -> tuple[bytes, list[dict]]:
    """A stream of the records and the rows a decoder must give for it."""
    out, expected = b"", []
    for message, signer, snappy, packed in items:
        body = enc.encode_message(message, packed=packed)
        if snappy:
            body = enc.snappy_block(body)
        framed = enc.frame(body, signer)
        expected.append(expected_row(message, len(out), framed, body, signer, snappy))
        out += framed
    return out, expected


@ROUNDTRIP
@given(records, st.integers(1, 4))
def test_decoder_gives_back_what_was_encoded(tmp_path, items, batch_rows):
    data, expected = write(items)
    got = decode(data, hmac_keys_file=signers_file(tmp_path, KEYS), batch_rows=batch_rows)
    assert [comparable(row) for row in got.rows] == expected
    assert all(batch.num_rows <= batch_rows for batch in got.batches)
    acc = got.accounting
    assert (acc.bytes_decoded, acc.records_good, acc.stop_reason) == (len(data), len(items), "eof")


@ROUNDTRIP
@given(records, st.sampled_from(["gzip", "zstd"]), st.integers(1, 3))
def test_whole_file_compression_is_transparent(tmp_path, items, codec, members):
    """gzip (concatenated members too) and zstd (several frames) around the same stream."""
    data, expected = write(items)
    cuts = [len(data) * i // members for i in range(members + 1)]
    pack = gzip.compress if codec == "gzip" else zstandard.ZstdCompressor().compress
    packed = b"".join(pack(data[a:b]) for a, b in itertools.pairwise(cuts))
    got = decode(packed, hmac_keys_file=signers_file(tmp_path, KEYS))
    assert [comparable(row) for row in got.rows] == expected
    acc = got.accounting
    assert (acc.bytes_total, acc.bytes_decoded, acc.balanced) == (len(packed), len(packed), True)


def oracle_view(message) -> dict:
    """What the protobuf runtime reads from a body, in the decoder's terms (upb returns
    bytes for a string field that is not UTF-8)."""

    def text(msg, name):
        if not msg.HasField(name):
            return None
        value = getattr(msg, name)
        return value if isinstance(value, bytes) else value.encode()

    return {
        "uuid": message.uuid if message.HasField("uuid") else None,
        "timestamp": message.timestamp,
        "severity": message.severity,
        "severity_present": message.HasField("severity"),
        "pid": message.pid if message.HasField("pid") else None,
        **{name: text(message, name) for name in ("type", "logger", "payload", "hostname")},
        "env_version": text(message, "env_version"),
        "fields": [
            (
                text(f, "name"),
                f.value_type,
                text(f, "representation"),
                [v if isinstance(v, bytes) else v.encode() for v in f.value_string],
                list(f.value_bytes),
                list(f.value_integer),
                bits(f.value_double),
                list(f.value_bool),
            )
            for f in message.fields
        ],
    }


def decoder_view(row: dict) -> dict:
    def text(name, source=row):
        if source[name] is None:
            return None
        raw = source[f"{name}_raw"]
        return raw if raw is not None else source[name].encode()

    return {
        "uuid": bytes.fromhex(row["uuid"].replace("-", "")) if row["uuid_valid"] else text("uuid"),
        "timestamp": row["timestamp"],
        "severity": row["severity"],
        "severity_present": row["severity_present"],
        "pid": row["pid"],
        **{name: text(name) for name in ("type", "logger", "payload", "hostname")},
        "env_version": text("env_version"),
        "fields": [
            (
                text("name", f),
                ["STRING", "BYTES", "INTEGER", "DOUBLE", "BOOL"].index(f["value_type"]),
                text("representation", f),
                f["value_string_raw"] or [v.encode() for v in f["value_string"]],
                f["value_bytes"],
                f["value_integer"],
                bits(f["value_double"]),
                f["value_bool"],
            )
            for f in row["fields"]
        ],
    }


@ROUNDTRIP
@given(messages, st.booleans())
def test_decoder_agrees_with_the_protobuf_runtime(message, packed):
    body = enc.encode_message(message, packed=packed)
    _, message_class, _ = classes(packed)
    parsed = message_class()
    parsed.ParseFromString(body)
    (row,) = decode(enc.frame(body)).rows
    assert decoder_view(row) == oracle_view(parsed)


@ROUNDTRIP
@given(messages)
def test_packed_and_unpacked_numerics_decode_alike(message):
    packed = decode(enc.frame(enc.encode_message(message, packed=True))).rows
    unpacked_body = enc.encode_message(message, packed=False)
    unpacked = decode(enc.frame(unpacked_body)).rows
    for row in packed + unpacked:
        row.pop("frame_length")
    assert [comparable(r) for r in packed] == [comparable(r) for r in unpacked]


@ROUNDTRIP
@given(heka_messages(utf8))
def test_runtime_writes_what_the_encoder_writes(message):
    """The encoder's body is byte for byte what the protobuf runtime writes for the same
    message (field order and packing of Heka's Go client; partial: the uuid message.proto
    requires may be missing)."""
    _, message_class, _ = classes()
    body = enc.encode_message(message)
    parsed = message_class()
    parsed.ParseFromString(body)
    assert parsed.SerializePartialToString() == body


def test_go_client_bytes_are_reproduced():
    """client/encoders_test.go: the unsigned and the MD5-signed (empty key) record."""
    message = enc.Message(uuid=None, timestamp=1416840893000000000, type="TEST")
    body = enc.encode_message(message)
    data = enc.frame(body) + enc.frame(body, enc.Signer("test", 0, b""))
    assert data == (DATA / "go_client_vectors.heka").read_bytes()


def test_header_over_255_bytes_is_refused():
    signer = enc.Signer("s" * 300, 1, b"k")
    try:
        enc.frame(b"x", signer)
    except ValueError as err:
        assert "too big" in str(err)
    else:
        raise AssertionError("a 300-byte signer fits no header")


@ROUNDTRIP
@given(st.text(max_size=80), st.sampled_from(["MD5", "SHA1"]))
@example("k" * 65, "MD5")  # one byte over the block
@example("\u2603" * 30, "SHA1")  # 90 bytes of UTF-8
def test_signatures_are_checked_for_keys_of_any_length(tmp_path, key, hash_function):
    """Keys shorter and longer than the hash's block (a long key is hashed first, RFC 2104)
    give Python's HMAC: a signed body is valid, the same body altered after signing not."""
    signer = enc.Signer("k", 1, key.encode(), hash_function)
    data = enc.frame(enc.encode_message(enc.Message(uuid=b"\x02" * 16, timestamp=9)), signer)
    altered = data[:-1] + b"\x08"  # the timestamp's varint, last on the wire: 9 -> 8
    got = decode(data + altered, hmac_keys_file=signers_file(tmp_path, {"k_1": key}))
    assert [row["hmac_status"] for row in got.rows] == ["valid", "invalid_digest"]
    assert [row["timestamp"] for row in got.rows] == [9, 8]


def test_snappy_bodies_are_signed_as_sent(tmp_path):
    """The digest covers the body on the wire: for a snappy record, the compressed bytes."""
    message = enc.Message(uuid=b"\x01" * 16, timestamp=5, payload="x" * 500)
    body = enc.snappy_block(enc.encode_message(message))
    signer = SIGNERS[0]
    data = enc.frame(body, signer)
    got = decode(data, hmac_keys_file=signers_file(tmp_path, KEYS))
    (row,) = got.rows
    assert (row["body_encoding"], row["hmac_status"]) == ("snappy", "valid")
    assert row["hmac"] == hmac.digest(signer.key, body, "md5")
