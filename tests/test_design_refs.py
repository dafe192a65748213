"""Every citation of the design (``docs/design.md §N`` or ``§N.M``) points at a section, or a
numbered rule of a section, that exists; and nothing still cites the old ``DESIGN §`` form."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
SOURCE_DIRS = (
    "reconcile",
    "receiver",
    "worker",
    "sandbox",
    "pixrecon",
    "migrations",
    "benchmarks",
    "docs",
    "tests",
)
SKIPPED_DIRS = frozenset({".venv", ".ci-venv", ".git", "__pycache__", "build"})
SUFFIXES = frozenset({".py", ".md"})

CITATION = re.compile(r"docs/design\.md §(\d+)(?:\.(\d+))?")
OLD_CITATION = re.compile(r"DESIGN §")
SECTION = re.compile(r"^## (\d+)\. ")
RULE = re.compile(r"^(\d+)\. ")


@dataclass(frozen=True, slots=True)
class Citation:
    path: str
    line: int
    section: int
    rule: int | None

    def __str__(self) -> str:
        cited = f"§{self.section}" if self.rule is None else f"§{self.section}.{self.rule}"
        return f"{self.path}:{self.line}: docs/design.md {cited}"


def source_files(root: Path = ROOT) -> list[Path]:
    """The project's source and documentation files that may cite the design."""
    found: list[Path] = []
    readme = root / "README.md"
    if readme.is_file():
        found.append(readme)
    for name in SOURCE_DIRS:
        top = root / name
        if top.is_dir():
            found.extend(_walk(top))
    this_file = Path(__file__).resolve()
    return sorted(path for path in found if path.resolve() != this_file)


def _walk(directory: Path) -> Iterator[Path]:
    for entry in sorted(directory.iterdir()):
        if entry.is_dir():
            if entry.name not in SKIPPED_DIRS:
                yield from _walk(entry)
        elif entry.suffix in SUFFIXES and entry.is_file():
            yield entry


def sections(text: str) -> dict[int, set[int]]:
    """Section number → the numbers of its top-level numbered rules."""
    found: dict[int, set[int]] = {}
    current: set[int] | None = None
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = SECTION.match(line)
        if heading:
            current = found.setdefault(int(heading.group(1)), set())
            continue
        if line.startswith("## "):
            current = None  # an unnumbered section owns no rules
            continue
        rule = RULE.match(line)
        if rule and current is not None:
            current.add(int(rule.group(1)))
    return found


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def citations_in(text: str, path: str) -> list[Citation]:
    found: list[Citation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in CITATION.finditer(line):
            rule = match.group(2)
            found.append(
                Citation(path, number, int(match.group(1)), None if rule is None else int(rule))
            )
    return found


def citations(paths: Iterable[Path], root: Path = ROOT) -> list[Citation]:
    """Every ``docs/design.md §N[.M]`` in the given files, with where it is."""
    found: list[Citation] = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        found.extend(citations_in(text, _display(path, root)))
    return found


def bad_citations(design: dict[int, set[int]], cited: Iterable[Citation]) -> list[Citation]:
    """The citations naming a section, or a rule of a section, the design does not have."""
    return [
        citation
        for citation in cited
        if citation.section not in design
        or (citation.rule is not None and citation.rule not in design[citation.section])
    ]


def old_citations(paths: Iterable[Path], root: Path = ROOT) -> list[str]:
    offenders: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if OLD_CITATION.search(line):
                offenders.append(f"{_display(path, root)}:{number}: {line.strip()}")
    return offenders


def test_every_design_citation_points_at_something_that_exists() -> None:
    design = sections(DESIGN.read_text(encoding="utf-8"))
    assert 1 in design, "docs/design.md has no '## 1. …' section"
    bad = bad_citations(design, citations(source_files()))
    assert not bad, "citations of missing sections or rules:\n" + "\n".join(map(str, bad))


def test_no_file_cites_the_old_design_form() -> None:
    # The project's design document is docs/design.md; cite it as "docs/design.md §N[.M]".
    offenders = old_citations(source_files())
    assert not offenders, "old 'DESIGN §' citations remain:\n" + "\n".join(offenders)


def test_a_citation_of_a_missing_section_or_rule_is_reported(tmp_path: Path) -> None:
    design = sections(
        "# title\n\n## 1. First\n\nRules:\n1. one\n2. two\n   3. nested, not a rule\n"
        "```\n4. in a code block, not a rule\n```\n\n## 2. Second\n\nText only.\n"
    )
    assert design == {1: {1, 2}, 2: set()}

    source = tmp_path / "module.py"
    source.write_text(
        "# docs/design.md §1.2 exists\n"
        "# docs/design.md §2 exists\n"
        "# docs/design.md §3 and docs/design.md §1.3 and docs/design.md §2.1 do not\n",
        encoding="utf-8",
    )
    bad = bad_citations(design, citations([source], root=tmp_path))
    assert [str(citation) for citation in bad] == [
        "module.py:3: docs/design.md §3",
        "module.py:3: docs/design.md §1.3",
        "module.py:3: docs/design.md §2.1",
    ]
