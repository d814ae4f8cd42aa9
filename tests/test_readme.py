"""README.md's examples: each command shown with its output runs, and every output line the
README shows (all but the ``...`` that stand for lines left out) is a line it prints today."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .helpers import run_cli

README = Path(__file__).resolve().parent.parent / "README.md"


def examples() -> list[tuple[list[str], list[str]]]:
    """``(arguments, output lines)`` of each ``.venv/bin/systolic`` command of the README's
    ``sh`` blocks that is followed by ``# ``-prefixed output lines."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S):
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


EXAMPLES = examples()


def test_the_readme_has_examples_with_output():
    assert len(EXAMPLES) >= 4, EXAMPLES
    assert {args[0] for args, _ in EXAMPLES} >= {"generate", "sim", "model", "synth"}


@pytest.mark.parametrize(("args", "shown"), EXAMPLES, ids=[" ".join(a[:1]) + f"-{i}" for i, (a, _)
                                                         in enumerate(EXAMPLES)])  # fmt: skip
def test_a_readme_example_prints_what_the_readme_shows(args, shown, tmp_path):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = [line.rstrip() for line in r.stdout.splitlines()]
    for line in shown:
        if line.strip() == "...":
            continue
        assert line.rstrip() in printed, f"README shows {line!r}; {' '.join(args)} printed:\n" + \
            "\n".join(printed)  # fmt: skip
