"""Wire-level corners of Heka's protobufs that the vectors do not hold: unknown fields,
wrong wire types, unknown enum codes, explicit defaults, hash functions, bad keys."""

from __future__ import annotations

import hmac

import pytest
from heka_support import decode, signers_file

from wirecodecs.heka import encoder as enc

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

UUID = bytes(range(16))
BASE = enc.encode_message(enc.Message(uuid=UUID, timestamp=1_700_000_000_000_000_000))


def one_row(body: bytes, **options) -> dict:
    got = decode(enc.frame(body), **options)
    assert not got.quarantined
    (row,) = got.rows
    return row


def test_unknown_message_fields_are_kept_byte_for_byte():
    unknown = (
        b"\x58\x05" + b"\x62\x03abc" + b"\x7d\x01\x02\x03\x04"
    )  # 11 varint, 12 len, 15 fixed32
    row = one_row(BASE + unknown)
    assert row["unknown_fields"] == unknown
    assert row["uuid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_known_number_with_the_wrong_wire_type_is_an_unknown_field():
    wrong = b"\x2a\x01\x07"  # severity (5) as length-delimited
    row = one_row(BASE + wrong)
    assert (row["severity"], row["severity_present"], row["unknown_fields"]) == (7, False, wrong)


def test_field_corners_unknown_members_enum_codes_and_mixed_packing():
    field = (
        b"\x0a\x01n"  # name
        b"\x10\x07"  # value_type 7: no such ValueType
        b"\x30\x01"  # value_integer 1, unpacked
        b"\x32\x02\x02\x7f"  # then 2, 127 packed
        b"\x48\x01"  # field 9: unknown
    )
    row = one_row(BASE + b"\x52" + bytes([len(field)]) + field)
    (f,) = row["fields"]
    assert (f["name"], f["value_type"], f["value_integer"]) == ("n", "7", [1, 2, 127])
    assert f["unknown_fields"] == b"\x48\x01"


def test_last_scalar_wins_and_negative_int32_is_ten_bytes():
    body = (
        BASE + b"\x28\x03" + b"\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01" + b"\x1a\x01a\x1a\x01b"
    )
    row = one_row(body)
    assert (row["severity"], row["type"]) == (-1, "b")


def test_explicit_md5_and_unsupported_hash_functions(tmp_path):
    keys = signers_file(tmp_path, {"ops_0": "k"})
    digest = hmac.digest(b"k", BASE, "md5")
    header = b"\x08" + bytes([len(BASE)]) + b"\x18\x00\x22\x03ops\x28\x00\x32\x10" + digest
    framed = b"\x1e" + bytes([len(header)]) + header + b"\x1f" + BASE
    (row,) = decode(framed, hmac_keys_file=keys).rows
    assert (row["hmac_hash_function"], row["hmac_status"], row["hmac_valid"]) == (
        "MD5",
        "valid",
        True,
    )
    header = header.replace(b"\x18\x00", b"\x18\x02")
    framed = b"\x1e" + bytes([len(header)]) + header + b"\x1f" + BASE
    (row,) = decode(framed, hmac_keys_file=keys).rows
    assert (row["hmac_hash_function"], row["hmac_status"], row["hmac_valid"]) == (
        "2",
        "unsupported_hash",
        False,
    )


def test_damaged_bodies_are_typed_errors():
    cases = {
        b"\x0a\x10" + UUID[:8]: "invalid_protobuf",  # length past the end
        BASE + b"\x0b": "invalid_protobuf",  # wire type 3 (groups)
        BASE + b"\x52\x02\x32\x05": "invalid_protobuf",  # packed run past its field
        BASE + b"\x10" + b"\xff" * 11: "invalid_protobuf",  # varint over 10 bytes
        BASE + b"\x52\x03\x3a\x01\x00": "invalid_protobuf",  # packed doubles of 1 byte
        b"\x0a\x10" + UUID: "missing_timestamp",
    }
    for body, kind in cases.items():
        got = decode(enc.frame(body))
        assert [q.kind for q in got.quarantined] == [kind], body
        assert got.accounting.balanced and not got.rows
