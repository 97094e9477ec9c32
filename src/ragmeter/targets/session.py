"""One target in use: its client, its caller and what its calls gave, entry by entry.

:class:`TargetSession` is what the front door, the CLI and the tiers hold: ``answer`` /
``retrieve`` / ``generate`` take samples and return them filled (see
:mod:`ragmeter.targets.fill`) and keep every reply for the latency metrics. A run in which
no call reached the target at all raises :class:`TargetUnreachableError` (exit 3) with the
reason, instead of scoring a column of unscored samples.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ragmeter.cost.pricing import Price
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, WorkFailedError
from ragmeter.results.records import EvalResult
from ragmeter.targets.base import KINDS, Target, TargetReply, TargetRequest
from ragmeter.targets.calls import TargetCaller, make_caller
from ragmeter.targets.config import TargetConfig, load_target
from ragmeter.targets.conformance import Conformance, KnownIds
from ragmeter.targets.fill import apply_replies, build_requests
from ragmeter.targets.latency import latency_result
from ragmeter.targets.recorded import ReplyStore

_DOWN = ("target_unreachable", "target_circuit_open")
_logger = logging.getLogger("ragmeter.targets")


def waves(samples: Sequence[Sample]) -> list[list[int]]:
    """Sample indices in sending waves: wave *t* holds turn *t* of every conversation (the
    samples sharing ``metadata["session_id"]``, in ``metadata["turn"]`` order, else in input
    order); samples outside a conversation go in the first wave. One wave without
    conversations."""
    sessions: dict[str, list[int]] = {}
    alone: list[int] = []
    for i, s in enumerate(samples):
        sid = s.metadata.get("session_id") if s.metadata else None
        if sid is None:
            alone.append(i)
        else:
            sessions.setdefault(str(sid), []).append(i)
    if not sessions:
        return [alone]
    out: list[list[int]] = [list(alone)]
    for turns in sessions.values():
        order = sorted(turns, key=lambda i: _turn(samples[i], i))
        for t, i in enumerate(order):
            if t >= len(out):
                out.append([])
            out[t].append(i)
    return [w for w in out if w]


def _conversations(samples: Sequence[Sample]) -> bool:
    """Whether any sample is a turn of a conversation (has a session id)."""
    return any(s.metadata and s.metadata.get("session_id") is not None for s in samples)


def _turn(sample: Sample, index: int) -> tuple[int, int]:
    turn = sample.metadata.get("turn") if sample.metadata else None
    return (turn if isinstance(turn, int) and not isinstance(turn, bool) else -1, index)


class TargetUnreachableError(WorkFailedError):
    """No call reached the target (exit 3); the message says why."""


def make_target(config: TargetConfig) -> Target:
    """The client of a target config's kind (from the :data:`~ragmeter.targets.base.KINDS`
    registry)."""
    factory = KINDS.get(config.kind)
    target: Target = factory(config)
    return target


def ready(target: Target) -> None:
    """A kind's own checks before it is called (a ``command`` target: its program is
    installed); a ConfigError naming the key."""
    check = getattr(target, "check", None)
    if callable(check):
        check()


def check_targets(configs: Sequence[TargetConfig], *, key: str = "target",
                  mode: str = "live") -> None:
    """Build every target's client before any work starts, so a configuration mistake is a
    :class:`~ragmeter.errors.ConfigError` (exit 2) naming its key — an unset
    ``${env:NAME}``, a module or function that cannot be imported, a program that is not
    installed — instead of a tier failing half-way through a run."""
    for i, cfg in enumerate(configs):
        where = key if len(configs) == 1 else f"targets[{i}]"
        try:
            target = make_target(cfg)
            if mode != "replay":
                ready(target)
        except ConfigError as exc:
            if exc.key.startswith("target.") and where != "target":
                raise ConfigError(where + exc.key[len("target"):], str(exc).split(": ", 1)[-1]
                                  ) from None
            raise


class TargetSession:
    """A target with its caller; ``mode``: live, replay or resume (see
    :mod:`ragmeter.targets.calls`). ``record``: keep replies in the recorded-replies store
    (default: on; ``store`` names its file)."""

    def __init__(self, spec: Any, *, mode: str = "live", store: str | Path | None = None,
                 record: bool = True, base_dir: str | Path = "."):
        self.config = load_target(spec, base_dir=base_dir)
        self.target = make_target(self.config)
        if mode != "replay":
            ready(self.target)
        if mode != "live" and not record:
            raise ConfigError("target mode", f"mode {mode!r} needs the recorded replies")
        self.store = ReplyStore(store) if record else None
        self.caller: TargetCaller = make_caller(self.target, self.config, mode=mode,
                                                store=self.store)
        self.replies: dict[str, list[tuple[str, TargetReply]]] = {}
        self.conformance = Conformance(self.config)
        #: invalid characters replaced by U+FFFD in this session's replies
        self.invalid_text = 0
        #: per entry, the requests sent ahead and their future (see :meth:`call`)
        self._ahead: dict[str, list[tuple[list[TargetRequest], Future[list[TargetReply]]]]] = {}

    @property
    def name(self) -> str:
        return self.config.name

    def signature_fields(self) -> dict[str, str]:
        sig = self.target.signature.fields()
        if self.caller.versions:
            sig["target_version"] = ",".join(sorted(self.caller.versions))
        return sig

    def call_counts(self) -> dict[str, Any]:
        """What the calls did (sent, recorded, retries, errors by reason, wall time) and the
        invalid characters replaced in the replies."""
        out = self.caller.counts.to_dict()
        if self.invalid_text:
            out["invalid_text"] = self.invalid_text
        return out

    def _check_entry(self, entry: str) -> None:
        if entry not in self.target.entries():
            raise ConfigError(f"target.entries.{entry}",
                              f"target {self.name!r} has no '{entry}' entry point",
                              list(self.target.entries()))

    def call(self, samples: Sequence[Sample], entry: str, *, k: int | None = None,
             contexts: Sequence[Sequence[str]] | None = None, final: bool = True,
             known: KnownIds | None = None, ahead: Sequence[Sample] = ()) -> list[Sample]:
        """Ask the target about every sample through ``entry``; the samples filled.

        The turns of one conversation (samples sharing ``metadata["session_id"]``) are sent
        in order, one at a time — turn *t* after turn *t-1* has its reply — while
        conversations run in parallel (:func:`waves`). The replies then go through the
        mapping checks of :class:`~ragmeter.targets.conformance.Conformance`: ``final`` says
        this is the run's last call for the entry; ``known``: the ids a returned id may meet
        (given where returned ids are scored) — a rule that meets none fails the run.

        ``ahead``: the samples the next calls will ask about (the runner's next batches, in
        batches the size of this one): their requests are sent now, behind these, and their
        replies are ready — or on their way — when those calls come, instead of the target
        idling while this batch is scored and saved.
        Only for kinds that keep their connections, and never for conversations (their
        turns wait for each other) or given contexts."""
        self._check_entry(entry)
        samples = list(samples)
        if not samples:
            return []
        try:
            done = self._ask(samples, entry, k, contexts, ahead)
        except BaseException:
            self._drop_ahead()
            raise
        assert len(done) == len(samples)
        self.replies.setdefault(entry, []).extend(
            (s.id, r) for s, r in zip(samples, done, strict=True))
        try:
            self._raise_if_down(done)
            self._count_invalid(done)
            filled = apply_replies(samples, done, entry, self.config)
            self.conformance.observe(entry, done)
            if known is not None:
                self.conformance.observe_ids(entry, samples, done, known)
            self.conformance.check(final=final)
        except BaseException:
            self._drop_ahead()
            raise
        return filled

    def _ask(self, samples: list[Sample], entry: str, k: int | None,
             contexts: Sequence[Sequence[str]] | None,
             ahead: Sequence[Sample]) -> list[TargetReply]:
        """The replies to ``samples`` (those sent ahead when they are these), sending
        ``ahead`` behind them."""
        reqs = build_requests(samples, entry, k=k, contexts=contexts)
        queue = self._ahead.pop(entry, [])
        sent = queue.pop(0)[1] if queue and queue[0][0] == reqs else None
        if sent is None:                  # the runner asked for other samples
            _cancel(queue)
            queue = []
        if sent is None and not _conversations(samples):
            sent = self.caller.start(reqs)
        if sent is not None and ahead and contexts is None and not _conversations(ahead):
            queue = self._send_ahead(queue, list(ahead), len(samples), entry, k)
            if queue:
                self._ahead[entry] = queue
        else:
            _cancel(queue)
        if sent is not None:
            return self.caller.wait(sent)
        replies: list[TargetReply | None] = [None] * len(reqs)
        for wave in waves(samples):
            got = self.caller.call_many([reqs[i] for i in wave])
            self._raise_if_down(got)       # a target that is down: no more waves
            for i, rep in zip(wave, got, strict=True):
                replies[i] = rep
        return [r for r in replies if r is not None]

    def _send_ahead(self, queue: list[tuple[list[TargetRequest], Future[list[TargetReply]]]],
                    ahead: list[Sample], size: int, entry: str, k: int | None
                    ) -> list[tuple[list[TargetRequest], Future[list[TargetReply]]]]:
        """``ahead`` in batches of ``size``, each sent unless ``queue`` (what was sent ahead
        before, in order) already holds it; what no longer fits is cancelled."""
        out: list[tuple[list[TargetRequest], Future[list[TargetReply]]]] = []
        for start in range(0, len(ahead), size):
            later = build_requests(ahead[start:start + size], entry, k=k)
            if queue and queue[0][0] == later:
                out.append(queue.pop(0))
                continue
            _cancel(queue)
            queue = []
            future = self.caller.start(later)
            if future is None:
                break
            out.append((later, future))
        _cancel(queue)
        return out

    def _drop_ahead(self) -> None:
        """Cancel the calls sent ahead (the run stops, or asked for something else)."""
        for queue in self._ahead.values():
            _cancel(queue)
        self._ahead.clear()

    def _count_invalid(self, replies: Sequence[TargetReply]) -> None:
        bad = [r.invalid_text for r in replies if r.invalid_text]
        if bad:
            self.invalid_text += sum(bad)
            _logger.warning("target %s: %d invalid character(s) (lone surrogates, bytes that "
                            "are not UTF-8) in %d repl%s replaced by U+FFFD", self.name,
                            sum(bad), len(bad), "y" if len(bad) == 1 else "ies")

    def answer(self, samples: Sequence[Sample], k: int | None = None) -> list[Sample]:
        return self.call(samples, "answer", k=k)

    def retrieve(self, samples: Sequence[Sample], k: int | None = None) -> list[Sample]:
        return self.call(samples, "retrieve", k=k)

    def generate(self, samples: Sequence[Sample],
                 contexts: Sequence[Sequence[str]]) -> list[Sample]:
        return self.call(samples, "generate", contexts=contexts)

    def _raise_if_down(self, replies: Sequence[TargetReply]) -> None:
        if replies and all(r.reason in _DOWN for r in replies):
            detail = next((r.detail for r in replies if r.detail), "")
            raise TargetUnreachableError(
                f"target {self.name!r} ({self.target.signature.where}) is unreachable: "
                f"{detail}")

    def latency(self, entry: str = "answer", *, seed: int = 42) -> EvalResult | None:
        """Latency metrics of the calls made through ``entry`` so far (None if none)."""
        got = self.replies.get(entry)
        if not got:
            return None
        ids = [sid for sid, _ in got]
        reps = [r for _, r in got]
        return latency_result(ids, reps, self.target.signature, seed=seed,
                              name=f"{self.name}:latency", entry=entry,
                              price=Price.set_on(self.config))

    def release(self) -> None:
        """Close the connections kept open between calls (the next call opens new ones)
        and cancel what was sent ahead."""
        self._drop_ahead()
        self.caller.close()

    def close(self) -> None:
        self.release()
        if self.store is not None:
            self.store.close()


def _cancel(queue: Sequence[tuple[Any, Future[list[TargetReply]]]]) -> None:
    for _, future in queue:
        future.cancel()


__all__ = ["TargetSession", "TargetUnreachableError", "check_targets", "make_target", "waves"]
