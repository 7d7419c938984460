"""wirecodecs: pure-Python decoders and encoders for landed binary dumps.

No Spark, Airflow or Great Expectations here: a decoder takes a readable byte stream and
yields Arrow record batches of rows and quarantined frames (see `registry.WireFormat`).
"""

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.errors import DecodeError
from wirecodecs.registry import UnknownFormatError, WireFormat, get, names, source_format

__all__ = [
    "DecodeError",
    "FileAccounting",
    "Quarantined",
    "UnknownFormatError",
    "WireFormat",
    "get",
    "names",
    "source_format",
]
