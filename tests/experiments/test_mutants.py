"""experiments/mutants.py: every mutant still applies to the code it names (its text occurs once)
and names tests that exist; a mutant that no longer applies would report nothing."""

from __future__ import annotations

from systolic.experiments.mutants import MUTANTS, REPO


def test_every_mutant_applies_and_names_existing_tests():
    wrong = []
    for mutant in MUTANTS:
        count = (REPO / mutant.path).read_text().count(mutant.old)
        if count != 1:
            wrong.append(f"{mutant.name}: its text occurs {count} times in {mutant.path}")
        for selection in mutant.tests:
            if not (REPO / selection.split("::")[0]).exists():
                wrong.append(f"{mutant.name}: no test file {selection}")
    assert not wrong, "\n".join(wrong)
    assert len(MUTANTS) > 50
