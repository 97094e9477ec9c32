"""What the judge said about each sample, typed: the state the judged-metric planner keeps.

* :class:`SampleJudgement` — one sample's parsed answers (claims, verdicts, grades), the calls
  made for it and which calls failed;
* :class:`JudgePlan` — the judgements of every sample plus call accounting for one plan;
* :class:`JudgedState` — the per-run state a scoring context holds: which judged metrics the
  run announced, the shared plan, every plan made;
* :class:`JudgedContext` — what the judged metrics read from that context (the generation
  context satisfies it).

The answers are filled by the readers of the judge calls (:mod:`.questions`) and read by the
score functions of the judged metrics (:mod:`.rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ragmeter.data.sample import Sample
    from ragmeter.metrics.registry import Metric
    from ragmeter.results.records import Signature


@dataclass
class AskedCall:
    """One judge call of one sample: its call kind, prompt version, outcome and texts."""

    kind: str
    version: str
    ok: bool
    reason: str | None = None
    detail: str | None = None
    raw: str | None = None
    messages: list[dict[str, str]] | None = None
    #: the probability of the reply's least certain verdict token (judges asked for
    #: ``logprobs``), what active selection of items to label reads
    token_prob: float | None = None

    def to_dict(self, keep_prompts: bool) -> dict[str, Any]:
        d: dict[str, Any] = {"prompt": self.version, "ok": self.ok}
        if self.reason:
            d["reason"] = self.reason
        if self.detail:
            d["detail"] = self.detail
        if self.token_prob is not None:
            d["token_prob"] = round(self.token_prob, 6)
        if keep_prompts:
            d["raw"] = self.raw
            d["messages"] = self.messages
        return d


@dataclass
class SampleJudgement:
    """Everything the judge said about one sample, parsed; failures per call kind.

    ``needs`` are the questions asked for this sample (names of
    :data:`ragmeter.metrics.judged.calls.QUESTIONS`). Answers of the built-in calls have typed
    fields; a call added later keeps its parsed answers in ``answers`` by question name.
    """

    sample_id: str
    needs: set[str] = field(default_factory=set)
    answer_claims: list[str] | None = None
    reference_claims: list[str] | None = None
    claims_source: str = "judge"
    #: yes/no (1/0) per claim: ``answer_in_context``, ``answer_in_reference``,
    #: ``reference_in_answer``, ``reference_in_context``
    verdicts: dict[str, list[int]] = field(default_factory=dict)
    verdict_reasons: dict[str, list[str | None]] = field(default_factory=dict)
    #: three-way verdicts per claim (``supported`` / ``contradicted`` / ``neutral``) when the
    #: three-way verify prompt was asked; ``verdicts`` holds 1 exactly where it says supported
    verdict_labels: dict[str, list[str]] = field(default_factory=dict)
    ctx_relevance: list[int] | None = None
    ctx_useful: list[int] | None = None
    answer_relevance: int | None = None
    e2e: int | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    #: call kind -> the judge's own reason for a graded call's grades (answer relevance, the
    #: direct grades), kept with the values it explains
    call_reasons: dict[str, str] = field(default_factory=dict)
    #: call kind -> (reason, detail) of a call that failed
    failed: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    calls: list[AskedCall] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)  # replies read by position, not id
    #: a jury's vote: members, ties and splits per check (item indices), unread members
    jury: dict[str, Any] = field(default_factory=dict)
    #: a jury's members' own judgements on the jury's claims (per-member agreement)
    members: dict[str, SampleJudgement] = field(default_factory=dict, repr=False,
                                                compare=False)


@dataclass
class JudgePlan:
    """Per-sample judgements plus call accounting of one plan."""

    judgements: list[SampleJudgement]
    n_requests: int
    by_prompt: dict[str, int]
    binary: bool
    language: str
    judge_name: str
    judge_model: str
    #: call kind -> prompt versions sent
    prompt_versions: dict[str, set[str]]
    #: some reply came from ``ragmeter serve mock-judge`` (random test replies, not a grader)
    mock: bool = False
    #: the model names the server put on its replies (a dated snapshot of ``judge_model``)
    served_models: tuple[str, ...] = ()

    @property
    def calls_per_sample(self) -> float:
        return self.n_requests / max(1, len(self.judgements))


@dataclass
class JudgedState:
    """The judged-metric planner's state for one run (held by the scoring context).

    ``announced``: the judged metrics of the run, planned together on first use; ``plan``: that
    shared plan and ``planned`` the metrics it covers; ``plans``: every plan made (a metric not
    announced in advance gets its own), for call accounting.
    """

    announced: tuple[Metric, ...] = ()
    plan: JudgePlan | None = None
    planned: tuple[Metric, ...] = ()
    plans: list[JudgePlan] = field(default_factory=list)


class JudgedContext(Protocol):
    """What a judged metric reads from its scoring context (the generation context,
    ``GenerationContext``, is one)."""

    @property
    def samples(self) -> Sequence[Sample]: ...

    @property
    def seed(self) -> int: ...

    @property
    def judge(self) -> Any: ...

    @property
    def language(self) -> str: ...

    @property
    def keep_prompts(self) -> bool: ...

    @property
    def judged(self) -> JudgedState: ...

    def signature(self, metric: str, **extra: Any) -> Signature: ...
