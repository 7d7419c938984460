"""Round trips: messages built by our encoder (every version, snappy or not) decode to
exactly what went in, alone, back to back with length prefixes, and read in short pieces.

Expected rows come from the generated inputs: attribute strings are built from key/value
dicts, so the attribute map each row must carry is known without the decoder's help.
"""

from __future__ import annotations

import pytest
from budget import examples
from decoding import ChunkedReads
from hypothesis import given, settings
from hypothesis import strategies as st
from inlong_helpers import carried, checked, rows_of

from wirecodecs.inlong import encoder as enc

FAST = settings(max_examples=examples(1.5))
KEY = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ_0123456789."), min_size=1, max_size=8
)
# V0-V3 values: anything but '&' (Sort's split reads a later '=' as part of the value),
# including NUL and characters outside the BMP (modified UTF-8)
LENIENT_VALUE = st.text(st.characters(blacklist_characters="&", codec="utf-8"), max_size=12)
# V4 values: Guava's strict splitter trims its whitespace (Unicode White_Space: these
# characters and categories; not U+001C-U+001F, which Python's strip() would take too)
# and rejects '=' in a value
STRICT_VALUE = st.text(
    st.characters(
        blacklist_characters="&= \t\n\r\x0b\x0c\x85",
        blacklist_categories=("Zs", "Zl", "Zp", "Cs"),
    ),
    max_size=12,
)
ITEM = st.binary(max_size=40)
NONEMPTY_ITEM = st.binary(min_size=1, max_size=40)


def join(attrs: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in attrs.items())


def item_row(attr: str, attributes: dict, body: bytes, compress: bool, **fields) -> dict:
    """An expected row's item columns; `fields` sets the ones that are not null."""
    nulls = dict.fromkeys(("private_attr", "private_attributes", "block_index", "block_item_count"))
    return {"attr": attr, "attributes": attributes, **nulls, "compressed": compress,
            "body": body, **fields}  # fmt: skip


@st.composite
def block_message(draw, version: int):
    """(message bytes, expected rows) for V0, V1 or V2."""
    compress = draw(st.booleans())
    create = draw(st.integers(-(1 << 63), (1 << 63) - 1))
    blocks = draw(
        st.lists(
            st.tuples(
                st.dictionaries(KEY, LENIENT_VALUE, min_size=1, max_size=4),
                st.lists(ITEM, max_size=6),
            ),
            max_size=4,
            unique_by=lambda block: join(block[0]),
        )
    )
    data = enc.encode_blocks(
        version, [(join(a), items) for a, items in blocks], create, compress=compress
    )
    rows = []
    for index, (attrs, items) in enumerate(blocks):
        for body in items:
            count = len(items) if version == 2 else None
            rows.append(
                item_row(
                    join(attrs), attrs, body, compress, block_index=index, block_item_count=count
                )
            )
    header = {"version": version, "create_time_ms": create if version else None,
              "msg_count": sum(len(i) for _, i in blocks) if version == 2 else None}  # fmt: skip
    return data, header, rows


PRIVATE = st.dictionaries(KEY, LENIENT_VALUE, min_size=1, max_size=3)


@st.composite
def v3_message(draw):
    compress = draw(st.booleans())
    create = draw(st.integers(0, 1 << 42))
    blocks = draw(
        st.lists(
            st.tuples(
                st.dictionaries(KEY, LENIENT_VALUE, min_size=1, max_size=3),
                st.lists(  # records; an empty one is addMsg of an empty buffer
                    st.lists(st.tuples(NONEMPTY_ITEM, PRIVATE), max_size=3),
                    min_size=1,
                    max_size=3,
                ),
            ),
            max_size=3,
        )
    )  # fmt: skip
    wire = [
        (join(c), [[(item, join(p)) for item, p in record] for record in recs])
        for c, recs in blocks
    ]
    data = enc.encode_v3(wire, create, compress=compress)
    rows = []
    for index, (common, records) in enumerate(blocks):
        for record in records:
            for body, private in record:
                text = f"{join(common)}&{join(private)}"
                rows.append(
                    item_row(text, {**common, **private}, body, compress, block_index=index,
                             private_attr=join(private), private_attributes=private)
                )  # fmt: skip
    # Java's MsgCnt: one per addMsg, plus the extra pairs of a record holding several
    msg_count = sum(max(len(record), 1) for _, records in blocks for record in records)
    header = {"version": 3, "create_time_ms": create, "msg_count": msg_count}
    return data, header, rows


@st.composite
def v4_message(draw):
    compress = draw(st.booleans())
    string_ids = draw(st.booleans())
    private = draw(st.booleans())
    common = draw(st.dictionaries(KEY, STRICT_VALUE, max_size=4))
    items = draw(st.lists(NONEMPTY_ITEM if private else ITEM, max_size=6))
    privates = [draw(st.dictionaries(KEY, STRICT_VALUE, min_size=1, max_size=3)) for _ in items]
    fields = {
        "group_id_num": draw(st.integers(0, 0xFFFF)),
        "stream_id_num": draw(st.integers(0, 0xFFFF)),
        "data_time": draw(st.integers(0, 0xFFFF_FFFF)),
        "unique_id": draw(st.integers(0, 0xFFFF_FFFF)),
        "msg_count": draw(st.integers(0, 0xFFFF)),
        "ext_field": (0x04 if string_ids else 0) | draw(st.sampled_from([0, 0x02, 0x20])),
    }
    wire_private = [join(p) for p in privates] if private else None
    data = enc.encode_v4(items, join(common), private=wire_private, compress=compress, **fields)
    merged = {**common, "dt": str(fields["data_time"] * 1000)}
    if not string_ids:
        merged |= {"groupId": str(fields["group_id_num"]), "streamId": str(fields["stream_id_num"])}
    merged["cnt"] = str(fields["msg_count"])
    rows = []
    for body, own in zip(items, privates, strict=True):
        if private:
            own_fields = {"private_attr": join(own), "private_attributes": own}
            rows.append(item_row(join(common), {**own, **merged}, body, compress, **own_fields))
        else:
            rows.append(item_row(join(common), merged, body, compress))
    header = {
        "version": 4,
        "create_time_ms": fields["data_time"] * 1000,
        "msg_count": fields["msg_count"],
        "data_time": fields["data_time"],
        "unique_id": fields["unique_id"],
        "group_id_num": fields["group_id_num"],
        "stream_id_num": fields["stream_id_num"],
        "ext_field": fields["ext_field"] | (0x01 if private else 0),
        "msg_type": 7 | (0x20 if compress else 0),
    }
    return data, header, rows


MESSAGES = st.one_of(
    block_message(0), block_message(1), block_message(2), v3_message(), v4_message()
)


def expected(header: dict, rows: list[dict], byte_offset: int = 0) -> list[dict]:
    return [
        {"byte_offset": byte_offset, **header, **row, "item_index": index}
        for index, row in enumerate(rows)
    ]


def project(rows: list[dict], like: list[dict]) -> list[dict]:
    """`rows` cut down to the columns each expected row names (V4 rows name more)."""
    assert len(rows) == len(like)
    return [{key: row[key] for key in want} for row, want in zip(rows, like, strict=True)]


@FAST
@given(MESSAGES)
def test_message_round_trip(message):
    data, header, rows = message
    got = checked(data)
    assert not got.quarantined
    want = expected(header, rows)
    assert project(got.rows, want) == want
    assert got.accounting.records_good == len(rows)
    values = rows_of(carried(data).batch)
    assert project([{"byte_offset": 0, **v} for v in values], want) == want


@FAST
@given(st.lists(MESSAGES, max_size=5), st.integers(1, 64), st.integers(1, 9))
def test_length_prefixed_round_trip(messages, step, batch_rows):
    data = enc.length_prefixed(data for data, _, _ in messages)
    want, offset = [], 0
    for message, header, rows in messages:
        want += expected(header, rows, offset)
        offset += 4 + len(message)
    for stream in (None, ChunkedReads(data, [step])):
        got = checked(data, stream, framing="length_prefixed", batch_rows=batch_rows)
        assert not got.quarantined
        assert project(got.rows, want) == want
        assert got.accounting.frames_good == len(messages)


def test_every_version_and_compression_round_trips():
    """One fixed message per version and compression setting (hypothesis may skip some)."""
    items = [b"a,1", b"", "中文😀".encode(), bytes(range(256))]
    attr = "m=0&groupId=g&streamId=s&dt=1700000000000"
    for compress in (False, True):
        for version in (0, 1, 2):
            rows = checked(enc.encode_blocks(version, [(attr, items)], 5, compress=compress)).rows
            assert [r["body"] for r in rows] == items and {r["compressed"] for r in rows} == {
                compress
            }
        v3 = enc.encode_v3([(attr, [[(b"x", "k=1"), (b"y", "k=2")]])], 5, compress=compress)
        assert [r["body"] for r in checked(v3).rows] == [b"x", b"y"]
        v4 = enc.encode_v4(items, "groupId=g&streamId=s", ext_field=4, compress=compress)
        rows = checked(v4).rows
        assert [r["body"] for r in rows] == items
        assert {(r["group_id"], r["stream_id"], r["compressed"]) for r in rows} == {
            ("g", "s", compress)
        }


@pytest.mark.parametrize("compress", [False, True])
def test_v3_empty_record_is_skipped_like_java(compress):
    """`addMsg(attr, emptyBuffer)` writes a V3 record of RecordLen 0 (and counts it in
    MsgCnt); Java's parser skips it and returns every other item, and so does this one."""
    records = [[(b"a", "k=1")], [], [(b"b", "k=2"), (b"c", "k=3")], [], [(b"d", "k=4")]]
    data = enc.encode_v3([("m=0&dt=1700000000000", records)], 5, compress=compress)
    got = checked(data)
    assert not got.quarantined
    assert [row["body"] for row in got.rows] == [b"a", b"b", b"c", b"d"]
    assert [row["private_attr"] for row in got.rows] == ["k=1", "k=2", "k=3", "k=4"]
    assert [row["item_index"] for row in got.rows] == [0, 1, 2, 3]
    assert {row["msg_count"] for row in got.rows} == {6}  # Java's: 1 + 1 + 2 + 1 + 1
    assert got.accounting.records_good == 4 and got.accounting.frames_good == 1


def test_v3_negative_record_length_is_still_an_error():
    """Only RecordLen 0 is skipped: a negative one is `invalid_item` (the whole message)."""
    data = enc.encode_v3([("a=1", [[(b"a", "k=1")], [], [(b"b", "k=2")]])], 5)
    empty = data.index(b"\x00" * 4, data.index(b"k=1"))  # the empty record's RecordLen
    bad = data[:empty] + b"\xff\xff\xff\xff" + data[empty + 4 :]
    got = checked(bad)
    assert got.rows == [] and [q.kind for q in got.quarantined] == ["invalid_item"]
