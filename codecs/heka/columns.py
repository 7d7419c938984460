"""The column buffers the compiled walk (`fastpath.messages`) fills, and the Arrow batch
built from them at a flush: every column from numpy buffers at once (offsets from the
lengths, validity from the nulls), strings checked for UTF-8 per column in Arrow.

The values are those of the pure walk's flush (`decoder._Rows`), column by column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from wirecodecs.arrow_columns import binary_column, offsets_of, pooled
from wirecodecs.heka import fastpath as fp
from wirecodecs.heka.message import DEFAULT_SEVERITY, HASH_FUNCTIONS, HMAC_STATUSES, VALUE_TYPES
from wirecodecs.heka.schema import FIELD_TYPE, HEKA_SCHEMA
from wirecodecs.heka.texts import VALUE_TYPE_NAMES, arrow_text_lists, arrow_texts
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES

_NS_PER_US = 1000
_EVENT_NS_MIN = EVENT_TIME_MIN_MS * 1_000_000
_EVENT_NS_MAX = EVENT_TIME_MAX_MS * 1_000_000 + 999_999
_TWINNED = (  # text columns with a `*_raw` twin, by their buffer
    ("uuid", fp.T_UUID),
    ("type", fp.T_TYPE),
    ("logger", fp.T_LOGGER),
    ("payload", fp.T_PAYLOAD),
    ("env_version", fp.T_ENV_VERSION),
    ("hostname", fp.T_HOSTNAME),
)
_START_ROWS, _START_FIELDS, _START_ELEMENTS, _START_BYTES = 256, 1024, 4096, 1 << 16


def _names(names: tuple[str, ...]) -> pa.Array:
    """A few strings, to `take` a column's values from by code."""
    return pa.array(names, pa.string())


def _binary(lengths: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary column of values back to back in `data`."""
    return binary_column(pa.binary(), lengths, data)


def _lists(counts: np.ndarray, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets_of(counts)), values)


def _masked(values: np.ndarray, absent: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type_, mask=absent if absent.any() else None)


class Buffers:
    """One flush's rows as the compiled walk appends them (layout: `fastpath`), grown on
    demand: memory stays bounded by the flush (`batch_rows` rows or FLUSH_BYTES of
    frames) and the largest body. A flush hands its buffers to the batch, whose columns
    are views of them, and the next flush's are fresh ones of the same sizes (from Arrow's
    pool, which reuses the pages of batches let go): only the first flush grows them."""

    def __init__(self, source: str, batch_rows: int) -> None:
        self.source = source
        self.batch_rows = batch_rows
        rows = min(batch_rows, _START_ROWS)
        self.buffers = (
            pooled((fp.ROW_ROWS, rows), np.int64),
            pooled((fp.ROW_TEXTS, rows), np.int64),
            pooled((fp.FIELD_ROWS, _START_FIELDS), np.int64),
            pooled((fp.ELEMENT_ROWS, _START_ELEMENTS), np.int64),
            pooled(fp.TEXTS * _START_BYTES, np.uint8),
        )
        self.used = np.zeros(fp.USED, np.int64)
        self.used[fp.U_REGIONS :] = np.arange(fp.TEXTS + 1) * _START_BYTES

    @property
    def rows(self) -> int:
        return int(self.used[fp.U_ROWS])

    def grow(self, body_bytes: int) -> None:
        """Room for one more message of `body_bytes` (`fastpath.room`), and for the rest
        of a flush that goes on as it began: each buffer at least as large as the rows so
        far, scaled to a whole flush, would fill."""
        rows, lengths, fields, elements, arena = self.buffers
        used = self.used
        field_room, element_room, text_room = fp.room(body_bytes)
        rows_used = int(used[fp.U_ROWS])
        scale = self._flush_scale()

        def wider(table: np.ndarray, filled: int, room: int, most: int = 0) -> np.ndarray:
            size = table.shape[-1]
            if filled + room <= size:
                return table
            size = max(int(filled * scale) + room, min(2 * size, most or 2 * size))
            out = pooled((*table.shape[:-1], size), table.dtype)
            out[..., : table.shape[-1]] = table
            return out

        self.buffers = (
            wider(rows, rows_used, 1, self.batch_rows),
            wider(lengths, rows_used, 1, self.batch_rows),
            wider(fields, used[fp.U_FIELDS], field_room),
            wider(elements, max(used[fp.U_ELEMENTS : fp.U_TEXTS]), element_room),
            self._wider_arena(arena, text_room, scale),
        )

    def _flush_scale(self) -> float:
        """How many times the rows so far a whole flush holds, by the frames' bytes."""
        rows, frame_bytes = self.rows, int(self.used[fp.U_FRAME_BYTES])
        if not rows:
            return 1.0
        return min(self.batch_rows, rows * FLUSH_BYTES / frame_bytes) / rows

    def _wider_arena(self, arena: np.ndarray, text_room: int, scale: float) -> np.ndarray:
        """The arena with `text_room` free in every column's region, each at least as
        large as its bytes so far `scale`d (those short at least doubled)."""
        used = self.used
        filled = used[fp.U_TEXTS : fp.U_TEXTS + fp.TEXTS]
        regions = used[fp.U_REGIONS :]
        sizes = np.diff(regions)
        short = filled + text_room > sizes
        if not short.any():
            return arena
        sizes = np.maximum(
            np.where(short, 2 * sizes, sizes), (filled * scale).astype(np.int64) + text_room
        )
        bounds = np.zeros(fp.TEXTS + 1, np.int64)
        np.cumsum(sizes, out=bounds[1:])
        wider = pooled(int(bounds[-1]), np.uint8)
        for column in range(fp.TEXTS):
            at, new, size = regions[column], bounds[column], filled[column]
            wider[new : new + size] = arena[at : at + size]
        regions[:] = bounds
        return wider

    def _text(self, column: int) -> np.ndarray:
        """The bytes of a text column so far (a view of the arena)."""
        at = self.used[fp.U_REGIONS + column]
        return self.buffers[4][at : at + self.used[fp.U_TEXTS + column]]

    def flush(self) -> pa.RecordBatch:
        """The rows so far as a batch over the buffers, which fresh ones then replace; a
        batch that fills less than half of them (a stream's last) takes copies instead, so
        that it holds no more memory than its values."""
        used = self.used
        n, nf = int(used[fp.U_ROWS]), int(used[fp.U_FIELDS])
        rows_, lengths_, fields_, elements_, _ = self.buffers
        small = 2 * n < rows_.shape[1]
        taken = np.copy if small else np.asarray
        texts = [taken(self._text(column)) for column in range(fp.TEXTS)]
        rows, lengths, fields = taken(rows_[:, :n]), lengths_[:, :n], taken(fields_[:, :nf])
        elements = [
            taken(elements_[kind, : used[fp.U_ELEMENTS + kind]]) for kind in range(fp.ELEMENT_ROWS)
        ]
        columns = {
            "source_file": pa.repeat(pa.scalar(self.source, pa.string()), n),
            "byte_offset": pa.array(rows[fp.R_OFFSET]),
            "frame_length": pa.array(rows[fp.R_LENGTH].astype(np.int32)),
            "fields": self._fields(fields, elements, texts, rows[fp.R_FIELDS]),
        }
        status = rows[fp.R_STATUS]
        unsigned = status < 0
        columns["hmac_valid"] = _masked(status == 0, unsigned, pa.bool_())
        columns["hmac_status"] = _names(HMAC_STATUSES).take(pa.array(status, mask=unsigned))
        timestamp = rows[fp.R_TIMESTAMP]
        columns["timestamp"] = pa.array(timestamp)
        columns["event_time"] = _masked(
            timestamp // _NS_PER_US,
            (timestamp < _EVENT_NS_MIN) | (timestamp > _EVENT_NS_MAX),
            HEKA_SCHEMA.field("event_time").type,
        )
        for name, column in _TWINNED:
            columns[name], columns[f"{name}_raw"] = arrow_texts(
                _binary(lengths[column], texts[column])
            )
        columns["uuid_valid"] = pa.array(rows[fp.R_UUID_VALID].astype(bool))
        severity = rows[fp.R_SEVERITY]
        absent = severity == fp.NONE
        columns["severity"] = pa.array(
            np.where(absent, DEFAULT_SEVERITY, severity).astype(np.int32)
        )
        columns["severity_present"] = pa.array(~absent)
        pid = rows[fp.R_PID]
        columns["pid"] = _masked(pid.astype(np.int32), pid == fp.NONE, pa.int32())
        columns["unknown_fields"] = _binary(lengths[fp.T_UNKNOWN], texts[fp.T_UNKNOWN])
        columns["hmac_hash_function"] = _hash_names(rows[fp.R_HASH])
        columns["hmac_signer"] = arrow_texts(_binary(lengths[fp.T_SIGNER], texts[fp.T_SIGNER]))[0]
        version = rows[fp.R_VERSION]
        columns["hmac_key_version"] = _masked(version, version == fp.NONE, pa.int64())
        columns["hmac"] = _binary(lengths[fp.T_HMAC], texts[fp.T_HMAC])
        columns["body_encoding"] = _names(("protobuf", "snappy")).take(rows[fp.R_SNAPPY])
        used[: fp.U_REGIONS] = 0
        if not small:
            self.buffers = tuple(pooled(buffer.shape, buffer.dtype) for buffer in self.buffers)
        return pa.RecordBatch.from_arrays(
            [columns[name] for name in HEKA_SCHEMA.names], schema=HEKA_SCHEMA
        )

    @staticmethod
    def _fields(fields, elements, texts, counts) -> pa.Array:
        """The list<struct> `fields` column; row i has `counts[i]` Fields."""
        strings = _lists(
            fields[fp.FD_COUNTS + fp.E_STRING],
            _binary(elements[fp.E_STRING], texts[fp.T_STRING]),
        )
        children = [
            *arrow_texts(_binary(fields[fp.FD_NAME], texts[fp.T_NAME])),
            _type_names(fields[fp.FD_TYPE]),
            *arrow_texts(_binary(fields[fp.FD_REPRESENTATION], texts[fp.T_REPRESENTATION])),
            *arrow_text_lists(strings),
            _lists(
                fields[fp.FD_COUNTS + fp.E_BYTES],
                _binary(elements[fp.E_BYTES], texts[fp.T_BYTES]),
            ),
            _lists(fields[fp.FD_COUNTS + fp.E_INTEGER], pa.array(elements[fp.E_INTEGER])),
            _lists(
                fields[fp.FD_COUNTS + fp.E_DOUBLE],
                pa.array(elements[fp.E_DOUBLE].view(np.float64)),
            ),
            _lists(fields[fp.FD_COUNTS + fp.E_BOOL], pa.array(elements[fp.E_BOOL].astype(bool))),
            _binary(fields[fp.FD_UNKNOWN], texts[fp.T_FIELD_UNKNOWN]),
        ]
        structs = pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))
        return pa.ListArray.from_arrays(
            pa.array(offsets_of(counts)), structs, type=HEKA_SCHEMA.field("fields").type
        )


def _type_names(codes: np.ndarray) -> pa.Array:
    """Field.value_type codes (absent: 0) as their names, another code as its number."""
    if ((codes >= 0) & (codes < len(VALUE_TYPES))).all():
        return _names(VALUE_TYPES).take(codes)
    return pa.array([VALUE_TYPE_NAMES[code] for code in codes.tolist()], pa.string())


def _hash_names(codes: np.ndarray) -> pa.Array:
    """hmac_hash_function: MD5 or SHA1, another code as its number, null when absent."""
    absent = codes == fp.NONE
    known = absent | (codes == 0) | (codes == 1)
    if known.all():
        return _names(HASH_FUNCTIONS).take(pa.array(np.where(absent, 0, codes), mask=absent))
    return pa.array(
        [
            None if code == fp.NONE else HASH_FUNCTIONS[code] if code in (0, 1) else str(code)
            for code in codes.tolist()
        ],
        pa.string(),
    )
