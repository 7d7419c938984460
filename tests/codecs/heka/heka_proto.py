"""Heka's message/message.proto for the protobuf runtime, built from a FileDescriptorProto.

The independent oracle of the Heka tests and the floor of the benchmark: no protoc is
installed, so the schema is written out field by field from message.proto (gogoproto
options dropped, which do not change the wire format) and turned into message classes by
the runtime (upb). `PACKED=False` builds the wire-compatible twin that writes repeated
numerics unpacked, as lua_sandbox does for single values.
"""

from __future__ import annotations

from functools import cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
OPTIONAL, REQUIRED, REPEATED = F.LABEL_OPTIONAL, F.LABEL_REQUIRED, F.LABEL_REPEATED


def _field(message, name, number, label, type_, *, type_name=None, default=None, packed=None):
    field = message.field.add(name=name, number=number, label=label, type=type_)
    if type_name:
        field.type_name = type_name
    if default is not None:
        field.default_value = default
    if packed is not None:
        field.options.packed = packed


def file_descriptor(packed: bool = True) -> descriptor_pb2.FileDescriptorProto:
    """message.proto (proto2, package `message`); `packed` for value_integer/double/bool."""
    name = "message.proto" if packed else "message_unpacked.proto"
    proto = descriptor_pb2.FileDescriptorProto(
        name=name, package="message" if packed else "message_unpacked", syntax="proto2"
    )
    pkg = "." + proto.package

    header = proto.message_type.add(name="Header")
    hash_fn = header.enum_type.add(name="HmacHashFunction")
    hash_fn.value.add(name="MD5", number=0)
    hash_fn.value.add(name="SHA1", number=1)
    _field(header, "message_length", 1, REQUIRED, F.TYPE_UINT32)
    _field(
        header,
        "hmac_hash_function",
        3,
        OPTIONAL,
        F.TYPE_ENUM,
        type_name=f"{pkg}.Header.HmacHashFunction",
        default="MD5",
    )
    _field(header, "hmac_signer", 4, OPTIONAL, F.TYPE_STRING)
    _field(header, "hmac_key_version", 5, OPTIONAL, F.TYPE_UINT32)
    _field(header, "hmac", 6, OPTIONAL, F.TYPE_BYTES)

    field = proto.message_type.add(name="Field")
    value_type = field.enum_type.add(name="ValueType")
    for number, value in enumerate(("STRING", "BYTES", "INTEGER", "DOUBLE", "BOOL")):
        value_type.value.add(name=value, number=number)
    _field(field, "name", 1, REQUIRED, F.TYPE_STRING)
    _field(
        field,
        "value_type",
        2,
        OPTIONAL,
        F.TYPE_ENUM,
        type_name=f"{pkg}.Field.ValueType",
        default="STRING",
    )
    _field(field, "representation", 3, OPTIONAL, F.TYPE_STRING)
    _field(field, "value_string", 4, REPEATED, F.TYPE_STRING)
    _field(field, "value_bytes", 5, REPEATED, F.TYPE_BYTES)
    _field(field, "value_integer", 6, REPEATED, F.TYPE_INT64, packed=packed)
    _field(field, "value_double", 7, REPEATED, F.TYPE_DOUBLE, packed=packed)
    _field(field, "value_bool", 8, REPEATED, F.TYPE_BOOL, packed=packed)

    message = proto.message_type.add(name="Message")
    _field(message, "uuid", 1, REQUIRED, F.TYPE_BYTES)
    _field(message, "timestamp", 2, REQUIRED, F.TYPE_INT64)
    _field(message, "type", 3, OPTIONAL, F.TYPE_STRING)
    _field(message, "logger", 4, OPTIONAL, F.TYPE_STRING)
    _field(message, "severity", 5, OPTIONAL, F.TYPE_INT32, default="7")
    _field(message, "payload", 6, OPTIONAL, F.TYPE_STRING)
    _field(message, "env_version", 7, OPTIONAL, F.TYPE_STRING)
    _field(message, "pid", 8, OPTIONAL, F.TYPE_INT32)
    _field(message, "hostname", 9, OPTIONAL, F.TYPE_STRING)
    _field(message, "fields", 10, REPEATED, F.TYPE_MESSAGE, type_name=f"{pkg}.Field")
    return proto


@cache
def classes(packed: bool = True) -> tuple[type, type, type]:
    """(Header, Message, Field) classes of the runtime for the schema."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor(packed))
    package = "message" if packed else "message_unpacked"
    return tuple(
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name in ("Header", "Message", "Field")
    )
