"""Which files in a landed Kafka partition directory hold log entries (docs/kafka.md §1).

A partition directory holds `.log` segments next to companions that are not log entries:
offset/time/transaction indexes, producer-state snapshots, `leader-epoch-checkpoint`,
`partition.metadata`, and files or directories the broker is about to delete or swap.
Raw fetch dumps (`*.bin`) and anything else are treated as data.
"""

from __future__ import annotations

from pathlib import PurePosixPath

COMPANION_SUFFIXES = frozenset(
    {".index", ".timeindex", ".txnindex", ".snapshot", ".deleted", ".cleaned", ".swap"}
)
COMPANION_NAMES = frozenset({"leader-epoch-checkpoint", "partition.metadata"})
TRANSIENT_DIR_SUFFIXES = ("-delete", "-future")  # partition dirs being removed or moved


def is_data_file(relative_path: str) -> bool:
    """True for a landed file that holds Kafka log entries (`WireFormat.data_file`)."""
    path = PurePosixPath(relative_path)
    if path.name in COMPANION_NAMES or path.suffix in COMPANION_SUFFIXES:
        return False
    return not any(part.endswith(TRANSIENT_DIR_SUFFIXES) for part in path.parent.parts)
