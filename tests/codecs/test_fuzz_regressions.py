"""What the fuzzer (`./wirelake fuzz`) caught, kept: every input under
tests/data/fuzz/<target>/ once broke a decoder's contract and is held to all of it again
(fuzz_targets.check: no escaped exception, balanced accounting over the input, quarantined
items adding up, the same outcome whatever the read sizes, within time and memory).

And a smoke run of the fuzzer itself per target: a fixed libFuzzer seed and a fixed number
of inputs (not a time), so that every run gives the same verdict. The number is the
profile's count (tests/budget.py: 100 under "full", 10 under "quick"), and the seed files
are swept like an exhaustive test's positions (all under "full", a tenth under "quick"),
so that the seeds, run first, stay within it.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from budget import examples, sweep
from decoding import decode_all
from fastavro import schemaless_writer
from fuzz_targets import (
    DATA,
    TARGETS,
    ContractBroken,
    Limits,
    check,
    regression_inputs,
    seed_files,
)

from wirecodecs.cernan import encoder as cernan

LIMITS = Limits(seconds=10, base_bytes=64 << 20, bytes_per_input_byte=64)
FUZZER = Path(__file__).resolve().parents[1] / "fuzz" / "fuzz_decoders.py"
SMOKE_RUNS = examples(1)  # inputs per target, seeds included: 100 under "full"
SMOKE_MAX_LEN = 2048  # bytes: seeds are cut there, so each input is quick
# libFuzzer's memory limit reads the process's peak RSS, which a process inherits from
# the one that starts it: started from this test process, grown by the tests before, the
# fuzzer would begin over its limit. A small Python in between starts it with a fresh peak.
RELAY = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


@pytest.fixture(scope="module", autouse=True)
def warm() -> None:
    """Every kept input decoded once, unbounded, before any decode is timed: numba
    compiles a walk, for each kind of buffer it meets, at its first call, for seconds on
    a cold cache. A broken contract is left for the test to report."""
    check(TARGETS["kafka"], (DATA / "kafka" / "v2_none.log").read_bytes())
    for target, path in regression_inputs():
        with contextlib.suppress(ContractBroken):
            check(TARGETS[target], path.read_bytes())


@pytest.mark.parametrize(
    ("target", "path"),
    [
        pytest.param(target, path, id=f"{target}/{path.name}")
        for target, path in regression_inputs()
    ],
)
def test_kept_input_keeps_the_contract(target: str, path: Path) -> None:
    check(TARGETS[target], path.read_bytes(), LIMITS)


def avro_long(value: int) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, "long", value)
    return out.getvalue()


# count -> decoded: a block of 1-byte count, 1-byte size and 16-byte sync has 18 bytes
@pytest.mark.parametrize(
    ("count", "decoded"), [(1, True), (18, True), (19, False), (1 << 20, False)]
)
def test_cernan_datums_of_no_bytes_are_charged_a_byte_of_their_block(count, decoded):
    """A "null" datum takes no bytes: a block of them yields at most one per byte it has on
    the wire, as every other schema does, not a million rows from 20 bytes."""
    sync = bytes(range(16))
    block = avro_long(count) + avro_long(0) + sync
    avro = cernan.container("null", [], sync_marker=sync) + block
    got = decode_all(cernan.encode([cernan.Packet(avro)]), fmt="cernan")
    assert got.accounting.records_good == (count if decoded else 0)
    assert [q.kind for q in got.quarantined] == ([] if decoded else ["avro_datum_decode_failed"])


@pytest.mark.parametrize("target", list(TARGETS))
def test_fuzzer_smoke(target: str, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    files = seed_files(TARGETS[target], seeds)
    for path in set(files) - set(sweep(files)):
        path.unlink()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    command = [
        *(sys.executable, "-c", RELAY),
        sys.executable,
        str(FUZZER),
        f"--target={target}",
        "-seed=1",
        f"-runs={SMOKE_RUNS}",
        f"-max_len={SMOKE_MAX_LEN}",
        f"-artifact_prefix={tmp_path}/",
        str(corpus),
        str(seeds),
    ]
    done = subprocess.run(
        command,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"Done {SMOKE_RUNS} runs" in done.stderr
