"""JSON extraction from messy model text and validation of the schema subset."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.judges.parsing import (
    JSONExtractError,
    example_instance,
    extract_json,
    parse_reply,
    validate,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["yes", "no"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 2},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "claims": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "flag": {"type": "boolean"},
    },
    "required": ["verdict", "score"],
}


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
    ('Sure! Here is my verdict:\n{"a": 1}\nHope this helps.', {"a": 1}),
    ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
    ('<think>hmm {"no": 0}</think>{"a": 1}', {"a": 1}),
    ('Ответ: {"вердикт": "да", "текст": "скобка } внутри"}', {"вердикт": "да",
                                                            "текст": "скобка } внутри"}),
    ('[{"x": 1}, {"x": 2}]', [{"x": 1}, {"x": 2}]),
    ('prose [not json] then {"a": true}', {"a": True}),
])
def test_extract_json(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here", '{"a": 1', "```json\n{oops}\n```"])
def test_extract_json_fails_loudly(text: str) -> None:
    with pytest.raises(JSONExtractError):
        extract_json(text)


def test_validate_accepts_valid() -> None:
    good = {"verdict": "yes", "score": 2, "confidence": 0.5, "claims": ["a"], "flag": False}
    assert validate(good, SCHEMA) == []


@pytest.mark.parametrize(("value", "needle"), [
    ({"score": 1}, "missing required property 'verdict'"),
    ({"verdict": "maybe", "score": 1}, "not one of"),
    ({"verdict": "yes", "score": 3}, "maximum"),
    ({"verdict": "yes", "score": -1}, "minimum"),
    ({"verdict": "yes", "score": 1.5}, "expected integer"),
    ({"verdict": "yes", "score": True}, "expected integer"),
    ({"verdict": "yes", "score": 1, "claims": []}, "fewer than 1"),
    ({"verdict": "yes", "score": 1, "claims": [1]}, "$.claims[0]: expected string"),
    ({"verdict": "yes", "score": 1, "flag": "true"}, "expected boolean"),
    ({"verdict": "yes", "score": 1, "confidence": "high"}, "expected number"),
    (["verdict"], "expected object"),
])
def test_validate_reports_problem(value: object, needle: str) -> None:
    problems = validate(value, SCHEMA)
    assert problems and any(needle in p for p in problems), problems


def test_additional_properties_false() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}},
              "additionalProperties": False}
    assert validate({"a": "x", "b": 1}, schema) == ["$: unexpected property 'b'"]


def test_parse_reply_reasons() -> None:
    assert parse_reply('{"verdict": "no", "score": 0}', SCHEMA).data == {"verdict": "no",
                                                                        "score": 0}
    assert parse_reply('{"verdict": "no", "score": 2.0}', SCHEMA).data["score"] == 2
    assert parse_reply("I think yes", SCHEMA).reason == "parse_error"
    assert parse_reply(None, SCHEMA).reason == "parse_error"
    out = parse_reply('{"verdict": "perhaps", "score": 0}', SCHEMA)
    assert out.reason == "schema_error" and "perhaps" in (out.detail or "")


@pytest.mark.parametrize("seed", range(5))
def test_example_instance_is_valid(seed: int) -> None:
    assert validate(example_instance(SCHEMA, seed), SCHEMA) == []


def test_example_instance_numbers_id_items() -> None:
    from ragmeter.judges.parsing import example_instance, validate

    schema = {"type": "object", "required": ["claims"], "properties": {"claims": {
        "type": "array", "minItems": 3, "maxItems": 3, "items": {
            "type": "object", "required": ["id", "ok"],
            "properties": {"id": {"type": "integer"}, "ok": {"enum": ["yes", "no"]}}}}}}
    inst = example_instance(schema, seed=7)
    assert [c["id"] for c in inst["claims"]] == [1, 2, 3]
    assert not validate(inst, schema)


# -- the compiled validator gives exactly what validate() gives -------------------------------
COMPILED_CASES = [
    ({"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                                       "score": {"type": "integer", "minimum": 1,
                                                 "maximum": 5}},
      "required": ["verdict"], "additionalProperties": False},
     [{"verdict": "yes"}, {"verdict": "maybe"}, {"score": 7}, {"verdict": "no", "x": 1},
      {"verdict": "yes", "score": 2.0}, {"verdict": "yes", "score": True}, [], "text", None]),
    ({"type": "array", "minItems": 1, "maxItems": 2,
      "items": {"type": "object", "properties": {"id": {"type": "integer"},
                                                 "t": {"type": ["string", "null"],
                                                       "minLength": 2}},
                "required": ["id"]}},
     [[], [{"id": 1}], [{"id": 1}, {"id": "2"}, {"t": "a"}], [{"id": 1, "t": None}], {}]),
    ({"type": "number"}, [1, 1.5, True, "1"]),
    ({"const": 3}, [3, 4]),
    ({}, [1, None]),
]


@pytest.mark.parametrize("schema,values", COMPILED_CASES)
def test_compiled_validator_matches_validate(schema: dict, values: list) -> None:
    from ragmeter.judges.parsing import CompiledSchema, parse_reply, validate

    compiled = CompiledSchema.of(schema)
    for value in values:
        assert compiled.problems(value) == validate(value, schema), value
        text = json.dumps(value)
        assert compiled.parse(text) == parse_reply(text, schema), value


def _real_schemas() -> list[dict]:
    """The judged metrics' own request schemas (contexts, answer, claims of two sizes)."""
    from ragmeter.metrics.judged import prompts as P

    reqs = [P.contexts_request("s", "en", binary=False, question="q", contexts=["a", "b"],
                               reference="r", relevance=True, useful=True),
            P.contexts_request("s", "ru", binary=True, question="q", contexts=["a"],
                               reference=None, relevance=True, useful=False),
            P.answer_request("s", "en", binary=False, question="q", answer="a",
                             reference="r", relevance=True, e2e=True)]
    return [r.schema for r in reqs]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 7) | st.floats(-3, 7, allow_nan=False)
    | st.sampled_from(["yes", "no", "x", "", "ab"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "verdict", "score", "contexts", "relevance", "useful",
                         "relevant", "t", "x", "answer_relevance", "correct"]), inner,
        max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(case=st.integers(0, 7), value=_JSON)
def test_compiled_ok_and_coerce_match_the_plain_functions(case: int, value: object) -> None:
    """The fast paths (a valid reply: no messages built; integers coerced only where the
    schema has them) agree with validate() and coerce_integers() on any JSON value."""
    from ragmeter.judges.parsing import CompiledSchema, coerce_integers, validate

    schemas = [s for s, _ in COMPILED_CASES] + _real_schemas()
    schema = schemas[case % len(schemas)]
    compiled = CompiledSchema.of(schema)
    assert compiled.ok(value) == (validate(value, schema) == [])
    coerced = compiled.coerce(value) if compiled.coerce is not None else value
    assert coerced == coerce_integers(value, schema)
    assert [type(x) for x in _leaves(coerced)] == [type(x) for x in
                                                   _leaves(coerce_integers(value, schema))]


def _leaves(v: object) -> list:
    if isinstance(v, dict):
        return [x for k in v for x in _leaves(v[k])]
    if isinstance(v, list):
        return [x for i in v for x in _leaves(i)]
    return [v]
