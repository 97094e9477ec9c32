"""The run reader's array parse of score tokens equals ``float(token)`` bit for bit, for plain
decimals and for every spelling it hands to the string conversion."""

from __future__ import annotations

import numpy as np

from ragmeter.data.trec_columns import parse_scores


def test_score_tokens_parse_to_float_of_the_token_bit_for_bit() -> None:
    rng = np.random.default_rng(11)
    fixed = [b"0", b"-0", b"7", b".5", b"-.25", b"5.", b"1e3", b"-2.5E-3", b"inf", b"+1.5",
             b"123456789012345", b"1234567890123456", b"0.000000000000001", b"99999999.9999999",
             b"-74.074", b"00012.500"]
    drawn = [f"{v:.{int(d)}f}".encode() for v, d in
             zip((rng.random(3000) - 0.5) * 10.0 ** rng.integers(-3, 9, 3000),
                 rng.integers(0, 9, 3000), strict=True)]
    tokens = np.array(fixed + drawn)
    got = parse_scores(tokens)
    want = np.array([float(t) for t in tokens.tolist()])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    plain = np.array(drawn)  # the all-plain case takes the shortcut
    assert np.array_equal(parse_scores(plain).view(np.int64),
                          np.array([float(t) for t in drawn]).view(np.int64))
