"""Claims and verification requests find their reply schema by shape (made once per shape):
the schema is the one written out from the request's own claims and checks, for every shape."""

from __future__ import annotations

import itertools

import pytest

from ragmeter.metrics.judged import prompts as P

CHECKS = ("answer_in_context", "answer_in_reference", "reference_in_answer",
          "reference_in_context")


def _written_out(checks: tuple[str, ...], n_a: int, n_r: int, three_way: bool) -> dict:
    value = P.NLI if three_way else P.YES_NO

    def claims(n: int, keys: dict) -> dict:
        return {"type": "array", "minItems": n, "maxItems": n, "items": {
            "type": "object", "properties": {"id": {"type": "integer"}, **keys,
                                              "reason": {"type": "string"}},
            "required": ["id", *keys]}}

    a = {k: value for k, c in (("in_context", "answer_in_context"),
                               ("in_reference", "answer_in_reference")) if c in checks}
    r = {k: value for k, c in (("in_answer", "reference_in_answer"),
                               ("in_context", "reference_in_context")) if c in checks}
    props = {}
    if a:
        props["answer_claims"] = claims(n_a, a)
    if r:
        props["reference_claims"] = claims(n_r, r)
    return {"type": "object", "properties": props, "required": list(props)}


@pytest.mark.parametrize("binary,three_way", [(False, False), (False, True), (True, False)])
def test_verify_schema_by_shape_is_the_written_out_one(binary: bool, three_way: bool) -> None:
    for n in range(1, len(CHECKS) + 1):
        for checks in itertools.combinations(CHECKS, n):
            for n_a, n_r in ((1, 3), (4, 2)):
                req = P.verify_request("s", "ru", binary=binary, checks=checks,
                                       answer_claims=[f"a{i}" for i in range(n_a)],
                                       reference_claims=[f"r{i}" for i in range(n_r)],
                                       contexts=["c1", "c2"], reference="ref", answer="ans",
                                       three_way=three_way)
                want = _written_out(checks, n_a, n_r, three_way and not binary)
                got = dict(req.schema)
                assert got.pop("title") == req.prompt_version
                assert got == want
                assert list(got["properties"]) == list(want["properties"])   # order too


@pytest.mark.parametrize("answer,reference", [("a", "r"), ("a", None), (None, "r")])
def test_claims_schema_by_shape_is_the_written_out_one(answer: str | None,
                                                       reference: str | None) -> None:
    req = P.claims_request("s", "en", "q?", answer, reference)
    props = {}
    if answer is not None:
        props["answer_claims"] = {"type": "array", "minItems": 1, "items": {"type": "string"}}
    if reference is not None:
        props["reference_claims"] = {"type": "array", "minItems": 1,
                                     "items": {"type": "string"}}
    got = dict(req.schema)
    assert got.pop("title") == P.CLAIMS
    assert got == {"type": "object", "properties": props, "required": list(props)}
