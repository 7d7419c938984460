"""Every InLong golden vector decodes to what its sidecar says, or to the typed error.

Valid cases are checked against `expected` (worked out from the builder's inputs, V4
attributes as maps; the signed quirk read unsigned). Cases without `expected` are checked
against `java_parse` where Java parsed them normally, and against the error kind this
decoder reports where Java throws, returns null or returns damaged data (docs/inlong.md,
"Divergences from Java").
"""

from __future__ import annotations

import datetime as dt

import pytest
from inlong_helpers import CASES, b64, carried, checked, rows_of, sidecar, vector

from wirecodecs.inlong.decoder import PREFIX
from wirecodecs.inlong.schema import INLONG_SCHEMA

# case -> DecodeError kind, for the cases where Java fails or returns damaged data
ERRORS = {
    "err_bad_magic_front": "bad_magic",  # Java: parseFrom -> null
    "err_magic_mismatch": "magic_mismatch",  # null
    "err_too_short_3": "message_too_short",  # null
    "err_truncated_tail": "magic_mismatch",  # null
    "edge_min_4_bytes_v1": "truncated",  # AIOOBE from parseFrom
    "err_v1_attrcnt_too_big": "truncated",  # AIOOBE from getAttrs
    "err_v1_bad_mutf8_attr": "invalid_attribute",  # first block, then IOOBE
    "err_v1_bad_snappy": "decompress_failed",  # getIterator -> null
    "err_v1_item_len_overflow": "truncated",  # item zero-padded, no error
    "err_v1_negative_attrcnt": "length_out_of_range",  # IllegalArgumentException
    "err_v1_truncated_body_magic_ok": "truncated",  # IOOBE from getAttrs
    "err_v3_empty_item": "invalid_item",  # empty attribute set, silently
    "err_v3_empty_private_attr": "invalid_item",  # NPE from getIterator
    "err_v4_attr_dup_key": "invalid_attribute",  # IllegalArgumentException
    "err_v4_attr_no_equals": "invalid_attribute",
    "err_v4_attr_value_has_equals": "invalid_attribute",
    "err_v4_bad_snappy": "decompress_failed",  # NPE from getAttrs
}
# Java parses these normally and so does this decoder: compare with java_parse
JAVA_PARSED = ("edge_v1_trailing_garbage", "edge_v4_bad_inner_magic_and_totallen", "ext_go_test_v1",
               "ext_go_test_v4")  # fmt: skip
DUPLICATE_ATTR = "edge_v1_duplicate_attr"


def test_every_vector_is_covered():
    expected = {case for case in CASES if sidecar(case)["expected"] is not None}
    assert len(CASES) == 46
    assert set(CASES) == expected | set(ERRORS) | set(JAVA_PARSED) | {DUPLICATE_ATTR}


def groups(rows: list[dict], version: int) -> list[tuple]:
    """(attribute key, items) in first-appearance order, items in wire order: V0-V3 by the
    exact attribute string, V4 by the attribute map (Java groups the same way)."""
    out: dict = {}
    for row in rows:
        key = row["attr"] if version < 4 else frozenset(row["attributes"].items())
        out.setdefault(key, []).append(row["body"])
    return list(out.items())


def reference_groups(attrs: list[dict], version: int) -> list[tuple]:
    out = []
    for attr in attrs:
        if version < 4:
            key = attr["attr"]
        elif "attr_map" in attr:
            key = frozenset(attr["attr_map"].items())
        else:
            key = frozenset(tuple(kv) for kv in attr["attr_kv"])
        out.append((key, [b64(item["b64"]) for item in attr["items"]]))
    return out


def decoded_rows(case: str) -> list[dict]:
    got = checked(vector(case))
    assert not got.quarantined
    assert got.accounting.frames_good == 1
    return got.rows


@pytest.mark.parametrize("case", [c for c in CASES if sidecar(c)["expected"] is not None])
def test_valid_vector(case):
    side = sidecar(case)
    truth = side["expected"]
    rows = decoded_rows(case)
    version = truth["version"]
    assert groups(rows, version) == reference_groups(truth["attrs"], version)
    assert [row["item_index"] for row in rows] == list(range(len(rows)))
    for row in rows:
        assert row["version"] == version
        assert row["byte_offset"] == 0
        # Java reports -1 / 0 where V0/V1 have no such field; the columns are null there
        assert row["create_time_ms"] == (None if version == 0 else truth["createtime"])
        assert row["msg_count"] == (None if version < 2 else truth["msgcnt"])
    if version == 2:
        counts = [attr["item_cnt_field"] for attr in truth["attrs"] for _ in attr["items"]]
        assert [row["block_item_count"] for row in rows] == counts
    if version < 4:
        assert all(row["ext_field"] is None and row["unique_id"] is None for row in rows)
    else:
        header = side["build"]["inner_header"]
        for row in rows:
            assert row["data_time"] == header["data_time_sec"]
            assert row["unique_id"] == header["unique_id"]
            assert row["ext_field"] == header["ext_field"]
            assert row["group_id_num"] == header["group_id_num"]
            assert row["stream_id_num"] == header["stream_id_num"]
            assert row["msg_type"] & 0x1F == 7


def test_v4_signed_quirk_reads_unsigned():
    """Java gives groupId -25536, streamId -1, cnt -25536; DataProxy, C++, Go and this
    decoder read the fields unsigned."""
    side = sidecar("v4_numeric_ids_signed_quirk")
    assert side["java_matches_expected"] is False
    java = dict(tuple(kv) for kv in side["java_parse"]["attrs"][0]["attr_kv"])
    (row,) = decoded_rows("v4_numeric_ids_signed_quirk")
    assert java["groupId"].startswith("-")
    assert row["group_id"] == str(side["build"]["inner_header"]["group_id_num"])
    assert row["msg_count"] == side["build"]["inner_header"]["msg_cnt"] > 32767


@pytest.mark.parametrize("case", JAVA_PARSED)
def test_java_parsed_vector(case):
    java = sidecar(case)["java_parse"]
    assert java["result"] == "parsed"
    rows = decoded_rows(case)
    version = java["version"]
    assert groups(rows, version) == reference_groups(java["attrs"], version)
    assert {row["create_time_ms"] for row in rows} == {java["createtime"]}


def test_duplicate_attr_keeps_both_blocks():
    """Java keeps only the last of two blocks with the same attribute (its map put
    overwrites); this decoder keeps both, the last one being Java's."""
    java = sidecar(DUPLICATE_ATTR)["java_parse"]
    rows = decoded_rows(DUPLICATE_ATTR)
    last = [row["body"] for row in rows if row["block_index"] == 1]
    assert last == [b64(item["b64"]) for item in java["attrs"][0]["items"]]
    assert [row for row in rows if row["block_index"] == 0]
    assert {row["attr"] for row in rows} == {java["attrs"][0]["attr"]}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_vector(case):
    data = vector(case)
    got = checked(data)
    assert got.rows == []
    (bad,) = got.quarantined
    assert (bad.byte_offset, bad.length, bad.kind) == (0, len(data), ERRORS[case])
    assert got.accounting.frames_bad == 1
    got = carried(data, data)
    assert [(index, err.kind, err.format) for index, err in got.errors] == [
        (index, ERRORS[case], "inlong") for index in (0, 1)
    ]
    assert got.batch.num_rows == len(got.value_index) == 0


def test_v4_attributes_as_inlong_builds_them():
    """dt = DataTime x 1000 and cnt = MsgCnt overwrite the wire's; numeric ids (ExtField
    bit 2 clear) become groupId/streamId; private attributes lose to common ones."""
    side = sidecar("v4_private_attrs")
    rows = decoded_rows("v4_private_attrs")
    for row in rows:
        assert row["attributes"]["dt"] == str(side["build"]["inner_header"]["data_time_sec"] * 1000)
        assert row["private_attributes"] == dict(
            kv.split("=") for kv in row["private_attr"].split("&")
        )
        assert (row["group_id"], row["stream_id"]) == ("g_demo", "s_demo")
    numeric = decoded_rows("v4_numeric_ids")
    header = sidecar("v4_numeric_ids")["build"]["inner_header"]
    assert {(r["group_id"], r["stream_id"]) for r in numeric} == {
        (str(header["group_id_num"]), str(header["stream_id_num"]))
    }


def test_event_time_from_dt_or_t():
    """Sort's head time: `t` (yyyyMMddHH here) wins over `dt`; V4 dt is DataTime."""
    rows = decoded_rows("v2_plain_multi")
    by_attr = {row["attr"]: row["event_time"] for row in rows}
    utc = dt.UTC
    assert by_attr[
        "m=0&streamId=stream_a&dt=1700000000000&iname=stream_a&sid=seq-0001&cnt=3"
    ] == dt.datetime.fromtimestamp(1700000000, utc)
    t_attr = next(attr for attr in by_attr if "&t=" in attr)
    assert by_attr[t_attr] == dt.datetime(2023, 11, 14, 22, tzinfo=utc)
    (row,) = decoded_rows("v4_no_attrs")
    assert row["event_time"] == dt.datetime.fromtimestamp(1700000000, utc)


@pytest.mark.parametrize("case", [c for c in CASES if c not in ERRORS])
def test_decode_values_matches_file_decode(case):
    """The Kafka payload path gives the file path's rows without the lineage pair, each
    tied to its value."""
    rows = decoded_rows(case)
    got = carried(vector(case), b"\x0f\x01", vector(case))
    values = INLONG_SCHEMA.names[2:]
    assert rows_of(got.batch) == [{name: row[name] for name in values} for row in rows] * 2
    assert got.value_index.to_pylist() == [0] * len(rows) + [2] * len(rows)
    assert [(index, err.kind) for index, err in got.errors] == [(1, "message_too_short")]


def test_length_prefixed_walk_of_every_vector():
    """All 46 vectors back to back with length prefixes: bad messages are quarantined one
    by one at their prefix's offset, the good ones around them decode as on their own."""
    data, offsets = b"", {}
    for case in CASES:
        offsets[case] = len(data)
        data += PREFIX.pack(len(vector(case))) + vector(case)
    got = checked(data, framing="length_prefixed", batch_rows=7)
    assert [(q.byte_offset, q.kind) for q in got.quarantined] == [
        (offsets[case], ERRORS[case]) for case in CASES if case in ERRORS
    ]
    rows = got.rows
    for case in CASES:
        if case in ERRORS:
            continue
        mine = [row for row in rows if row["byte_offset"] == offsets[case]]
        alone = decoded_rows(case)
        assert [{**r, "byte_offset": 0} for r in mine] == alone
    acc = got.accounting
    assert acc.frames_good == len(CASES) - len(ERRORS) and acc.frames_bad == len(ERRORS)
