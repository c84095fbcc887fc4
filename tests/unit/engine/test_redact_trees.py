"""Redaction hides secrets, and only secrets (issue 23 item 6), measured as the issue
measures it: no false positive over Django 5.2's sdist and the standard library, and
every one of the 43 planted credentials hidden. The measure lives in
``tests/redact_measure.py`` (shared with ``bench/bench_redact.py``)."""

from __future__ import annotations

import pytest

from tests.redact_measure import false_positive, real_trees, recall, scan


@pytest.mark.parametrize("seed", range(20))
def test_every_planted_credential_is_hidden(seed: int) -> None:
    found, total, missed = recall(seed)
    assert (found, total, missed) == (43, 43, [])


@pytest.mark.parametrize(
    ("path", "line", "shown", "counts"),
    [
        # library code: always counts
        (
            "django/contrib/auth/forms.py",
            'x = "password1"',
            'x = "«redacted:password:0a1b2c3d»"',
            True,
        ),
        # a test file, a value that looks random: does not count
        ("tests/a.py", 'K = "1bcdefghij2bcdefghij3bcd"', 'K = "«redacted:secret:0a1b2c3d»"', False),
        # a test file, an identifier: counts
        ("tests/a.py", 'P = "password1"', 'P = "«redacted:password:0a1b2c3d»"', True),
        ("test_a.py", 'P = "1234567890"', 'P = "«redacted:password:0a1b2c3d»"', True),
        # a provider format anywhere: does not count
        (
            "src/a.py",
            "T = 'ghp_" + "a1B2" * 9 + "'",
            "T = '«redacted:github-token:0a1b2c3d»'",
            False,
        ),
    ],
)
def test_the_false_positive_definition(path: str, line: str, shown: str, counts: bool) -> None:
    assert false_positive(path, [line], 0, shown) is counts


@pytest.mark.slow
def test_no_false_positive_over_django_and_the_standard_library() -> None:
    trees = real_trees()
    scans = scan(trees)
    assert scans["django"].files > 5000
    assert scans["django"].false_positives == []
    assert scans["typescript"].false_positives == []
    assert scans["stdlib"].false_positives == []
    if not (trees["stdlib"] / "test" / "certdata").is_dir():
        # Debian's python3.11 leaves the standard library's tests (with their keys) to
        # the package libpython3.11-testsuite: only the library itself was scanned
        pytest.skip(f"{trees['stdlib']} lacks its test package: its test keys not measured")
    assert scans["stdlib"].files > 1000
    # the standard library's test keys are still hidden (private-key blocks)
    assert scans["stdlib"].redacted > 100
