"""Money in AI is integer micro-cents (a millionth of a cent: $1 is 100,000,000): never a float, so
sums match to the micro-cent. These read and write it for people."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

PER_DOLLAR = 100_000_000
PER_CENT = PER_DOLLAR // 100
_DOLLARS = re.compile(r"^([+-]?)\$(\d{1,9}(?:\.\d{1,8})?)$")
_MICRO = re.compile(r"^[+-]?\d{1,18}$")


def parse(text: str) -> int:
    """"+$5", "-$1.25" (dollars, to the micro-cent) or "+500000000" (micro-cents) as micro-cents."""
    text = text.strip().replace("_", "").replace(",", "")
    dollars = _DOLLARS.match(text)
    if dollars:
        try:
            amount = Decimal(dollars.group(2)) * PER_DOLLAR
        except InvalidOperation:
            raise ValueError(f"{text!r} is not an amount") from None
        if amount != amount.to_integral_value():
            raise ValueError(f"{text!r} is finer than a micro-cent")
        return int(amount) * (-1 if dollars.group(1) == "-" else 1)
    if _MICRO.match(text):
        return int(text)
    raise ValueError(f"{text!r} is not an amount: write +$5, -$1.25 or a number of micro-cents")


def dollars(micro_cents: int) -> str:
    """$5.00, -$0.00000001: exact, at least two decimals."""
    sign = "-" if micro_cents < 0 else ""
    whole, rest = divmod(abs(micro_cents), PER_DOLLAR)
    fraction = f"{rest:08d}".rstrip("0")
    return f"{sign}${whole:,}.{fraction.ljust(2, '0')}"


def parse_dollars(text: str) -> int:
    """What a person types for an amount in dollars ("5", "2.50", "$5") as micro-cents."""
    return parse("$" + text.strip().removeprefix("$"))
