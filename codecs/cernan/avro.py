"""The Avro object container file inside a cernan packet (docs/cernan.md, "Avro container").

cernan itself checks only the container header; here the whole container is walked: the
header map, then every block framed by hand (count, size, sync marker, decompression,
snappy CRC) so that each kind of damage gets its own code, and the datums of each block
are read with fastavro's C `schemaless_reader`, which must consume the block exactly: one
call per block (the block read as an Avro array), datum by datum only to name an error.
In `compiled` walks, a block whose schema has a `compiled` program goes to its JSON text
directly (the `record_json` column); a block it cannot take raises `NeedsPurePath`, and
the packet is read again without it.
"""

from __future__ import annotations

import functools
import io
import json
import re
import zlib
from dataclasses import dataclass, field

from fastavro import parse_schema, schemaless_reader
from fastavro.read import SchemaResolutionError
from fastavro.schema import fingerprint, to_parsing_canonical_form

from wirecodecs.binary import UINT32
from wirecodecs.compiled import WALKS
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError

FORMAT = "cernan"
MAGIC = b"Obj\x01"
SYNC_SIZE = 16
CODECS = ("null", "deflate", "snappy")  # what cernan's serde-avro accepts (absent = null)
_MAX_VARINT_BYTES = 10
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEMA_CACHE_SIZE = 256  # writer schemas kept parsed (pycernan resends one per packet)


class NeedsPurePath(Exception):
    """A block the compiled walk cannot render exactly: read the packet again without it."""


class PacketError(Exception):
    """One packet-level failure, as the sidecars name it: stage, code, detail.

    `records_before` counts datums of whole blocks decoded before a block-stage error
    (what a per-block salvage policy could keep); `lost` the datums declared up to it.
    """

    def __init__(self, stage: str, code: str, detail: str) -> None:
        super().__init__(f"{stage}/{code}: {detail}")
        self.stage = stage
        self.code = code
        self.detail = detail
        self.records_before = None
        self.lost = 0
        self.container: Container | None = None


def _header_error(code: str, detail: str) -> PacketError:
    return PacketError("avro_header", code, detail)


@dataclass(frozen=True)
class WriterSchema:
    """A parsed writer schema and what identifies it (cached by its raw JSON)."""

    parsed: object
    full_name: str  # the full name, or the type of an unnamed schema
    fingerprint: str  # CRC-64-AVRO of the canonical form, hex of the little-endian bytes
    warnings: tuple[str, ...]
    min_datum_bytes: int  # a lower bound on one datum's encoded size
    floats: bool  # float or double somewhere (NaN and infinities need the exact JSON path)

    @functools.cached_property
    def program(self):
        """The compiled JSON walk's `compiled.Program` for its datums, made on first use;
        None where only the pure path renders them exactly."""
        walk = compiled_walk()
        return None if walk is None else walk.program(self.parsed)


@dataclass
class Container:
    """One container's header facts and, once walked, its blocks and datums."""

    codec: str
    schema_json: str
    schema: WriterSchema
    sync: bytes
    user_metadata: dict[str, bytes]
    header_length: int
    block_counts: list[int] = field(default_factory=list)  # declared, of whole good blocks
    datums: list = field(default_factory=list)
    json_blocks: list = field(default_factory=list)  # compiled walk: (text, datum ends) per block


_schemas: dict[bytes, WriterSchema] = {}


def compiled_walk():
    """The compiled JSON walk (`compiled.py`), imported on first use; None without it."""
    return WALKS["cernan"].module()


def _long(buf, pos: int, code: str, what: str) -> tuple[int, int]:
    """A zig-zag varint long; running out of bytes is `code` naming `what`."""
    shift = result = 0
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= len(buf):
            raise PacketError(_stage(code), code, what)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise PacketError(_stage(code), code, f"{what}: varint longer than {_MAX_VARINT_BYTES} bytes")


def _stage(code: str) -> str:
    return "avro_block" if code == "avro_block_truncated" else "avro_header"


def _sized(buf, pos: int, what: str) -> tuple[memoryview, int]:
    size, pos = _long(buf, pos, "avro_truncated_header", what)
    if size < 0 or size > len(buf) - pos:
        raise _header_error("avro_truncated_header", what)
    return buf[pos : pos + size], pos + size


@dataclass(frozen=True)
class _Header:
    """What a container header's metadata map says, once checked."""

    meta_bytes: bytes  # the map as sent, after the magic: a header that repeats it reads alike
    codec: str
    codec_absent: bool
    schema: WriterSchema
    schema_json: str
    user_metadata: dict[str, bytes]


_recent_headers: list[_Header] = []  # pycernan sends the same metadata with every packet
_RECENT_HEADERS = 8


def read_header(buf: memoryview, warnings: list[str]) -> Container:
    """The container header: magic, metadata map, sync marker; schema and codec checked.
    A metadata map that repeats one of the last few read is not walked again."""
    if len(buf) < len(MAGIC):
        raise _header_error("avro_truncated_header", f"{len(buf)} bytes")
    if buf[: len(MAGIC)] != MAGIC:
        raise _header_error("avro_bad_magic", bytes(buf[: len(MAGIC)]).hex())
    start = len(MAGIC)
    header = next(
        (h for h in _recent_headers if buf[start : start + len(h.meta_bytes)] == h.meta_bytes),
        None,
    )
    if header is None:
        meta, end = _read_meta(buf, start)
        if len(buf) - end < SYNC_SIZE:
            raise _header_error("avro_truncated_header", "sync marker")
        header = _checked(bytes(buf[start:end]), meta)
    else:
        end = start + len(header.meta_bytes)
        if len(buf) - end < SYNC_SIZE:
            raise _header_error("avro_truncated_header", "sync marker")
    if header.codec_absent:
        warnings.append("avro_codec_key_absent")
    warnings.extend(header.schema.warnings)
    return Container(
        codec=header.codec,
        schema_json=header.schema_json,
        schema=header.schema,
        sync=bytes(buf[end : end + SYNC_SIZE]),
        user_metadata=dict(header.user_metadata),
        header_length=end + SYNC_SIZE,
    )


def _read_meta(buf: memoryview, pos: int) -> tuple[dict[str, bytes], int]:
    """The metadata map and where it ends."""
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _long(buf, pos, "avro_truncated_header", "meta count")
        if count == 0:
            return meta, pos
        if count < 0:  # a negative count is followed by the block's byte size
            count = -count
            _, pos = _long(buf, pos, "avro_truncated_header", "meta block size")
        for _ in range(count):
            key, pos = _sized(buf, pos, "meta key")
            value, pos = _sized(buf, pos, "meta value")
            try:
                meta[str(key, "utf-8")] = bytes(value)
            except UnicodeDecodeError:
                raise _header_error("avro_bad_metadata", "metadata key is not UTF-8") from None


def _checked(meta_bytes: bytes, meta: dict[str, bytes]) -> _Header:
    """The map's schema and codec checked; the result is remembered for its bytes."""
    raw_schema = meta.get("avro.schema")
    if raw_schema is None:
        raise _header_error("avro_missing_schema", "")
    schema = writer_schema(raw_schema)
    codec_raw = meta.get("avro.codec")
    codec = "null" if codec_raw is None else codec_raw.decode("utf-8", "replace")
    if codec not in CODECS:
        raise _header_error("avro_unsupported_codec", codec)
    header = _Header(
        meta_bytes=meta_bytes,
        codec=codec,
        codec_absent=codec_raw is None,
        schema=schema,
        schema_json=raw_schema.decode("utf-8", "replace"),
        user_metadata={k: v for k, v in meta.items() if not k.startswith("avro.")},
    )
    _recent_headers.insert(0, header)
    del _recent_headers[_RECENT_HEADERS:]
    return header


def writer_schema(raw: bytes) -> WriterSchema:
    """Parse (or take from the cache) a writer schema; bad JSON or a schema fastavro
    refuses is a header error. Names outside the Avro spec (BlueOx's `blueox.web-1`)
    parse, with a warning: Java Avro would refuse them, producers send them."""
    cached = _schemas.get(raw)
    if cached is not None:
        return cached
    try:
        loaded = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise _header_error("avro_bad_schema_json", str(err)) from None
    try:
        parsed = parse_schema(loaded)
        canonical = to_parsing_canonical_form(parsed)
    except Exception as err:  # fastavro raises several types for invalid schemas
        raise _header_error("avro_schema_invalid", f"{type(err).__name__}: {err}") from None
    warnings = []
    if isinstance(loaded, list):
        warnings.append("top_level_union_schema")  # cernan rejects it; it decodes
    if not all(_AVRO_NAME.fullmatch(part) for part in _names(loaded)):
        warnings.append("schema_name_not_avro_spec_valid")
    named = isinstance(parsed, dict) and "name" in parsed
    schema = WriterSchema(
        parsed=parsed,
        full_name=parsed["name"] if named else _type_name(loaded),
        fingerprint=fingerprint(canonical, "CRC-64-AVRO"),
        warnings=tuple(warnings),
        min_datum_bytes=min_bytes(parsed, {}),
        floats='"float"' in canonical or '"double"' in canonical,
    )
    if len(_schemas) >= _SCHEMA_CACHE_SIZE:
        _schemas.clear()
    _schemas[raw] = schema
    return schema


def _type_name(schema) -> str:
    """What an unnamed top-level schema is called: "string", "array", "union"..."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict) and isinstance(schema.get("type"), str):
        return schema["type"]
    return "union"


def _names(schema) -> list[str]:
    """Every dotted part of every name and namespace declared in a schema (JSON form)."""
    if isinstance(schema, list):
        return [part for branch in schema for part in _names(branch)]
    if not isinstance(schema, dict):
        return []
    parts = []
    for key in ("name", "namespace"):
        value = schema.get(key)
        if isinstance(value, str) and value:
            parts += value.split(".")
    for child in (schema.get("items"), schema.get("values"), schema.get("type")):
        if isinstance(child, dict | list):
            parts += _names(child)
    for item in schema.get("fields") or ():
        if isinstance(item, dict):
            parts += _names(item.get("type"))
    return parts


_PRIMITIVE_MIN = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8}


def min_bytes(schema, named: dict) -> int:
    """A lower bound on the encoded size of one datum of a parsed schema: a block that
    declares more datums than its bytes could hold is refused before reading any."""
    if isinstance(schema, list):
        return 1  # the branch index
    if isinstance(schema, str):
        if schema in _PRIMITIVE_MIN:
            return _PRIMITIVE_MIN[schema]
        return named.get(schema, 0)  # a named type (0 while it is being sized: recursion)
    kind = schema["type"]
    if kind == "record":
        named[schema["name"]] = 0
        size = sum(min_bytes(item["type"], named) for item in schema["fields"])
        named[schema["name"]] = size
        return size
    if kind == "fixed":
        named[schema["name"]] = schema["size"]
        return schema["size"]
    if kind == "enum":
        named[schema["name"]] = 1
        return 1
    if kind in ("array", "map", "bytes", "string"):
        return 1
    return min_bytes(kind, named)


def read_blocks(
    container: Container,
    buf: memoryview,
    max_decompressed: int,
    reader_schema=None,
    compiled: bool = False,
) -> None:
    """Walk every data block after the header into `container.datums` (`compiled`: into
    `container.json_blocks` where the schema has a program); any damage is a PacketError
    of stage avro_block carrying what was decoded before it."""
    compiled = compiled and reader_schema is None and container.schema.program is not None
    pos = container.header_length
    while pos < len(buf):
        at = pos
        count = 0
        try:
            count, pos = _long(buf, pos, "avro_block_truncated", f"block at {at}: count")
            count_bytes = buf[at:pos]
            size, pos = _long(buf, pos, "avro_block_truncated", f"block at {at}: size")
            if count < 0 or size < 0:
                raise PacketError(
                    "avro_block", "avro_block_invalid", f"block at {at}: count {count}, size {size}"
                )
            left = len(buf) - pos
            if size + SYNC_SIZE > left:
                raise PacketError(
                    "avro_block",
                    "avro_block_truncated",
                    f"block at {at} needs {size}+{SYNC_SIZE} bytes, {left} left",
                )
            data = buf[pos : pos + size]
            pos += size
            if buf[pos : pos + SYNC_SIZE] != container.sync:
                raise PacketError("avro_block", "avro_sync_mismatch", f"block at {at}")
            pos += SYNC_SIZE
            raw = _block_data(container.codec, data, at, max_decompressed)
            _read_datums(container, raw, count, at, count_bytes, reader_schema, pos - at, compiled)
        except PacketError as err:
            err.records_before = sum(container.block_counts)
            err.lost = err.records_before + max(count, 0)
            err.container = container
            raise
        container.block_counts.append(count)


def _block_data(codec: str, data: memoryview, at: int, max_bytes: int):
    if codec == "null":
        return data
    if codec == "deflate":  # raw RFC 1951, no zlib header or checksum
        inflater = zlib.decompressobj(-15)
        try:
            raw = inflater.decompress(data, max_bytes + 1)
        except zlib.error as err:
            raise PacketError("avro_block", "avro_decompress_failed", str(err)) from None
        if len(raw) > max_bytes:
            raise PacketError(
                "avro_block", "avro_decompress_failed", f"block at {at}: over {max_bytes} bytes"
            )
        if not inflater.eof:
            raise PacketError(
                "avro_block", "avro_decompress_failed", f"block at {at}: deflate stream cut"
            )
        return raw
    if len(data) < 4:  # snappy: raw block, then CRC-32 (big-endian) of the output
        raise PacketError("avro_block", "avro_decompress_failed", f"block at {at}: no CRC")
    try:
        raw = decompress("snappy", data[:-4], max_bytes, fmt=FORMAT)
    except DecodeError as err:
        raise PacketError("avro_block", "avro_decompress_failed", err.detail) from None
    if zlib.crc32(raw) != UINT32.unpack_from(data, len(data) - 4)[0]:
        raise PacketError("avro_block", "avro_snappy_crc_mismatch", f"block at {at}")
    return raw


def _read_block_at_once(container, raw, count, count_bytes, parsed, reader_schema) -> bool:
    """The block's datums in one C call, read as an Avro array (the block's own count
    bytes, the datums, an end-of-array 0) into `container.datums`. True when exactly
    `count` datums filled the block to its end; otherwise (an error, a short or long read)
    nothing is kept and the datum by datum walk says what is wrong. Only for datums that
    take bytes: after a short read the array goes on with a count read from the block's
    leftover bytes, which datums of 0 bytes would never exhaust."""
    if not count:
        return False
    framed = b"".join((count_bytes, raw, b"\x00"))
    stream = io.BytesIO(framed)
    array = {"type": "array", "items": parsed}
    reader_array = None if reader_schema is None else {"type": "array", "items": reader_schema}
    try:
        datums = schemaless_reader(stream, array, reader_array)
    except Exception:  # any failure: `_read_datums` reads it again to name it
        return False
    if len(datums) != count or stream.tell() != len(framed):
        return False
    container.datums += datums
    return True


def _read_datums(
    container, raw, count, at, count_bytes, reader_schema, wire_bytes, compiled
) -> None:
    """`count` datums that must fill the block exactly; a count that the block's bytes
    cannot hold is refused before any is read. Datums that may take no bytes (of a "null"
    schema, an empty record) are charged one byte each of the block as written (count,
    size, data and sync: `wire_bytes`), so that no block yields more rows than it has
    bytes: a few bytes declaring millions of them would otherwise cost seconds and GiBs."""
    min_datum = container.schema.min_datum_bytes
    limit = len(raw) // min_datum if min_datum else wire_bytes
    if count > limit:
        raise PacketError(
            "avro_block",
            "avro_datum_decode_failed",
            f"block at {at}: {count} datums cannot fit in {len(raw)} bytes"
            + ("" if min_datum else f" ({wire_bytes} as written, datums of no bytes)"),
        )
    if compiled:
        rendered = compiled_walk().render_block(container.schema.program, raw, count)
        if rendered is None:
            raise NeedsPurePath
        container.json_blocks.append(rendered)
        return
    parsed = container.schema.parsed
    if min_datum and _read_block_at_once(container, raw, count, count_bytes, parsed, reader_schema):
        return
    stream = io.BytesIO(raw)
    try:
        container.datums += [schemaless_reader(stream, parsed, reader_schema) for _ in range(count)]
    except SchemaResolutionError as err:
        raise PacketError("avro_block", "avro_schema_mismatch", str(err)) from None
    except Exception as err:  # fastavro: EOFError, ValueError, UnicodeDecodeError, ...
        raise PacketError(
            "avro_block", "avro_datum_decode_failed", f"block at {at}: {type(err).__name__}"
        ) from None
    unread = len(raw) - stream.tell()
    if unread:
        raise PacketError(
            "avro_block", "avro_block_trailing_bytes", f"block at {at}: {unread} unread bytes"
        )
