"""The README and the docs/ pages: each command shown with its output runs, and every output line
a page shows (all but the ``...`` that stand for lines left out) is a line it prints today; the
README stays a front door (at most 250 lines, every layer's folder in its layout, every docs/
page linked); and every relative link of these pages leads to a file (and heading) that
exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from systolic.contract.layers import CLI, LAYERS

from .helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

#: The README's length limit (issue 31): details belong in docs/.
README_MAX_LINES = 250


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else str(page)


def examples(page: Path) -> list[tuple[list[str], list[str]]]:
    """``(arguments, output lines)`` of each ``.venv/bin/systolic`` command of the page's ``sh``
    blocks that is followed by ``# ``-prefixed output lines."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
        command, shown = None, []
        lines = iter(block.splitlines())
        for line in lines:
            if line.startswith(".venv/bin/systolic "):
                if command and shown:
                    out.append((command, shown))
                while line.endswith("\\"):
                    line = line[:-1] + next(lines)
                command, shown = shlex.split(line, comments=True)[1:], []
            elif line.startswith("# ") and command is not None:
                shown.append(line[2:])
            else:
                if command and shown:
                    out.append((command, shown))
                command, shown = None, []
        if command and shown:
            out.append((command, shown))
    return out


EXAMPLES = [(page_name(page), args, shown) for page in PAGES for args, shown in examples(page)]


def test_the_pages_have_examples_with_output():
    assert len(EXAMPLES) >= 4, EXAMPLES
    assert {args[0] for _, args, _ in EXAMPLES} >= {"generate", "sim", "model", "synth"}


@pytest.mark.parametrize(
    ("page", "args", "shown"),
    EXAMPLES,
    ids=[f"{p}:{a[0]}-{i}" for i, (p, a, _) in enumerate(EXAMPLES)],
)
def test_an_example_prints_what_its_page_shows(page, args, shown, tmp_path):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = [line.rstrip() for line in r.stdout.splitlines()]
    for line in shown:
        if line.strip() == "...":
            continue
        assert line.rstrip() in printed, f"{page} shows {line!r}; {' '.join(args)} printed:\n" + \
            "\n".join(printed)  # fmt: skip


def test_the_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, more than {README_MAX_LINES}: move details to docs/"
    )


def test_the_readme_layout_lists_every_top_level_folder():
    """Every layer's folder (contract/layers.py), and the suite's and the docs', has a line of
    the README's Layout section."""
    section = README.read_text().split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    listed = {line.split()[0] for line in section.splitlines() if re.match(r"[\w.]+/\s", line)}
    folders = {f"{folder}/" for name, (folder, _) in LAYERS.items() if name != CLI}
    expected = folders | {"systolic/", "tests/", "docs/"}
    assert expected <= listed, f"the README's Layout lacks {sorted(expected - listed)}"
    for folder in listed:
        assert (ROOT / folder).is_dir(), f"the README's Layout lists {folder}, not a folder"


def test_the_readme_links_every_docs_page():
    linked = {target.split("#")[0] for target in links(README)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md links no {missing}"


def _without_code(text: str) -> str:
    """The text without fenced blocks and inline code, where ``[x](y)`` is not a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def links(page: Path) -> list[str]:
    """The targets of the page's inline links and images, and of its reference definitions."""
    text = _without_code(page.read_text())
    inline = re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    defined = re.findall(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)", text, re.M)
    return inline + defined


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: markup dropped, lower case, punctuation but
    hyphens and underscores dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base, n = slug(heading), 0
        name = base
        while name in out:  # GitHub numbers repeated headings
            n += 1
            name = f"{base}-{n}"
        out.add(name)
    return out


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: {page_name(file)} has no heading #{anchor}")
    assert not broken, f"{page_name(page)}: " + "; ".join(broken)
