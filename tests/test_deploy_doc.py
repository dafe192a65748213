"""``docs/deploy.md`` says only what the code does: the command lines of its systemd units,
cron line and shell snippets name commands and options ``pixrecon`` has, the date the
nightly run is given is one ``--date`` accepts, and every ``PIXRECON_*`` variable it
mentions is a setting."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pixrecon.cli import app, named_command
from reconcile.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "docs" / "deploy.md"

BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
# `pixrecon` the program (a path may lead to it), not a user, a unit or a file name.
PROGRAM = re.compile(r"(?:^|(?<=[\s/'\"=]))pixrecon(?=[ \t])")
WORD = re.compile(r"[ \t]+([a-z][a-z-]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
# Where a command line ends inside a shell line.
END_OF_COMMAND = re.compile(r";|&&|\|\||\||>")
# A crontab line: five schedule fields and the user it runs as.
CRON = re.compile(r"^\s*([\d*/,-]+\s+){5}\S+\s+")
EXEC = re.compile(r"^\s*Exec\w*=")
SETTING = re.compile(r"PIXRECON_[A-Z0-9_]*(?:_\*|[A-Z0-9])")
DATE_VALUE = re.compile(r"--date[ \t]+(\"[^\"]*\"|'[^']*'|\S+)")
SUBSTITUTION = re.compile(r"\$\((.*)\)")


@dataclass(frozen=True)
class CommandLine:
    block: str
    line: str
    words: tuple[str, ...]
    options: tuple[str, ...]


def blocks(*languages: str) -> list[tuple[str, str]]:
    text = DEPLOY.read_text(encoding="utf-8")
    return [(lang, body) for lang, body in BLOCK.findall(text) if lang in languages]


def command_lines() -> list[CommandLine]:
    """Every `pixrecon …` command line of the ```ini blocks' Exec*= lines and of the
    ```sh blocks (comments left out)."""
    found: list[CommandLine] = []
    for lang, body in blocks("ini", "sh"):
        for line in body.splitlines():
            if line.lstrip().startswith(("#", ";")):
                continue
            if lang == "ini" and not EXEC.match(line):
                continue
            line = CRON.sub("", line) if lang == "sh" else line
            for match in PROGRAM.finditer(line):
                rest = line[match.end() :]
                words: list[str] = []
                while (word := WORD.match(rest)) is not None:
                    words.append(word.group(1))
                    rest = rest[word.end() :]
                if not words:
                    continue  # `runuser -u pixrecon -- …`: the user, not the program
                rest = END_OF_COMMAND.split(rest, maxsplit=1)[0]
                options = tuple(OPTION.findall(rest))
                found.append(CommandLine(lang, line.strip(), tuple(words), options))
    return found


def resolve(words: tuple[str, ...]) -> tuple[Any, list[str]]:
    """The (click) command the words name, and the words that name it."""
    return named_command(words)


def options_of(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if param.param_type_name == "option":
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def settings_names() -> set[str]:
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        names.add(f"PIXRECON_{name.upper()}")
        alias = field.validation_alias
        for choice in getattr(alias, "choices", []):
            if isinstance(choice, str):
                names.add(choice)
    return names


def test_the_guide_has_units_a_timer_and_a_cron_line() -> None:
    lines = command_lines()
    named = {" ".join(resolve(line.words)[1]) for line in lines}
    assert {"serve", "worker", "db upgrade", "reconcile", "prune"} <= named, named
    units = {" ".join(resolve(line.words)[1]) for line in lines if line.block == "ini"}
    assert {"serve", "worker", "reconcile", "prune"} <= units, units
    sh = "\n".join(body for _, body in blocks("sh"))
    crontab = [line for line in sh.splitlines() if CRON.match(line)]
    assert len(crontab) == 1, "one cron line for the nightly run"
    assert "pixrecon reconcile --date" in crontab[0]
    assert "OnCalendar=" in "\n".join(body for _, body in blocks("ini"))


@pytest.mark.parametrize("line", command_lines(), ids=lambda line: line.line[:60])
def test_every_command_line_names_a_command_and_its_options(line: CommandLine) -> None:
    command, path = resolve(line.words)
    assert path, f"`pixrecon {' '.join(line.words)}` is not a pixrecon command"
    unknown = set(line.options) - options_of(command)
    assert not unknown, f"`pixrecon {' '.join(path)}` has no option {sorted(unknown)}"
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output


def test_the_nightly_date_is_one_reconcile_accepts() -> None:
    values = [
        value.group(1).strip("'\"")
        for line in command_lines()
        if line.words[:1] == ("reconcile",)
        for value in DATE_VALUE.finditer(line.line)
    ]
    assert values, "the nightly run is given a --date"
    if shutil.which("date") is None:
        pytest.skip("no date command to compute the nightly date with")
    for value in values:
        substitution = SUBSTITUTION.search(value)
        if substitution is None:
            date.fromisoformat(value)  # a literal date
            continue
        # Undo the unit file's and the crontab's escapes: $$ and %% (systemd), \% (cron).
        script = substitution.group(1).replace("$$", "$").replace("%%", "%")
        script = script.replace("\\%", "%")
        shown = subprocess.run(
            ["/bin/sh", "-c", script], capture_output=True, text=True, check=False, timeout=10
        )
        if shown.returncode != 0:
            pytest.skip(f"this date command cannot compute it: {shown.stderr.strip()}")
        date.fromisoformat(shown.stdout.strip())


def test_every_setting_the_guide_mentions_exists() -> None:
    known = settings_names()
    text = DEPLOY.read_text(encoding="utf-8")
    mentioned = {match.group(0) for match in SETTING.finditer(text)}
    assert mentioned
    unknown = set()
    for name in mentioned:
        if name.endswith("*"):
            prefix = name.rstrip("*")
            if not any(setting.startswith(prefix) for setting in known):
                unknown.add(name)
        elif name not in known:
            unknown.add(name)
    assert not unknown, f"not settings of reconcile/settings.py: {sorted(unknown)}"
