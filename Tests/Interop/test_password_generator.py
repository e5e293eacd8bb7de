"""Chi-square tests of `passkey password generate`: enough passwords of each kind that every expected count is above
2,000 (a million of the strong format, 400,000 of the others; checked), every position's characters against the exact
distribution the generator promises (Docs/Passwords.md).

Threshold: for each position, Pearson's statistic over the k cells (characters that may appear there) follows a
chi-square law with k - 1 degrees of freedom when the generator is right; every expected count here is above
2,000, where that approximation is close. Laurent and Massart (2000, Lemma 1) bound its tail:
P(X >= d + 2*sqrt(d*t) + 2*t) <= exp(-t) for d degrees of freedom. With t = ln(10^7) a correct generator fails a
given check with probability below 10^-7, and all 44 checks together below 10^-5: the test is not flaky. A
character that must not appear at a position fails at once. `test_the_check_catches_modulo_bias` shows the same
check rejects a byte-modulo sampler, the bias the generator must not have.
"""

import math
import os
import subprocess
from collections import Counter

from conftest import PASSKEY_BIN

# Passwords per kind: enough that every expected count is above 2,000 (the approximation the threshold rests on).
# The strong format's rarest character (a capital consonant at a group's edge, 5/6 * 1/17 * 1/19) needs a million;
# the others' rarest (a classic letter, about 1/53; a lower-case letter under the rules, (10/62)/12) need far fewer.
COUNT = 1_000_000
FEWER = 400_000
T = math.log(1e7)

CLASSIC_SETS = ["abcdefghkmnopqrstuvwxy", "ABCDEFGHJKLMNPQRSTUVWXYZ", "3456789"]
CONSONANTS = "bcdfghjkmnpqrstvwxz"
VOWELS = "aeiouy"
DIGITS = "0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()


def threshold(cells):
    d = cells - 1
    return d + 2 * math.sqrt(d * T) + 2 * T


def chi_square(counts, expected, total):
    """Pearson's statistic; fails outright on a character whose expected probability is zero."""
    unexpected = set(counts) - set(expected)
    assert not unexpected, f"characters that must not appear: {sorted(unexpected)}"
    return sum((counts.get(c, 0) - total * p) ** 2 / (total * p) for c, p in expected.items())


def generate(*args, count=COUNT):
    result = subprocess.run(
        [PASSKEY_BIN, "password", "generate", "--count", str(count), *args],
        capture_output=True, text=True, timeout=600, check=True,
    )
    lines = result.stdout.split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    assert len(lines) == count
    assert len(set(map(len, lines))) == 1
    return lines


def check_positions(lines, expected_at):
    width = len(lines[0])
    blob = "".join(lines)
    for position in range(width):
        expected = expected_at(position)
        assert abs(sum(expected.values()) - 1) < 1e-12
        # The chi-square approximation behind the threshold needs every expected count above 2,000.
        assert min(expected.values()) * len(lines) > 2000, f"position {position}: too few passwords for the check"
        statistic = chi_square(Counter(blob[position::width]), expected, len(lines))
        assert statistic < threshold(len(expected)), f"position {position}: {statistic:.1f}"


def test_classic_positions():
    lines = generate("--format", "classic", count=FEWER)
    alphabet_size = sum(map(len, CLASSIC_SETS))

    def without(*sizes):
        return alphabet_size - sum(sizes)

    # Strings of 12 with every set present, by inclusion and exclusion over the sets left out.
    a, b, c = map(len, CLASSIC_SETS)
    total = (alphabet_size ** 12 - without(a) ** 12 - without(b) ** 12 - without(c) ** 12
             + without(a, b) ** 12 + without(a, c) ** 12 + without(b, c) ** 12)
    probability = {}
    for index, own in enumerate(CLASSIC_SETS):
        y, z = [len(s) for i, s in enumerate(CLASSIC_SETS) if i != index]
        # One place holds this character; the other 11 must hold both other sets.
        rest = alphabet_size ** 11 - without(y) ** 11 - without(z) ** 11 + without(y, z) ** 11
        for character in own:
            probability[character] = rest / total

    def expected_at(position):
        return {"-": 1.0} if position in (3, 7, 11) else probability

    check_positions(lines, expected_at)
    for line in lines[:1000]:
        body = line.replace("-", "")
        assert all(any(ch in s for ch in body) for s in CLASSIC_SETS)


def test_strong_positions():
    lines = generate("--format", "strong")

    def expected_at(position):
        if position in (6, 13):
            return {"-": 1.0}
        index = position - position // 7 * 7
        letters = VOWELS if index in (1, 4) else CONSONANTS
        # The digit takes one of the six group edges; the capital one of the 17 other letters.
        letter_share = 5 / 6 if index in (0, 5) else 1.0
        expected = {d: (1 - letter_share) / 10 for d in DIGITS} if index in (0, 5) else {}
        for ch in letters:
            expected[ch] = letter_share * 16 / 17 / len(letters)
            expected[ch.upper()] = letter_share / 17 / len(letters)
        return expected

    check_positions(lines, expected_at)


def test_rules_positions():
    lines = generate(
        "--rules", "required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 12", count=FEWER)
    allowed = UPPER + LOWER + DIGITS
    # One place (uniform) holds a capital, one a digit, ten hold any allowed character.
    expected = {c: ((c in UPPER) / 26 + (c in DIGITS) / 10 + 10 / len(allowed)) / 12 for c in allowed}
    check_positions(lines, lambda _: expected)
    for line in lines[:1000]:
        assert any(c in UPPER for c in line) and any(c in DIGITS for c in line)


def test_the_check_catches_modulo_bias():
    alphabet = "".join(CLASSIC_SETS)
    data = os.urandom(200_000)
    biased = Counter(alphabet[byte % len(alphabet)] for byte in data)
    uniform = {c: 1 / len(alphabet) for c in alphabet}
    assert chi_square(biased, uniform, len(data)) > threshold(len(alphabet))
