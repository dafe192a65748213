"""``pixrecon export`` as finance runs it: to standard output or a file, every kind and
format, and one line on stderr with exit code 2 whenever it cannot do what was asked."""

from __future__ import annotations

import csv
import errno
import io
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
import structlog
from ofxtools.Parser import OFXTree
from sqlalchemy import text

from pixrecon.cli import run
from pixrecon.commands.common import cannot_write
from reconcile.db import create_db_engine
from reconcile.nightly import reconcile_day
from reconcile.settings import get_settings
from reconcile.timeutil import business_day_bounds
from tests.cli_support import clean_env, run_pixrecon
from tests.reconcile.day_book import DayBook

DAY = date(2026, 3, 10)
AFTER = business_day_bounds(DAY)[1] + timedelta(hours=2)
Result = tuple[int, str, str]


@pytest.fixture
def database(tmp_path: Path, sqlite_template: Path) -> str:
    """A SQLite file with a reconciled day: a Pix whose fee the provider netted from its
    line, and a statement line nobody explains (an exception)."""
    path = tmp_path / "export.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    book = DayBook(engine, DAY)
    e2e = book.pix(15_000, "10:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 14_901, "10:00", credit=True, endToEndId=e2e, feeAmount="0.99")
    book.line("ADJUSTMENT", 1_234, "15:00", credit=False)
    reconcile_day(engine, DAY, now=AFTER)
    engine.dispose()
    return url


@pytest.fixture
def pixrecon(
    database: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., Result]]:
    """The console script's own entry point, in this process: (exit code, stdout, stderr)."""
    for name, value in clean_env(database_url=database, log_json="0").items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    saved, handlers = structlog.get_config(), logging.getLogger().handlers[:]
    capfd.readouterr()

    def invoke(*args: str) -> Result:
        code = run(list(args))
        out, err = capfd.readouterr()
        return code, out, err

    try:
        yield invoke
    finally:
        get_settings.cache_clear()
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers


def _one_line(result: Result, says: str) -> None:
    code, out, err = result
    assert code == 2, result
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert says in " ".join(err.split())  # however the terminal wraps it
    assert "Traceback" not in err


def test_standard_output_and_a_file_hold_the_same_export(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    asked = ("export", "--date", DAY.isoformat(), "--kind", "exceptions", "--format", "csv")
    code, out, err = pixrecon(*asked)
    assert (code, err) == (0, "")
    (row,) = list(csv.DictReader(io.StringIO(out, newline="")))
    assert row["key"].startswith(f"exc:{DAY.isoformat()}:statement:")
    assert (row["status"], row["actual"]) == ("unexplained", "12.34")
    assert pixrecon(*asked, "--output", "-")[1] == out

    target = tmp_path / "out" / "exceptions.csv"
    target.parent.mkdir()
    code, said, err = pixrecon(*asked, "-o", str(target))
    assert (code, err) == (0, "")
    assert "exported the exceptions of 10/03/2026" in said
    assert target.read_bytes().decode("utf-8") == out
    assert [p.name for p in target.parent.iterdir()] == ["exceptions.csv"]  # no .partial


def test_a_link_a_named_pipe_and_a_device_take_the_export_as_such(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    asked = ("export", "--date", DAY.isoformat(), "--kind", "exceptions", "--format", "csv")
    expected = pixrecon(*asked)[1]
    # A link stays a link: the file it names gets the export.
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old")
    link.symlink_to(real)
    assert pixrecon(*asked, "-o", str(link))[0] == 0
    assert link.is_symlink()
    assert real.read_bytes().decode("utf-8") == expected
    # A named pipe is written into, for whoever reads it, and stays a pipe.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()))
    reader.start()
    code, out, err = pixrecon(*asked, "-o", str(pipe))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert got == [expected.encode("utf-8")]
    # Said on stderr: on standard output it could land in the data.
    assert out == ""
    assert "exported the exceptions" in err
    # A device that takes nothing says so, and stays what it was.
    _one_line(pixrecon(*asked, "-o", "/dev/full"), "cannot write /dev/full: no space left")
    assert stat.S_ISCHR(Path("/dev/full").stat().st_mode)


def test_a_folder_that_takes_no_new_file_is_named_for_what_it_is(
    pixrecon: Callable[..., Result],
) -> None:
    _one_line(
        pixrecon(
            "export",
            "--date",
            DAY.isoformat(),
            "--kind",
            "exceptions",
            "-f",
            "csv",
            "-o",
            "/proc/exceptions.csv",
        ),
        "cannot write /proc/exceptions.csv: no file can be created in /proc",
    )


def test_a_file_where_a_folder_should_be_is_named_for_what_it_is(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    in_the_way = tmp_path / "hostname"
    in_the_way.write_text("not a folder")
    asked = ("export", "--date", DAY.isoformat(), "--kind", "exceptions", "-f", "csv")
    _one_line(
        pixrecon(*asked, "-o", str(in_the_way / "deeper" / "x.csv")),
        f"cannot write {in_the_way}/deeper/x.csv: {in_the_way} is a file, not a folder",
    )


def test_reconcile_refuses_a_path_that_takes_no_file_before_it_runs(
    pixrecon: Callable[..., Result], database: str
) -> None:
    def runs() -> int:
        engine = create_db_engine(database)
        try:
            with engine.connect() as connection:
                return int(
                    connection.execute(text("SELECT count(*) FROM reconciliation_run")).scalar_one()
                )
        finally:
            engine.dispose()

    before = runs()
    _one_line(
        pixrecon(
            "reconcile", "--date", DAY.isoformat(), "--no-poll", "--export", "csv", "/proc/version"
        ),
        "cannot write /proc/version: no file can be created in /proc",
    )
    # Refused before the day was judged: no run, and no verdict of it to look for.
    assert runs() == before


def test_each_kind_in_its_formats(pixrecon: Callable[..., Result]) -> None:
    day = DAY.isoformat()
    code, out, _ = pixrecon("export", "--date", day, "--kind", "movements", "-f", "jsonl")
    assert code == 0
    keys = [json.loads(line)["key"] for line in out.splitlines()]
    assert any(key.startswith("movement:E") for key in keys)
    assert any(key.startswith("statement:line-") for key in keys)

    code, out, _ = pixrecon("export", "--date", day, "--kind", "statement", "-f", "csv", "--excel")
    assert code == 0
    assert out.startswith("\ufeffkey;date;booked_at;")
    rows = list(csv.DictReader(io.StringIO(out[1:], newline=""), delimiter=";"))
    assert [r["amount"] for r in rows] == ["150,00", "-0,99", "-12,34"]

    code, out, _ = pixrecon("export", "--date", day, "--kind", "statement", "-f", "ofx")
    assert code == 0
    tree = OFXTree()
    tree.parse(io.BytesIO(out.encode("ascii")))
    (statement,) = tree.convert().statements
    assert [str(t.trnamt) for t in statement.transactions] == ["150.00", "-0.99", "-12.34"]
    assert statement.account.acctid == "PIXRECON"  # no account configured: the placeholder


def test_a_statement_nobody_read_is_exported_with_a_warning(
    pixrecon: Callable[..., Result],
) -> None:
    """The day before has no line stored and no run: its empty statement is no proof that
    nothing moved, and stderr says so; the day that was read and judged says nothing."""
    before = (DAY - timedelta(days=1)).isoformat()
    for fmt in ("csv", "ofx"):
        code, out, err = pixrecon("export", "--date", before, "--kind", "statement", "-f", fmt)
        assert code == 0
        said = " ".join(err.split())
        assert "no completed run of the day read its statement" in said, err
        assert f"pixrecon reconcile --date {before}" in said
        assert out  # the file itself is still written
    code, _, err = pixrecon("export", "--date", DAY.isoformat(), "--kind", "statement", "-f", "csv")
    assert (code, err) == (0, "")


def test_what_cannot_be_done_is_one_line_and_exit_two(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    day = DAY.isoformat()
    _one_line(
        pixrecon("export", "--date", "2026-02-30", "--kind", "movements", "-f", "csv"),
        "--date '2026-02-30' is not a day (February 2026 has 28 days)",
    )
    _one_line(
        pixrecon("export", "--date", day, "--kind", "exceptions", "-f", "ofx"),
        "--format ofx is for --kind statement only",
    )
    _one_line(
        pixrecon("export", "--date", day, "--kind", "movements", "-f", "jsonl", "--excel"),
        "--excel goes with --format csv only, not jsonl",
    )
    _one_line(
        pixrecon("export", "--date", day, "--kind", "everything", "-f", "csv"),
        "'everything' is not one of",
    )
    _one_line(
        pixrecon("export", "--date", "2026-03-11", "--kind", "movements", "-f", "csv"),
        "run `pixrecon reconcile --date 2026-03-11` first",
    )
    missing = tmp_path / "no-such-folder" / "x.csv"
    _one_line(
        pixrecon("export", "--date", day, "--kind", "exceptions", "-f", "csv", "-o", str(missing)),
        f"cannot write {missing}: the folder {missing.parent} does not exist",
    )


def test_a_folder_as_the_output_is_refused_with_what_to_do(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    asked = ("export", "--date", DAY.isoformat(), "--kind", "exceptions", "-f", "csv")
    _one_line(
        pixrecon(*asked, "-o", str(folder)),
        f"cannot write {folder}: it is a folder: name a file, e.g. {folder}/NAME",
    )
    assert list(folder.iterdir()) == []  # no .partial left behind


def test_reconcile_refuses_an_export_path_before_reconciling(
    pixrecon: Callable[..., Result], tmp_path: Path, database: str
) -> None:
    runs_before = _runs(database)
    _one_line(
        pixrecon(
            "reconcile", "--date", DAY.isoformat(), "--no-poll", "--export", "csv", str(tmp_path)
        ),
        f"cannot write {tmp_path}: it is a folder: name a file",
    )
    assert _runs(database) == runs_before  # nothing was reconciled for nothing


def test_reconcile_says_what_to_do_when_its_export_cannot_be_written(
    pixrecon: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "exceptions.csv"

    def refused(chunks: object, path: Path) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr("pixrecon.commands.reconcile.to_file", refused)
    code, _, err = pixrecon(
        "reconcile", "--date", DAY.isoformat(), "--no-poll", "--export", "csv", str(target)
    )
    assert code == 2
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    said = " ".join(line.split())
    assert f"cannot write {target}: permission denied: name a file in a folder" in said
    assert f"`pixrecon export --date {DAY.isoformat()} --kind exceptions`" in said


@pytest.mark.parametrize(
    ("number", "says"),
    [
        (errno.EACCES, "permission denied: name a file in a folder you may write to"),
        (errno.EROFS, "the file system is read-only: name a file on a writable one"),
        (errno.ENOSPC, "no space left on the device: free some, or name a file on another one"),
        (errno.EIO, "Input/output error"),
    ],
)
def test_each_write_failure_says_what_to_do(tmp_path: Path, number: int, says: str) -> None:
    target = tmp_path / "x.csv"
    problem = OSError(number, os.strerror(number), str(target))
    assert cannot_write(target, problem) == f"cannot write {target}: {says}"


def test_a_read_only_folder_is_seen_before_trying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda _: ReadOnly())
    assert cannot_write(tmp_path / "x.csv") == (
        f"cannot write {tmp_path / 'x.csv'}: the file system is read-only: name a file on a "
        "writable one"
    )


def _runs(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(text("SELECT count(*) FROM reconciliation_run")).scalar_one()
            )
    finally:
        engine.dispose()


def test_a_day_without_a_run_says_so_in_one_line_as_a_process(
    database: str, tmp_path: Path
) -> None:
    result = run_pixrecon(
        "export",
        "--date",
        "2026-03-11",
        "--kind",
        "exceptions",
        "--format",
        "csv",
        env=clean_env(database_url=database),
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "2026-03-11 has no completed reconciliation run" in line
    assert "pixrecon reconcile --date 2026-03-11" in line


def test_reconcile_exports_through_the_same_code(
    pixrecon: Callable[..., Result], tmp_path: Path
) -> None:
    target = tmp_path / "exceptions.csv"
    code, _, _ = pixrecon(
        "reconcile", "--date", DAY.isoformat(), "--no-poll", "--export", "csv", str(target)
    )
    assert code in (1, 2)  # breaks; or incomplete, with no provider configured
    (row,) = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"), newline="")))
    assert row["key"].startswith(f"exc:{DAY.isoformat()}:statement:")
    assert row["actual"] == "12.34"
    exported = pixrecon("export", "--date", DAY.isoformat(), "--kind", "exceptions", "-f", "csv")[1]
    assert target.read_bytes().decode("utf-8") == exported


@pytest.mark.parametrize(
    "asked",
    [
        ("export", "--date", DAY.isoformat(), "--kind", "exceptions", "--format", "csv"),
        ("reconcile", "--date", DAY.isoformat(), "--no-poll"),
    ],
    ids=["export", "reconcile"],
)
def test_a_reader_that_goes_away_changes_no_exit_code(
    database: str, tmp_path: Path, asked: tuple[str, ...]
) -> None:
    """``pixrecon … | head -1``: the rest of the output goes nowhere, and the command
    ends as it would have with every line read — no error line, no other exit code."""
    env = clean_env(database_url=database, log_json="0")
    whole = subprocess.run(
        [sys.executable, "-m", "pixrecon", *asked],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert whole.stdout
    cut = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", *asked],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert cut.stdout is not None
    assert cut.stderr is not None
    cut.stdout.close()  # before the first line is written: every write meets a closed pipe
    said = cut.stderr.read().decode()
    assert cut.wait(timeout=120) == whole.returncode, said
    assert said == whole.stderr.decode()


def test_the_exceptions_of_a_day_that_claims_nothing_are_listed_with_the_exports_warning(
    pixrecon: Callable[..., Result],
) -> None:
    """A person working from ``pixrecon exceptions`` is told what ``pixrecon export`` tells
    the file's reader: the day's latest run could not read every source, so its cases
    claim nothing until the day is reconciled again."""
    day = DAY.isoformat()
    code, _, err = pixrecon("exceptions", "--date", day)
    assert (code, err) == (0, "")  # the day was read whole: nothing to warn of
    code, _, _ = pixrecon("reconcile", "--date", day, "--no-poll")
    assert code == 2  # no provider configured: incomplete
    _, _, exported = pixrecon("export", "--date", day, "--kind", "exceptions", "-f", "csv")
    for args in ((), ("--date", day), ("--format", "json")):
        code, out, err = pixrecon("exceptions", *args)
        assert code == 0
        assert "statement" in out  # the cases are still listed
        said = " ".join(err.split())
        assert "could not read every source (incomplete): its verdicts claim nothing" in said
        assert said == " ".join(exported.split()), (said, exported)
