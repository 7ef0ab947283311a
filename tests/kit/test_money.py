"""Money as people write it, and as svc counts it: integer micro-cents."""

from __future__ import annotations

import pytest

from svc.kit import money


@pytest.mark.parametrize(("text", "micro_cents"), [
    ("+$5", 500_000_000), ("$5.00", 500_000_000), ("-$1.25", -125_000_000), ("$0.00000001", 1),
    ("+500000000", 500_000_000), ("-7", -7), ("$1,000", 100_000_000_000), ("1_000", 1000),
])
def test_amounts_are_read_to_the_micro_cent(text: str, micro_cents: int) -> None:
    assert money.parse(text) == micro_cents


@pytest.mark.parametrize("text", ["$0.000000001", "5 dollars", "1.5", "", "$", "--5", "$-5", "1e9"])
def test_anything_else_is_refused_in_words(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not an amount|finer than a micro-cent"):
        money.parse(text)


def test_amounts_are_written_exactly() -> None:
    assert money.dollars(500_000_000) == "$5.00"
    assert money.dollars(-125_000_000) == "-$1.25"
    assert money.dollars(1) == "$0.00000001"
    assert money.dollars(123_456_789_012) == "$1,234.56789012"
