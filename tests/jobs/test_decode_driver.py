"""The decode job's driver side without Spark: arguments, listing, work units, accounting."""

from __future__ import annotations

import pytest

from jobs.cli import JobFailed
from jobs.decode_args import parse_args
from jobs.plan import group_by_size, list_landing
from jobs.units import DataFile, FileReport
from jobs.verify import check_accounting, summarise
from wirecodecs import FileAccounting, get

DATE = "2024-03-01"


def _files(*sizes: int) -> list[DataFile]:
    return [
        DataFile(f"/landing/f{index}", f"/landing/f{index}", size)
        for index, size in enumerate(sizes)
    ]


def test_groups_are_balanced_largest_first():
    groups = group_by_size(_files(100, 60, 50, 40, 10, 5), 3)
    # By hand: 100 -> A; 60 -> B; 50 -> C; 40 -> C (50 < 60); 10 -> B (60 < 90); 5 -> B (70 < 90).
    assert sorted(sorted(file.size for file in group) for group in groups) == [
        [5, 10, 60],
        [40, 50],
        [100],
    ]


def test_never_more_groups_than_files_and_every_file_once():
    files = _files(7, 3)
    groups = group_by_size(files, 8)
    assert len(groups) == 2
    assert sorted(file.uri for group in groups for file in group) == ["/landing/f0", "/landing/f1"]
    assert group_by_size([], 4) == []


def test_listing_keeps_log_entries_and_sets_companions_aside(tmp_path):
    landing = tmp_path / "landing"
    layout = {
        "_SUCCESS": b"",
        ".staging": b"x",
        "_temporary/0/part.log": b"x",
        "orders-0/00000000000000000000.log": b"12345",
        "orders-0/00000000000000000000.index": b"i" * 8,
        "orders-0/00000000000000000000.timeindex": b"t" * 12,
        "orders-0/00000000000000000000.txnindex": b"",
        "orders-0/00000000000000000007.snapshot": b"",
        "orders-0/00000000000000000000.log.deleted": b"",
        "orders-0/leader-epoch-checkpoint": b"0\n1\n0 0\n",
        "orders-0/partition.metadata": b"version: 0\n",
        "orders-1.5f2c-delete/00000000000000000000.log": b"gone",
        "fetch/records.bin": b"abc",
    }
    for name, content in layout.items():
        path = landing / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)

    listing = list_landing(str(landing), get("kafka"))

    assert [(file.uri, file.size) for file in listing.files] == [
        (f"{landing}/fetch/records.bin", 3),
        (f"{landing}/orders-0/00000000000000000000.log", 5),
    ]
    reasons = {entry["uri"][len(str(landing)) + 1 :]: entry["reason"] for entry in listing.ignored}
    assert reasons == {
        "_SUCCESS": "hidden or marker",
        ".staging": "hidden or marker",
        "_temporary/0/part.log": "hidden or marker",
        "orders-0/00000000000000000000.index": "not kafka data",
        "orders-0/00000000000000000000.timeindex": "not kafka data",
        "orders-0/00000000000000000000.txnindex": "not kafka data",
        "orders-0/00000000000000000007.snapshot": "not kafka data",
        "orders-0/00000000000000000000.log.deleted": "not kafka data",
        "orders-0/leader-epoch-checkpoint": "not kafka data",
        "orders-0/partition.metadata": "not kafka data",
        "orders-1.5f2c-delete/00000000000000000000.log": "not kafka data",
    }


def _argv(landing, *extra: str) -> list[str]:
    return [
        "--source", "kafka", "--envelope", "kafka", "--date", DATE,
        "--landing", str(landing), "--warehouse", str(landing.parent / "warehouse"),
        "--reports", str(landing.parent / "reports"), *extra,
    ]  # fmt: skip


def test_options_are_typed_and_paths_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "landing").mkdir()
    argv = [
        "--source", "kafka", "--envelope", "kafka", "--date", DATE,
        "--landing", "landing", "--warehouse", "wh", "--reports", "rp",
        "--options", '{"batch_rows": 4096}',
    ]  # fmt: skip
    args = parse_args(argv)
    assert args.options.batch_rows == 4096  # an int, as the decoder expects
    assert (args.landing, args.warehouse) == (str(tmp_path / "landing"), str(tmp_path / "wh"))
    assert (args.error_policy, args.payload, args.date.isoformat()) == ("quarantine", "raw", DATE)


@pytest.mark.parametrize(
    ("extra", "replace", "message"),
    [
        ((), {"--date": "2024-02-30"}, "not a date YYYY-MM-DD: '2024-02-30'"),
        ((), {"--landing": "missing"}, "landing folder not found"),
        ((), {"--envelope": "nope"}, "unknown format 'nope'"),
        (("--payload", "avro9"), {}, "unknown payload 'avro9' for envelope 'kafka'"),
        ((), {"--source": "_quarantine"}, "--source must be a plain name"),
        (("--options", '{"no_such_option": 1}'), {}, "unknown option(s) for format kafka"),
        (("--options", "novalue"), {}, "options are not JSON"),
        (
            ("--options", '{"batch_rows": "many"}'),
            {},
            "option batch_rows must be int like its default",
        ),
        (("--max-error-rate", "1.5"), {}, "must be between 0 and 1"),
        (("--options", '{"batch_rows": 0}'), {}, "kafka decoder options: kafka option batch_rows"),
        (
            ("--options", '{"hmac_keys_file": "/no/such/keys.json"}'),
            {"--envelope": "heka"},
            "heka decoder options: heka option hmac_keys_file: cannot read /no/such/keys.json",
        ),
        (("--max-bad-byte-rate", "-0.5"), {}, "must be between 0 and 1"),
        (("--error-policy", "ignore"), {}, "invalid choice: 'ignore'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, extra, replace, message):
    landing = tmp_path / "landing"
    landing.mkdir()
    argv = _argv(landing, *extra)
    for flag, value in replace.items():
        argv[argv.index(flag) + 1] = str(tmp_path / value) if flag == "--landing" else value
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def _account(source: str, total: int, **counts: int) -> FileReport:
    accounting = FileAccounting(source=source, format="kafka", bytes_total=total, **counts)
    return FileReport(accounting, 0, 0, {}, first_bad=[], figures={})


def test_balanced_accounting_passes_and_sums_up():
    files = _files(100, 50)
    accounts = [
        _account(files[0].uri, 100, bytes_decoded=90, bytes_truncated_tail=10, frames_good=3),
        _account(
            files[1].uri, 50, bytes_decoded=20, bytes_quarantined=30, frames_good=1, frames_bad=1
        ),
    ]
    check_accounting(accounts, files)
    totals = summarise(accounts)
    assert (totals.files, totals.accounting.bytes_total, totals.truncated_tail_files) == (2, 150, 1)
    assert totals.error_rate == 1 / 5
    assert (totals.bad_bytes, totals.bad_byte_rate) == (40, 40 / 150)


@pytest.mark.parametrize(
    ("accounts", "message"),
    [
        ([_account("/landing/f0", 100, bytes_decoded=99)], "/landing/f0: listed 100 bytes"),
        ([_account("/landing/f0", 120, bytes_decoded=120)], "/landing/f0: listed 100 bytes"),
        ([], "/landing/f0: not decoded"),
        ([_account("/landing/f0", 100, bytes_decoded=100)] * 2, "/landing/f0: decoded 2 times"),
    ],
    ids=["unbalanced", "file-changed-size", "missing", "twice"],
)
def test_accounting_that_does_not_balance_fails_loudly(accounts, message):
    with pytest.raises(JobFailed, match="byte accounting does not balance") as failed:
        check_accounting(accounts, _files(100))
    assert message in str(failed.value)
