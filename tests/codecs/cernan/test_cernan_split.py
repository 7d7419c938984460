"""cernan's split finder (`wirecodecs.cernan.splitting`): the hop from length prefix to
length prefix gives the walk's own packet starts and numbers, so every range but the last
ends where the next starts, and the ranges read as the whole dump, packets table included
(even where the job's rule for a last range without a good packet would decode the file
whole again: cernan's walk keeps nothing from one packet to the next). The truth is the
vectors' sidecars (packet offsets and indexes, as the strict walk sees them) and the whole
dump's decode."""

from __future__ import annotations

import pytest
from budget import examples
from cernan_helpers import DATA, sidecar
from hypothesis import given, settings
from hypothesis import strategies as st
from ranges import find, in_ranges, whole

from wirecodecs.cernan import encoder as enc

VECTORS = sorted(path.stem for path in DATA.glob("*.bin"))
SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}


@pytest.mark.parametrize("name", VECTORS)
def test_points_are_the_sidecar_packets_and_ranges_read_as_whole(name):
    data = (DATA / f"{name}.bin").read_bytes()
    packets = [p for p in sidecar(name)["expected"]["packets"] if p["complete"]]
    boundaries = list(range(97, len(data), 97))

    points = find("cernan", data, boundaries).points

    expected = []
    for boundary in boundaries:
        first = next((p for p in packets if p["offset"] >= boundary), None)
        if first is not None and (not expected or expected[-1][0] != first["offset"]):
            expected.append((first["offset"], {"packet_index": first["index"]}))
    found = [(point.offset, {"packet_index": point.shifts["packet_index"]}) for point in points]
    assert found == expected
    assert all(point.shifts["avro_offset"] == point.offset for point in points)
    outcome, accountings = in_ranges(data, "cernan", points)
    assert all(accounting.stop_reason == "eof" for accounting in accountings[:-1])
    assert outcome == whole(data, "cernan")


def packet(number: int, records: int) -> bytes:
    avro = enc.container(SCHEMA, [{"n": number * 100 + i} for i in range(records)])
    return enc.frame(enc.Packet(avro, id=number, kv=[("k", str(number))]))


def test_with_resync_the_hop_stops_at_a_length_the_walk_scans_past():
    small = [packet(number, 2) for number in range(6)]
    large = packet(9, 40)  # above max_packet_bytes
    data = b"".join(small[:3]) + large + b"".join(small[3:])
    limit = max(map(len, small))
    assert len(large) > limit + 4
    boundaries = list(range(50, len(data), 50))
    strict = find("cernan", data, boundaries, max_packet_bytes=limit).points
    after = data.index(large) + len(large)  # the strict walk goes on by the length
    assert [point.offset for point in strict if point.offset >= after] == [
        after + sum(map(len, small[3:k])) for k in range(3, 6)
    ]
    resyncing = find("cernan", data, boundaries, max_packet_bytes=limit, resync=True).points
    assert resyncing and all(point.offset < data.index(large) for point in resyncing)


@given(
    sizes=st.lists(st.integers(0, 4), min_size=1, max_size=12),
    damage=st.sampled_from(["none", "bad_version", "too_large", "cut"]),
    where=st.integers(0, 11),
    step=st.integers(20, 400),
)
@settings(max_examples=examples(0.6))
def test_any_dump_cut_at_its_points_reads_as_whole(sizes, damage, where, step):
    frames = [packet(number, records) for number, records in enumerate(sizes)]
    where %= len(frames)
    if damage == "bad_version":
        frames[where] = enc.frame(enc.Packet(b"Obj\x01", version=7))
    elif damage == "too_large":
        frames[where] = frames[where][:3] + b"\xff" + frames[where][4:]
    data = b"".join(frames)
    if damage == "cut":
        data = data[: len(data) - 5]
    points = find("cernan", data, list(range(step, len(data), step)), max_packet_bytes=200).points
    outcome, accountings = in_ranges(data, "cernan", points, max_packet_bytes=200)
    assert all(accounting.stop_reason == "eof" for accounting in accountings[:-1])
    assert outcome == whole(data, "cernan", max_packet_bytes=200)
