"""Check digits of Russian identifiers and payment cards (digits-only input)."""

from __future__ import annotations


def _weighted(digits: str, weights: tuple[int, ...]) -> int:
    return sum(int(d) * w for d, w in zip(digits, weights, strict=False)) % 11 % 10


def snils_ok(digits: str) -> bool:
    """СНИЛС: 11 digits; the last two are the sum of the first nine weighted 9..1 (sums of
    100 and 101 give 00, larger sums are taken mod 101). Numbers up to 001-001-998 have no
    check digits and are not accepted."""
    if len(digits) != 11 or not digits.isdigit() or int(digits[:9]) <= 1001998:
        return False
    s = sum(int(d) * (9 - i) for i, d in enumerate(digits[:9]))
    check = s if s < 100 else 0 if s in (100, 101) else s % 101
    return (0 if check == 100 else check) == int(digits[9:])


def inn_ok(digits: str) -> bool:
    """ИНН: 10 digits (organisation, one check digit) or 12 (person, two)."""
    if not digits.isdigit():
        return False
    if len(digits) == 10:
        return _weighted(digits, (2, 4, 10, 3, 5, 9, 4, 6, 8)) == int(digits[9])
    if len(digits) == 12:
        return (_weighted(digits, (7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) == int(digits[10])
                and _weighted(digits, (3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) == int(digits[11]))
    return False


def ogrn_ok(digits: str) -> bool:
    """ОГРН (13 digits: first 12 mod 11, last digit) or ОГРНИП (15: first 14 mod 13)."""
    if not digits.isdigit() or len(digits) not in (13, 15):
        return False
    mod = 11 if len(digits) == 13 else 13
    return int(digits[:-1]) % mod % 10 == int(digits[-1])


def luhn_ok(digits: str) -> bool:
    """Payment card numbers (13–19 digits): the Luhn check."""
    if not digits.isdigit() or not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0
