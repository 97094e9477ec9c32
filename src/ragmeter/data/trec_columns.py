"""TREC lines split into columns with array operations: no Python object per line.

A block of a qrels or run file (bytes) becomes token start/end offsets per line
(:func:`line_tokens`: a fast path for the uniform single-space lines programs write, the
general path classifying every byte as ``bytes.split()`` does), a column of it fixed-width
byte strings (:func:`column`), and scores or grades numbers equal to what ``float()`` /
``int()`` give (:func:`parse_scores`, :func:`parse_grades`). Anything these paths cannot take
exactly (another column count, a ``#`` comment, a long id, an unusual number) makes them return
None, and :mod:`ragmeter.data.trec` parses the block line by line with its named errors.
"""

from __future__ import annotations

import numpy as np

#: ids up to this many bytes take the vectorised parse (longer: the line-by-line parser)
FAST_ID_BYTES = 64


def gather(raw: np.ndarray, start: np.ndarray, end: np.ndarray, width: int) -> np.ndarray:
    """Tokens ``raw[start:end]`` zero padded to ``width`` rounded up to 8-byte words: one
    unaligned read per word and token (a 1-byte-strided ``uint64`` view), masked past the end."""
    words = max(1, -(-width // 8))
    if not start.size:
        return np.zeros(0, dtype=f"S{8 * words}")
    if int(start.max()) + 8 * words > raw.size:  # callers pad; this keeps it correct without
        raw = np.concatenate([raw, np.zeros(8 * words, dtype=np.uint8)])
    as_words = np.ndarray((raw.size - 7,), dtype="<u8", buffer=raw, strides=(1,))
    lens = end - start
    out = np.empty((start.size, words), dtype="<u8")
    for w in range(words):
        left = np.clip(lens - 8 * w, 0, 8).astype(np.uint64) * np.uint64(8)  # bits to keep
        keep = np.where(left == 64, np.uint64(2**64 - 1),
                        (np.uint64(1) << (left & np.uint64(63))) - np.uint64(1))
        np.bitwise_and(as_words[start + 8 * w], keep, out=out[:, w])
    return out.view(f"S{8 * words}").ravel()


def byte_columns(tokens: np.ndarray) -> np.ndarray:
    """``(width, n)`` byte columns of fixed-width tokens, all-zero trailing columns dropped."""
    n, width = tokens.size, tokens.dtype.itemsize
    mat = tokens.view(np.uint8).reshape(n, width)
    used = np.flatnonzero(mat.any(axis=0))
    return np.ascontiguousarray(mat[:, :int(used[-1]) + 1 if used.size else 1].T)


_POW10 = 10.0 ** np.arange(23)  # exact in float64


def parse_scores(tokens: np.ndarray) -> np.ndarray:
    """Fixed-width score tokens as float64, equal to ``float(token)``.

    Plain decimals (``-12.345``, ``7``, ``.5``; at most 15 digits) are read with array
    arithmetic, a column at a time: the digits form an exact integer mantissa and one division
    by an exact power of ten is correctly rounded, exactly what ``strtod`` returns. Other tokens
    (exponents, ``inf``, ``+``, long mantissas) go through NumPy's string conversion, which
    raises ``ValueError`` on a token that is not a number.
    """
    n = tokens.size
    cols = byte_columns(tokens)  # uint8: every counter but the mantissa is one byte wide
    mant = np.zeros(n, dtype=np.int64)
    n_digits = np.zeros(n, dtype=np.uint8)
    frac = np.zeros(n, dtype=np.uint8)
    dots = np.zeros(n, dtype=np.uint8)
    bad = np.zeros(n, dtype=bool)
    neg = cols[0] == 45  # '-'
    for j, c in enumerate(cols):
        d = c - np.uint8(48)  # wraps below '0': a digit is d < 10
        digit = (d < 10).view(np.uint8)  # 0 or 1
        mant *= digit * np.uint8(9) + np.uint8(1)  # a digit shifts the mantissa, else × 1
        mant += d * digit
        n_digits += digit
        frac += digit & (dots > 0)
        dot = c == 46
        dots += dot
        other = ~(digit.view(bool) | dot | (c == 0))
        if j == 0:
            other &= ~neg
        bad |= other
    plain = ~bad & (dots <= 1) & (n_digits > 0) & (n_digits <= 15)
    if bool(plain.all()):
        val = mant.astype(np.float64) / _POW10[frac]
        return np.where(neg, -val, val)
    out = np.empty(n, dtype=np.float64)
    val = mant[plain].astype(np.float64) / _POW10[frac[plain]]
    out[plain] = np.where(neg[plain], -val, val)
    out[~plain] = tokens[~plain].astype(np.float64)
    return out


#: what ``bytes.split()`` splits on: ASCII whitespace (9–13 and the space)
SPACE = np.zeros(256, dtype=bool)
SPACE[[9, 10, 11, 12, 13, 32]] = True


Tokens = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def uniform_tokens(raw: np.ndarray, cols: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(token starts, token ends, first token of each line, lines)`` when every line has
    exactly ``cols`` tokens split by single spaces, ends with a newline and is no ``#``
    comment (what programs write; then exactly ``bytes.split()``); else None."""
    if not raw.size or raw[-1] != 10:
        return None
    sep = np.flatnonzero(raw <= 32)  # every separator candidate, control bytes included
    first_nl = np.flatnonzero(raw[sep[:256]] == 10)  # the first line's end, found early
    k = int(first_nl[0] if first_nl.size else np.argmax(raw[sep] == 10)) + 1  # tokens a line
    if k != cols or sep.size % k:
        return None
    kinds = raw[sep].reshape(-1, k)
    if not (bool(np.all(kinds[:, -1] == 10)) and bool(np.all(kinds[:, :-1] == 32))):
        return None
    starts = np.empty_like(sep)  # a token starts after the previous separator
    starts[0] = 0
    np.add(sep[:-1], 1, out=starts[1:])
    if bool(np.any(sep <= starts)) or bool(np.any(raw[starts[::k]] == 35)):  # empty, '#'
        return None
    n = sep.size // k
    return starts, sep, np.arange(0, n * k, k), np.arange(n)


def line_tokens(chunk: bytes, cols: int) -> Tokens | None:
    """``(padded bytes, token starts, token ends, first token of each data line, data lines)``
    of ``chunk``, split as ``bytes.split()`` splits each line; blank lines are not data lines.
    None when a line is a ``#`` comment or has a number of tokens other than ``cols`` (the
    line-by-line parser names it)."""
    padded = np.frombuffer(chunk + bytes(FAST_ID_BYTES), dtype=np.uint8)  # room to gather
    raw = padded[:len(chunk)]
    uniform = uniform_tokens(raw, cols)
    if uniform is not None:
        return (padded, *uniform)
    return split_tokens(padded, raw, cols)


def split_tokens(padded: np.ndarray, raw: np.ndarray, cols: int) -> Tokens | None:
    """:func:`line_tokens` for any text: every byte classified (the general path)."""
    space = SPACE[raw]  # what bytes.split() splits on
    begin = ~space
    begin[1:] &= space[:-1]
    ts = np.flatnonzero(begin)
    del begin
    finish = ~space
    finish[:-1] &= space[1:]
    te = np.flatnonzero(finish) + 1
    del finish, space
    none = np.zeros(0, dtype=np.int64)
    if not ts.size:
        return padded, ts, te, none, none
    newlines = np.flatnonzero(raw == 10)
    first = np.searchsorted(ts, np.concatenate(([0], newlines[:-1])))  # first token of a line
    counts = np.diff(np.append(first, ts.size))
    data = np.flatnonzero(counts > 0)
    if bool(np.any(counts[data] != cols)) or bool(np.any(raw[ts[first[data]]] == ord("#"))):
        return None
    return padded, ts, te, first[data], data


def column(tokens: Tokens, col: int) -> np.ndarray | None:
    """Column ``col`` of every data line as fixed-width bytes (None: a token is too long)."""
    padded, ts, te, f, _ = tokens
    start, end = ts[f + col], te[f + col]
    width = int((end - start).max()) if start.size else 1
    return None if width > FAST_ID_BYTES else gather(padded, start, end, max(width, 1))


def parse_grades(tokens: np.ndarray) -> np.ndarray | None:
    """Integer grade tokens (``-?[0-9]{1,10}``) as int64, or None when one is anything else."""
    n = tokens.size
    cols = byte_columns(tokens)
    value = np.zeros(n, dtype=np.int64)
    n_digits = np.zeros(n, dtype=np.int64)
    neg = cols[0] == 45
    ok = np.ones(n, dtype=bool)
    for j, c in enumerate(cols):
        digit = (c >= 48) & (c <= 57)
        value = np.where(digit, value * 10 + (c - 48), value)
        n_digits += digit
        ok &= digit | (c == 0) | ((c == 45) & (j == 0))
    if not bool(np.all(ok & (n_digits >= 1) & (n_digits <= 10))):
        return None
    return np.where(neg, -value, value)
