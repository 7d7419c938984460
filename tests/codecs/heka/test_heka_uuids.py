"""Messages whose uuid is not the 16 bytes message.proto defines are rows, marked
`uuid_valid = false`, the uuid kept as sent.

Anchors: python_moztelemetry's own test streams (tests/data/heka/moztelemetry/, 36
characters of uuid text) read as its reader reads them (snappy trial, then the protobuf
runtime), and a stream of the same kind written with the project's encoder.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import cramjam
import pytest
from google.protobuf.message import DecodeError
from heka_proto import classes
from heka_support import DATA, decode, signers_file

from wirecodecs.heka import encoder as enc

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

MOZTELEMETRY = DATA / "moztelemetry"
SIGNER = enc.Signer("ops", 0, b"s3cr3t")
STRINGS = ("type", "logger", "payload", "hostname")


def text_uuid_messages() -> list[enc.Message]:
    """Ten messages as python_moztelemetry's test streams carry them: the uuid as 36
    characters of text, a `seq` in the payload."""
    return [
        enc.Message(
            uuid=f"{seq:08x}-a564-43a4-ad8a-bacf2e770d5c".encode(),
            timestamp=1_416_840_893_000_000_000 + seq,
            type="Test",
            payload=json.dumps({"seq": seq, "data": "0" * 30}),
            hostname="test.example.com",
            fields=[enc.Field("test_int_field", "INTEGER", value_integer=[seq])],
        )
        for seq in range(10)
    ]


def test_text_uuids_are_rows_with_the_text_as_sent(tmp_path):
    """Every other body a raw snappy block, the last three signed: all ten are rows (the
    decoder quarantined all ten as `invalid_uuid` before)."""
    messages = text_uuid_messages()
    bodies = [
        enc.snappy_block(enc.encode_message(m)) if i % 2 else enc.encode_message(m)
        for i, m in enumerate(messages)
    ]
    data = b"".join(enc.frame(body, SIGNER if i >= 7 else None) for i, body in enumerate(bodies))
    got = decode(data, hmac_keys_file=signers_file(tmp_path, {"ops_0": "s3cr3t"}))
    assert not got.quarantined
    assert [
        (r["uuid"], r["uuid_raw"], r["uuid_valid"], r["timestamp"], r["body_encoding"])
        for r in got.rows
    ] == [
        (m.uuid.decode(), None, False, m.timestamp, "snappy" if i % 2 else "protobuf")
        for i, m in enumerate(messages)
    ]
    assert [r["hmac_status"] for r in got.rows] == [None] * 7 + ["valid"] * 3
    assert got.accounting.bytes_decoded == len(data)


def test_snappy_body_that_fails_a_check_is_quarantined_for_its_inflated_message():
    """The body inflates to a message without a timestamp: the reason is that message's,
    not `invalid_protobuf` from reading the compressed bytes as a protobuf."""
    message = enc.Message(uuid=bytes(range(16)), timestamp=None, payload="x" * 200)
    framed = enc.frame(enc.snappy_block(enc.encode_message(message)))
    got = decode(framed)
    assert [(q.byte_offset, q.length, q.kind) for q in got.quarantined] == [
        (0, len(framed), "missing_timestamp")
    ]
    assert got.rows == []


def reference_reading(data: bytes) -> Iterator[tuple[int, str, object]]:
    """(offset, body encoding, runtime Message) of each record of a clean stream, read as
    python_moztelemetry's `unpack(try_snappy=True)` reads it: the header with the runtime,
    the body snappy-inflated and parsed if that works, else parsed as it is."""
    header_class, message_class, _ = classes()
    at = 0
    while at < len(data):
        hlen = data[at + 1]
        assert (data[at], data[at + 2 + hlen]) == (0x1E, 0x1F)
        header = header_class.FromString(data[at + 2 : at + 2 + hlen])
        body = data[at + 3 + hlen : at + 3 + hlen + header.message_length]
        try:
            inflated = bytes(cramjam.snappy.decompress_raw(body))
            message, encoding = message_class.FromString(inflated), "snappy"
        except (cramjam.DecompressionError, DecodeError):
            message, encoding = message_class.FromString(body), "protobuf"
        yield at, encoding, message
        at += 3 + hlen + header.message_length


@pytest.mark.parametrize("name", sorted(p.name for p in MOZTELEMETRY.glob("*.heka")))
def test_python_moztelemetry_streams(name):
    """Its test expects ten records with `seq` 0..9 from each (snappy tried); ours are
    rows that agree with the reference reading, uuid text as sent."""
    data = (MOZTELEMETRY / name).read_bytes()
    got = decode(data)
    assert not got.quarantined and got.accounting.bytes_decoded == len(data)
    assert [json.loads(r["payload"])["seq"] for r in got.rows] == list(range(10))
    stream = gzip.decompress(data) if "gzip" in name else data
    assert [
        (
            r["byte_offset"],
            r["body_encoding"],
            r["uuid"].encode(),
            r["uuid_valid"],
            r["timestamp"],
            *(r[name] for name in STRINGS),
            [f["name"] for f in r["fields"]],
        )
        for r in got.rows
    ] == [
        (
            at,
            encoding,
            m.uuid,
            len(m.uuid) == 16,
            m.timestamp,
            *(getattr(m, name) if m.HasField(name) else None for name in STRINGS),
            [f.name for f in m.fields],
        )
        for at, encoding, m in reference_reading(stream)
    ]
    assert {len(r["uuid"]) for r in got.rows} == {36}
