"""Report and viewer text in English and Russian: one table, one lookup.

``t(key, lang, **fields)`` formats the string for ``lang`` ("en" or "ru"); every visible piece
of text in the HTML/Markdown reports and the viewer comes from :data:`TEXT`. The default
language is the data's (``ragmeter.text.detect_language``, the one language detector).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

LANGS = ("en", "ru")

TEXT: dict[str, tuple[str, str]] = {
    # page frame
    "run": ("run", "запуск"),
    "status": ("status", "статус"),
    "git": ("git", "git"),
    "created": ("created", "создан"),
    "name": ("name", "название"),
    "tag": ("tag", "метка"),
    "tags": ("tags", "метки"),
    "date": ("date", "дата"),
    "signature": ("Signature", "Сигнатура"),
    "config_masked": ("Config (secrets masked)", "Конфигурация (секреты скрыты)"),
    "show": ("show", "показать"),
    "contents": ("Contents", "Содержание"),
    # decision table
    "decision": ("Decision", "Решение"),
    "decision_intro": (
        "Which system is best, and is the difference real? Each row is a system; each cell the "
        "mean with its 95% bootstrap confidence interval and n scored samples. The best value "
        "of each metric is in bold; † marks a system whose gap to the best is significant.",
        "Какая система лучше и реальна ли разница? Строка — система; в ячейке среднее, его 95% "
        "бутстреп-доверительный интервал и n оценённых примеров. Лучшее значение метрики выделено "
        "жирным; † отмечает систему, отставание которой от лучшей значимо."),
    "test_note": (
        "† = paired {method} test against the best system on the samples both scored, "
        "p < 0.05, {n} [[n|resample|resamples]], seed {seed}.",
        "† = парный {method} против лучшей системы на примерах, оценённых обеими, "
        "p < 0,05, {n} [[n|перестановка|перестановки|перестановок]], seed {seed}."),
    "method_randomization": ("randomization (sign-flip)",
                             "рандомизационный тест (смена знаков)"),
    "system": ("system", "система"),
    "no_scored": ("no scored samples", "нет оценённых примеров"),
    "verdict_best_sig": ("{best} is best on {metric}; its lead over {others} is significant.",
                         "{best} — лучшая по {metric}; отрыв от {others} значим."),
    "verdict_best_nosig": (
        "{best} is best on {metric}; its lead over {others} is not significant.",
        "{best} — лучшая по {metric}; отрыв от {others} незначим."),
    "verdict_best_mixed": (
        "{best} is best on {metric}: significantly ahead of {sig}; its lead over {nosig} is "
        "not significant.",
        "{best} — лучшая по {metric}: значимо опережает {sig}; отрыв от {nosig} незначим."),
    "verdict_best_only": ("{best} is best on {metric}.", "{best} — лучшая по {metric}."),
    "verdict_unpaired": ("No sample was scored by both it and {others}: no paired test.",
                         "С {others} нет общих оценённых примеров: парный тест невозможен."),
    "tied": ("{best} (tied with {others})", "{best} (наравне с {others})"),
    "no_pair": ("no sample shared with the best: no paired test",
                "нет общих примеров с лучшей: парный тест невозможен"),
    "verdict_single": ("{system}: {metric} = {value} (one system, nothing to compare).",
                       "{system}: {metric} = {value} (одна система, сравнивать не с чем)."),
    "verdict_none": ("No metric of this tier has scored samples.",
                     "Ни у одной метрики этого уровня нет оценённых примеров."),
    "no_results": ("No tier produced results; the tiers' status says why.",
                   "Ни один уровень не дал результатов; причины — в статусе уровней."),
    "and": ("and", "и"),
    "lower_better": ("lower is better", "меньше — лучше"),
    "higher_better": ("higher is better", "больше — лучше"),
    "latency_block": ("Latency and throughput", "Задержка и пропускная способность"),
    "latency_block_intro": (
        "Per target, over its calls: percentiles of the seconds per call and to the first "
        "token, requests per second, the share of failed calls and, for a priced target, "
        "the cost per answer (calls without token usage counted as unknown), each with its "
        "95% bootstrap CI; the best of each column in its own direction.",
        "Для каждой цели, по её вызовам: процентили секунд на вызов и до первого токена, "
        "запросов в секунду, доля неудачных вызовов и, если у цели задана цена, стоимость "
        "ответа (вызовы без расхода токенов — неизвестные), каждое с 95% "
        "бутстреп-интервалом; лучшее значение столбца — в его собственном направлении."),
    "unit_s": ("s", "с"),
    "unit_requests/s": ("requests/s", "запросов/с"),
    "unit_share": ("share", "доля"),
    "unit_price/answer": ("per answer, in the prices' currency", "за ответ, в валюте цен"),
    "unit_price/sample": ("per sample, in the prices' currency", "за пример, в валюте цен"),
    "cost_unknown": ("usage unknown", "расход неизвестен"),
    "pareto_front": ("on the quality–latency–cost front", "на фронте качество–задержка–цена"),
    "pareto_note": (
        "◆ marks the targets no other target beats on {dims} at once (better or equal on "
        "each, better on one).",
        "◆ — цели, которых никакая другая не превосходит сразу по {dims} (не хуже по "
        "каждому и лучше хотя бы по одному)."),
    # bands
    "bands": ("Quality bands", "Пороги качества"),
    "bands_intro": (
        "A band is a rule of thumb for reading one number: above the upper boundary the value "
        "is excellent, below the lower one it needs attention, in between it is good. Metrics "
        "without a row here get no band; numbers from the offline demonstration judge never get "
        "one.",
        "Порог — эмпирическое правило для чтения одного числа: выше верхней границы — отлично, "
        "ниже нижней — требует внимания, между ними — хорошо. Метрики без строки в таблице порога "
        "не получают; числа демонстрационного офлайн-судьи — тоже."),
    "excellent": ("excellent", "отлично"),
    "good": ("good", "хорошо"),
    "needs attention": ("needs attention", "требует внимания"),
    "band": ("band", "порог"),
    # threshold-band rows (reports/bands.py labels)
    "band:HitRate@1": ("HitRate@1", "HitRate@1"),
    "band:MRR": ("MRR", "MRR"),
    "band:NDCG@10": ("NDCG@10", "NDCG@10"),
    "band:Faithfulness": ("Faithfulness", "Достоверность ответа (faithfulness)"),
    "band:E2E Score": ("E2E Score", "Сквозная оценка (E2E)"),
    "band:Accuracy (judge pipeline)": ("Accuracy (judge pipeline)",
                                       "Точность (производственный судья)"),
    "band:Consistency": ("Consistency", "Согласованность"),
    "band_rule": ("> {hi} excellent, {lo}–{hi} good, < {lo} needs attention",
                  "> {hi} отлично, {lo}–{hi} хорошо, < {lo} требует внимания"),
    "demo_judge": ("demo judge", "демо-судья"),
    "demo_banner": (
        "Demo judge. Some numbers in this report come from the weak offline demonstration "
        "judge ({names}). They show how ragmeter works; they are not a measurement of your "
        "system.",
        "Демо-судья. Часть чисел в отчёте получена слабым офлайн-судьёй для демонстрации "
        "({names}). Они показывают, как работает ragmeter, и не измеряют вашу систему."),
    "mock_banner": (
        "Mock judge. Some numbers in this report come from replies of `ragmeter serve mock-judge`, a "
        "test server that answers at random ({names}). They test the plumbing; they measure "
        "nothing.",
        "Тестовый судья. Часть чисел в отчёте получена из ответов `ragmeter serve mock-judge` — "
        "тестового сервера со случайными ответами ({names}). Они проверяют связку и ничего не "
        "измеряют."),
    # tiers
    "tiers": ("Tiers", "Уровни"),
    "tiers_not_run": ("{n} tier(s) not run or failed; each with its reason.",
                      "Не запущено или завершилось ошибкой уровней: {n}; у каждого указана "
                      "причина."),
    "st_ok": ("ok", "готово"),
    "st_not_run": ("not run", "не запускался"),
    "st_error": ("error", "ошибка"),
    "st_partial": ("partial", "частично"),
    "llm_stats": ("{calls} LLM [[calls|call|calls]] (+{cached} cached), {tokens} "
                  "[[tokens|token|tokens]], ${cost}, {errors} [[errors|error|errors]]",
                  "{calls} [[calls|вызов|вызова|вызовов]] LLM (+{cached} из кэша), {tokens} "
                  "[[tokens|токен|токена|токенов]], "
                  "${cost}, ошибок: {errors}"),
    # metric table
    "metric": ("metric", "метрика"),
    "mean": ("mean", "среднее"),
    "ci95": ("95% CI", "95% ДИ"),
    "n": ("n", "n"),
    "n_unscored": ("unscored", "без оценки"),
    "unscored_reasons": ("unscored reasons", "причины отсутствия оценки"),
    "counts": ("counts", "счётчики"),
    "all_metrics": ("All metrics of {system}", "Все метрики: {system}"),
    # charts
    "chart_hit": ("hit@k with 95% CI", "hit@k с 95% ДИ"),
    "chart_doc_hit": ("doc_hit@k with 95% CI", "doc_hit@k с 95% ДИ"),
    "chart_key": ("{metric} per system, 95% CI", "{metric} по системам, 95% ДИ"),
    "chart_keys_one": ("{system}: key metrics, 95% CI", "{system}: ключевые метрики, 95% ДИ"),
    "chart_box": ("{metric}: per-sample values", "{metric}: значения по примерам"),
    "chart_confusion": ("confusion matrix of {name}", "матрица ошибок: {name}"),
    "axis_zoom": ("axis starts at {lo}, not 0", "ось начинается с {lo}, а не с 0"),
    "actual": ("actual", "факт"),
    "predicted": ("predicted", "прогноз"),
    "na": ("n/a", "н/д"),
    "chart_diff": ("B − A per metric, 95% CI", "B − A по метрикам, 95% ДИ"),
    "chart_box_k": ("{metric}: per-query values by k", "{metric}: значения по запросам для каждого k"),
    "chart_box_note": ("box: quartiles, whiskers: 1.5 IQR, dot: mean with 95% CI",
                       "ящик: квартили, усы: 1,5 IQR, точка: среднее с 95% ДИ"),
    "chart_hit_bars": ("hit@k per system, 95% CI", "hit@k по системам, 95% ДИ"),
    # reading scales (reports/bands.py SCALES): charts shade them behind the data
    "scales": ("Reading scales", "Шкалы интерпретации"),
    "scales_intro": (
        "How to read one metric's value, as the methodology states it; charts of these "
        "metrics shade the ranges behind the data. A range the methodology leaves unnamed is "
        "not shaded.",
        "Как читать значение метрики — по методике; на графиках этих метрик диапазоны закрашены "
        "под данными. Диапазон, которому методика не даёт названия, не закрашен."),
    "reading_scale": ("reading scale", "шкала"),
    "scale:Silhouette": ("Silhouette", "Силуэт (silhouette)"),
    "scale:Faithfulness": ("Faithfulness", "Достоверность ответа (faithfulness)"),
    "scale:Answer relevance": ("Answer relevance", "Релевантность ответа"),
    "scale:ROUGE-L F": ("ROUGE-L F", "ROUGE-L F"),
    "scale:ROUGE-1 F": ("ROUGE-1 F", "ROUGE-1 F"),
    "scale:BLEU (0–100)": ("BLEU (0–100)", "BLEU (0–100)"),
    "scale:Semantic similarity": ("Semantic similarity", "Семантическое сходство"),
    "scale:Cache hit rate": ("Cache hit rate", "Доля попаданий в кэш"),
    "scale:Context preservation": ("Context preservation", "Сохранение контекста"),
    "scale:Context relevance": ("Context relevance", "Релевантность контекста"),
    "lvl:strong cluster structure": ("strong cluster structure", "сильная кластерная структура"),
    "lvl:reasonable structure": ("reasonable structure", "разумная структура"),
    "lvl:weak structure": ("weak structure", "слабая структура"),
    "lvl:no cluster structure": ("no cluster structure", "кластерной структуры нет"),
    "lvl:high quality, minimal hallucinations": (
        "high quality, minimal hallucinations", "высокое качество, минимум галлюцинаций"),
    "lvl:serious faithfulness problems": ("serious faithfulness problems",
                                          "серьёзные проблемы с достоверностью"),
    "lvl:high quality of understanding the question": (
        "high quality of understanding the question", "вопрос понят хорошо"),
    "lvl:good quality": ("good quality", "хорошее качество"),
    "lvl:acceptable for short texts": ("acceptable for short texts",
                                       "приемлемо для коротких текстов"),
    "lvl:very good": ("very good", "очень хорошо"),
    "lvl:acceptable": ("acceptable", "приемлемо"),
    "lvl:needs substantial improvement": ("needs substantial improvement",
                                          "нужно существенное улучшение"),
    "lvl:semantically identical": ("semantically identical", "семантически идентичны"),
    "lvl:very high similarity": ("very high similarity", "очень высокое сходство"),
    "lvl:moderate similarity": ("moderate similarity", "умеренное сходство"),
    "lvl:low similarity": ("low similarity", "низкое сходство"),
    "lvl:high caching potential": ("high caching potential", "высокий потенциал кэширования"),
    "lvl:the cache brings no benefit": ("the cache brings no benefit", "кэш не даёт выгоды"),
    "lvl:questions are related, context is kept": (
        "questions are related, context is kept", "вопросы связаны, контекст сохраняется"),
    "lvl:questions are unrelated": ("questions are unrelated", "вопросы не связаны"),
    "lvl:excellent": ("excellent", "отлично"),
    "lvl:good": ("good", "хорошо"),
    "lvl:average": ("average", "средне"),
    "lvl:poor": ("poor", "плохо"),
    # explorer
    "explorer": ("Per-sample explorer", "Примеры"),
    "explorer_intro": (
        "One row per question, one column per system's key metric; the worst rows come first. "
        "Open a row for its contexts, answer and judge replies.",
        "Строка — вопрос, столбец — ключевая метрика системы; сначала худшие строки. Раскройте "
        "строку, чтобы увидеть контексты, ответ и ответы судьи."),
    "filter_placeholder": ("Filter: text, id, reason…", "Фильтр: текст, id, причина…"),
    "only_unscored": ("only unscored", "только без оценки"),
    "qtype": ("question type", "тип вопроса"),
    "all": ("all", "все"),
    "tier": ("tier", "уровень"),
    "question": ("question", "вопрос"),
    "details": ("details", "подробности"),
    "contexts": ("contexts", "контексты"),
    "answer": ("answer", "ответ"),
    "reference": ("reference", "эталон"),
    "gold": ("gold", "эталонные документы"),
    "judge_reasons": ("judge replies and reasons", "ответы и обоснования судьи"),
    "scores_on_page": ("every score ([[n|one|{n}]]) and the judge's reasons: on the "
                       "sample's page", "все оценки ({n}) и обоснования судьи — на странице "
                                        "примера"),
    "scores": ("all scores", "все оценки"),
    "unscored": ("unscored", "без оценки"),
    "shown": ("{n} / {total} [[total|sample|samples]]",
              "{n} / {total} [[total|пример|примера|примеров]]"),
    "truncated": ("Showing the {n} worst samples of {total}.",
                  "Показаны {n} худших примеров из {total}."),
    "hits": ("{n} hit(s)", "найдено: {n}"),
    # comparison / diff
    "comparison": ("Comparison", "Сравнение"),
    "cmp_note": ("Paired {method} test of B against A on the samples both scored; significant "
                 "at p < 0.05; {n} resamples, seed {seed}.",
                 "Парный {method} B против A на примерах, оценённых обоими; значимо при "
                 "p < 0,05; {n} [[n|перестановка|перестановки|перестановок]], seed {seed}."),
    "cmp_meta": ("paired {method} test on the samples both scored",
                 "парный тест ({method}) на примерах, оценённых обоими"),
    "regressions": ("{n} significant regression(s).", "Значимых ухудшений: {n}."),
    "result": ("result", "результат"),
    "diff_ci": ("95% CI of diff", "95% ДИ разницы"),
    "p": ("p", "p"),
    "verdict": ("verdict", "вывод"),
    "v_regression": ("regression", "ухудшение"),
    "v_improvement": ("improvement", "улучшение"),
    "v_no significant change": ("no significant change", "нет значимых изменений"),
    "v_no overlap": ("no overlap", "нет общих примеров"),
    "signatures": ("Signatures", "Сигнатуры"),
    # viewer
    "v_runs": ("Runs", "Запуски"),
    "v_history": ("Metric history", "История метрик"),
    "v_compare": ("Tier comparison", "Сравнение уровней"),
    "v_diff": ("Diff of two runs", "Разница двух запусков"),
    "v_store": ("store", "хранилище"),
    "v_readonly": ("read-only", "только чтение"),
    "v_filter": ("Filter", "Фильтр"),
    "v_since": ("from", "с"),
    "v_until": ("to", "по"),
    "v_commit": ("git commit", "git-коммит"),
    "v_apply": ("Apply", "Применить"),
    "v_no_runs": ("No runs match.", "Нет подходящих запусков."),
    "v_empty_store": ("The store has no runs yet: start one with `ragmeter run bench.yaml` or "
                      "`ragmeter demo`.", "В хранилище пока нет запусков: запустите `ragmeter run "
                      "bench.yaml` или `ragmeter demo`."),
    "v_pick_two": ("Tick two runs and press “Diff”.", "Отметьте два запуска и нажмите «Разница»."),
    "v_diff_btn": ("Diff", "Разница"),
    "v_tiers_ok": ("tiers ok", "уровней готово"),
    "v_tiers_errored": ("{n} errored", "с ошибкой: {n}"),
    "v_tiers_partial": ("{n} partial", "прервано: {n}"),
    "v_tiers_not_run": ("{n} not run", "не запущено: {n}"),
    "v_metric": ("Metric", "Метрика"),
    "v_show": ("Show", "Показать"),
    "v_history_intro": (
        "One point per run (oldest left) with its 95% CI; click a point to open the run.",
        "Точка — запуск (старые слева) с 95% ДИ; щелчок по точке открывает запуск."),
    "v_history_chart": ("{metric} over runs ({tier}), 95% CI",
                        "{metric} по запускам ({tier}), 95% ДИ"),
    "v_no_metric": ("No run has this metric.", "Ни у одного запуска нет этой метрики."),
    "v_compare_intro": (
        "The same tier in several runs: each system of each run is a row; the test compares "
        "every row with the best on the samples both scored.",
        "Один уровень в нескольких запусках: строка — система запуска; тест сравнивает каждую "
        "строку с лучшей на примерах, оценённых обеими."),
    "v_runs_label": ("runs", "запуски"),
    "v_sample_regressions": ("Per-sample regressions (worst first)",
                             "Ухудшения по примерам (сначала худшие)"),
    "v_delta": ("change", "изменение"),
    "v_no_sample_regressions": ("No sample got worse.", "Ни один пример не ухудшился."),
    "v_not_found": ("Not found", "Не найдено"),
    "v_sample": ("Sample", "Пример"),
    "v_back_run": ("back to the run", "к запуску"),
    "v_details": ("details", "подробности"),
    "v_a": ("A (before)", "A (до)"),
    "v_b": ("B (after)", "B (после)"),
    "v_bad_query": ("Bad request", "Неверный запрос"),
    "v_corrupt": ("Run cannot be read", "Запуск не читается"),
    "v_page": ("page {n} of {of}", "страница {n} из {of}"),
    "v_prev": ("newer", "новее"),
    "v_next": ("older", "старее"),
    "v_bench": ("Benchmark", "Бенчмарк"),
    "v_live": ("Running now", "Идут сейчас"),
    "v_live_run": ("Live run", "Запуск в процессе"),
    "v_live_intro": ("Progress of each tier and the mean of its finished batches so far; the "
                     "page updates itself every few seconds.",
                     "Ход каждого уровня и среднее по уже готовым пакетам; страница "
                     "обновляется сама каждые несколько секунд."),
    "v_live_stored": ("Finished and stored: open the run", "Завершён и сохранён: открыть запуск"),
    "v_progress": ("progress", "ход"),
    "batches": ("batch|batches", "пакет|пакета|пакетов"),
    "st_complete": ("complete", "завершён"),
    "st_failed": ("failed", "с ошибкой"),
    "st_interrupted": ("interrupted", "прерван"),
    "st_writing": ("being written", "записывается"),
    "st_running": ("running", "идёт"),
    "st_stalled": ("stalled (no progress for 10 min)", "остановился (10 мин без хода)"),
    "st_stored": ("finished", "завершён"),
    "st_unreadable": ("unreadable", "не читается"),
    "explorer_hidden": ("{n} other scored [[n|item|items]] (texts, sessions, log rows) have "
                        "no value in "
                        "these columns: they are in their tiers' sections above.",
                        "Ещё {n} [[n|оценённый элемент|оценённых элемента|оценённых элементов]] (тексты, "
                        "сессии, строки журнала) без "
                        "значения в этих столбцах: они в разделах своих уровней выше."),
    "v_raw_details": ("all details (JSON)", "все подробности (JSON)"),
    "check_pass": ("PASS", "ПРОЙДЕНО"),
    "check_fail": ("FAIL", "НЕ ПРОЙДЕНО"),
    "v_side": ("Side by side", "Рядом"),
    "v_side_short": ("side by side", "рядом"),
    "v_side_intro": ("One question in two or more runs: each run's answer, its contexts (gold "
                     "ones marked ★) and its scores with the judge's reasoning, claim by claim.",
                     "Один вопрос в двух и более запусках: ответ каждого, его контексты "
                     "(эталонные отмечены ★) и оценки с рассуждением судьи по каждому "
                     "утверждению."),
    "v_pick_two_side": ("Pick two or more runs and a sample.",
                        "Выберите два или более запуска и пример."),
    "v_no_contexts": ("no retrieved contexts", "найденных контекстов нет"),
    "v_text_not_returned": ("text not returned", "текст не возвращён"),
    "latency": ("latency", "задержка"),
    # the viewer's error messages
    "v_q_bad": ("query parameter '{name}': {problem}{hint}",
                "параметр запроса «{name}»: {problem}{hint}"),
    "v_q_expected": (" (expected: {values})", " (ожидалось: {values})"),
    "v_q_not_param": ("not a parameter of this page", "у этой страницы нет такого параметра"),
    "v_q_unknown": ("unknown value {value}", "неизвестное значение {value}"),
    "v_q_not_date": ("{value} is not a date", "{value} — не дата"),
    "v_q_not_column": ("{value} is not a column", "{value} — не столбец"),
    "v_q_not_int": ("{value} is not a whole number", "{value} — не целое число"),
    "v_q_range": ("{value} is out of range {low}..{high}",
                  "{value} вне диапазона {low}..{high}"),
    "v_q_no_run": ("no run {value} in this store", "в этом хранилище нет запуска {value}"),
    "v_e_no_run": ("no run '{run}' in this store (see the runs page)",
                   "в этом хранилище нет запуска «{run}» (см. страницу запусков)"),
    "v_e_no_sample": ("no sample '{sample}' in run {run}",
                      "в запуске {run} нет примера «{sample}»"),
    "v_e_no_sample_runs": ("no sample '{sample}' in {runs}", "в {runs} нет примера «{sample}»"),
    "v_e_no_live": ("no running run '{run}' in the runs folder{where}",
                    "в папке запусков нет идущего запуска «{run}»{where}"),
    "v_e_no_runs_dir": (" (none given: view --runs DIR)",
                        " (папка не задана: view --runs DIR)"),
    "v_e_live_unreadable": ("the folder of run {run} cannot be read: {error}",
                            "папку запуска {run} не удаётся прочитать: {error}"),
    "v_e_corrupt": ("run {run} cannot be read from the store: {error}",
                    "запуск {run} не удаётся прочитать из хранилища: {error}"),
    "v_exported": ("exported from ragmeter view (read-only)",
                   "выгружено из ragmeter view (только чтение)"),
    "jc_no_stat": ("this card has no such statistic", "в этой карточке нет такой статистики"),
    "v_dataset_answer": ("answer in the dataset", "ответ из набора данных"),
    "v_gold": ("gold", "эталон"),
    "yes": ("yes", "да"),
    "no": ("no", "нет"),
    "v_answer_in_context": ("in the contexts", "в контекстах"),
    "v_answer_in_reference": ("in the reference", "в эталоне"),
    "v_reference_in_answer": ("in the answer", "в ответе"),
    "v_reference_in_context": ("in the contexts", "в контекстах"),
    "v_claims_answer": ("Answer's claims", "Утверждения ответа"),
    "v_claims_reference": ("Reference's claims", "Утверждения эталона"),
    "v_judge_reason": ("judge's reason", "обоснование судьи"),
    "v_reasoning": ("reason / judge's reasoning", "причина / рассуждение судьи"),
    "v_no_sample_in_run": ("This run has no such sample.", "В этом запуске нет такого примера."),
    "v_sample_improvements": ("Per-sample improvements (best first)",
                              "Улучшения по примерам (сначала самые большие)"),
    "v_no_sample_improvements": ("No sample got better.", "Ни один пример не улучшился."),
    "v_paired_test": ("paired test of the metric", "парный тест метрики"),
    "v_side_btn": ("Side by side", "Рядом"),
    # markdown
    "tiers_not_run_md": ("Tiers not run:", "Не запущенные уровни:"),
    "gate": ("Quality gate", "Проверка качества"),
    "gate_failed": ("FAILED", "НЕ ПРОЙДЕНА"),
    "gate_passed": ("passed", "пройдена"),
    "checks_passed": ("{ok}/{n} checks passed", "пройдено проверок: {ok}/{n}"),
    "value": ("value", "значение"),
    "target": ("target", "цель"),
    "direction": ("direction", "направление"),
    "threshold": ("threshold", "порог"),
    "message": ("message", "сообщение"),
}


_PLURAL = re.compile(r"\[\[(\w+)\|([^\]]+)\]\]")


def plural_form(n: int, forms: Sequence[str], lang: str) -> str:
    """The word for ``n``: English ``(one, many)``; Russian ``(one, few, many)`` (1 пакет,
    2 пакета, 5 пакетов, 11 пакетов, 21 пакет)."""
    if len(forms) < 3 or lang != "ru":
        return forms[0] if n == 1 else forms[-1]
    n = abs(n)
    if n % 10 == 1 and n % 100 != 11:
        return forms[0]
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return forms[1]
    return forms[2]


def _plurals(text: str, lang: str, fields: Mapping[str, object]) -> str:
    """``[[n|batch|batches]]`` → the form of the word for the field ``n``."""
    def form(m: re.Match[str]) -> str:
        value = fields.get(m.group(1))
        forms = m.group(2).split("|")
        try:
            n = int(str(value).replace(" ", "").replace("\u00a0", ""))
        except (TypeError, ValueError):
            return forms[-1]
        return plural_form(n, forms, lang)
    return _PLURAL.sub(form, text)


def t(key: str, lang: str = "en", **fields: object) -> str:
    """The text ``key`` in ``lang`` with ``fields`` filled in (the key itself when unknown);
    ``[[n|пакет|пакета|пакетов]]`` in a text is the word in the form its number takes."""
    pair = TEXT.get(key)
    if pair is None:
        return key.format(**fields) if fields else key
    text = pair[1] if lang == "ru" else pair[0]
    if "[[" in text:
        text = _plurals(text, lang, fields)
    return text.format(**fields) if fields else text


def status_text(status: str, lang: str = "en") -> str:
    """A run's or tier's status (``complete``, ``failed``, ``ok``...) in ``lang``."""
    key = f"st_{status}"
    return t(key, lang) if key in TEXT else status


def check_lang(lang: str) -> str:
    if lang not in LANGS:
        from ragmeter.errors import UsageError

        raise UsageError("--lang", f"unknown report language {lang!r}", list(LANGS))
    return lang


def results_lang(results: Iterable[object]) -> str | None:
    """The data language recorded in results' ``meta["lang"]`` when they were computed (the
    most frequent one), or ``None`` when no result carries one — a results JSON file has no
    samples to detect it from."""
    votes: dict[str, int] = {}
    for res in results:
        lang = (getattr(res, "meta", None) or {}).get("lang")
        if lang in LANGS:
            votes[lang] = votes.get(lang, 0) + 1
    return max(sorted(votes), key=lambda k: votes[k]) if votes else None


def join_names(names: list[str], lang: str, limit: int = 3) -> str:
    if len(names) <= 1:
        return "".join(names)
    if len(names) > limit:
        more = len(names) - limit
        rest = f"{more} more" if lang != "ru" else f"ещё {more}"
        return ", ".join(names[:limit]) + f" {t('and', lang)} " + rest
    return ", ".join(names[:-1]) + f" {t('and', lang)} " + names[-1]


# judge cards (reports/judge_card.py): kept in one block so they read together
TEXT.update({
    "jc_title": ("Judge card", "Карточка судьи"),
    "jc_intro": (
        "How well the judge agrees with human labels, per judged metric, on the labelled "
        "samples: each statistic with its 95% bootstrap confidence interval and n.",
        "Насколько судья согласен с разметкой людей по каждой судейской метрике на размеченных "
        "примерах: каждая статистика с 95% бутстреп-доверительным интервалом и n."),
    "jc_judge": ("Judge", "Судья"),
    "jc_model": ("model", "модель"),
    "jc_demo": ("demo judge", "демо-судья"),
    "jc_scale": ("labels", "разметка"),
    "jc_scale_binary": ("yes/no", "да/нет"),
    "jc_scale_ordinal": ("0/1/2", "0/1/2"),
    "jc_scale_continuous": ("0–1", "0–1"),
    "jc_unscored": ("unscored", "без оценки"),
    "jc_accuracy": ("accuracy", "точность"),
    "jc_kappa": ("Cohen's κ", "κ Коэна"),
    "jc_kappa_cohen": ("plain", "обычная"),
    "jc_kappa_quadratic": ("quadratic", "квадратичная"),
    "jc_spearman": ("Spearman ρ", "ρ Спирмена"),
    "jc_mae": ("MAE", "MAE"),
    "jc_tpr": ("TPR", "TPR"),
    "jc_tnr": ("TNR", "TNR"),
    "jc_bias": ("bias (judge − human)", "смещение (судья − человек)"),
    "jc_bias_lenient": ("lenient", "мягкий"),
    "jc_bias_strict": ("strict", "строгий"),
    "jc_bias_none_detected": ("none detected", "не обнаружено"),
    "jc_bias_unknown": ("unknown", "неизвестно"),
    "jc_auc": ("AUC", "AUC"),
    "jc_separation": ("separation", "разделение"),
    "jc_ppi_title": ("Bias-corrected estimates", "Оценки с поправкой на смещение"),
    "jc_ppi_intro": (
        "Prediction-powered estimate: the judge mean over all samples plus the mean "
        "human − judge correction on the labelled ones, with its 95% interval.",
        "Оценка с опорой на предсказания: среднее судьи по всем примерам плюс средняя поправка "
        "«человек − судья» на размеченных, с 95% интервалом."),
    "jc_raw_mean": ("judge mean", "среднее судьи"),
    "jc_ppi_estimate": ("corrected", "с поправкой"),
    "jc_correction": ("correction", "поправка"),
    "jc_clipped": ("interval cut to the metric's range {lo}–{hi}",
                   "интервал обрезан до диапазона метрики {lo}–{hi}"),
    "jc_labelled": ("labelled / all", "размечено / всего"),
    "jc_none": ("No run in this store holds a judge card. A card measures a judge against "
                "human verdicts: label some judged samples of a run (a JSONL file of sample_id, "
                "metric, label: yes/no or 0/1/2), then run "
                "`ragmeter judge card RUN_ID --labels labels.jsonl`; "
                "`ragmeter judge bench` grades judges on the bundled labelled benchmark.",
                "Ни в одном запуске этого хранилища нет карточки судьи. Карточка сравнивает "
                "судью с решениями людей: разметьте несколько примеров запуска (JSONL: "
                "sample_id, metric, label — да/нет или 0/1/2) и выполните "
                "`ragmeter judge card RUN_ID --labels labels.jsonl`; "
                "`ragmeter judge bench` оценивает судей на встроенном размеченном наборе."),
    "jc_compare_intro": (
        "Judge cards of the stored runs side by side, ranked per metric by {stat}.",
        "Карточки судей из сохранённых запусков рядом, по каждой метрике в порядке {stat}."),
    "judges": ("Judges", "Судьи"),
})

# the labelling page (``ragmeter label``) and gates backed by a judge card
from ragmeter.reports.i18n_label import LABEL_TEXT  # noqa: E402  (the table above first)

TEXT.update(LABEL_TEXT)
