"""The words of the labelling page and terminal (``ragmeter label``) and of gates backed by
a judge card, in English and Russian; :mod:`ragmeter.reports.i18n` adds them to its table."""

from __future__ import annotations

LABEL_TEXT: dict[str, tuple[str, str]] = {
    "lb_title": ("Blind labelling", "Слепая разметка"),
    "lb_intro": (
        "Grade each item yourself: the judge's verdict is hidden. Every answer is saved at "
        "once; close the page at any time and come back to go on.",
        "Оцените каждый пример сами: вердикт судьи скрыт. Каждый ответ сохраняется сразу; "
        "страницу можно закрыть в любой момент и продолжить позже."),
    "lb_metric": ("metric", "метрика"),
    "lb_rater": ("labeller", "разметчик"),
    "lb_rater_hint": ("your id (letters, digits, ._@+-)",
                      "ваш идентификатор (буквы, цифры, ._@+-)"),
    "lb_question": ("Question", "Вопрос"),
    "lb_contexts": ("Contexts", "Контексты"),
    "lb_answer": ("Answer", "Ответ"),
    "lb_reference": ("Reference answer", "Эталонный ответ"),
    "lb_none": ("(none)", "(нет)"),
    "lb_yes": ("yes", "да"),
    "lb_no": ("no", "нет"),
    "lb_g0": ("bad", "плохо"),
    "lb_g1": ("partly", "частично"),
    "lb_g2": ("good", "хорошо"),
    "lb_skip": ("skip", "пропустить"),
    "lb_back": ("back", "назад"),
    "lb_forward": ("forward", "вперёд"),
    "lb_keys": ("Keys: {grades} grade · s skip · ← or b back · → forward",
                "Клавиши: {grades} оценка · s пропуск · ← или b назад · → вперёд"),
    "lb_progress": ("item {i} of {n} · you labelled {done}",
                    "пример {i} из {n} · вы разметили {done}"),
    "lb_skipped_note": ("skipped earlier: it comes back after the rest",
                        "пропущен ранее: вернётся после остальных"),
    "lb_your_label": ("your label: {label}", "ваша оценка: {label}"),
    "lb_saved": ("saved", "сохранено"),
    "lb_saving": ("saving…", "сохранение…"),
    "lb_finished": ("Done: every chosen item has your label. Thank you!",
                    "Готово: у всех выбранных примеров есть ваша оценка. Спасибо!"),
    "lb_error": ("not saved: {error}", "не сохранено: {error}"),
    "lb_no_session": (
        "No labelling session is served here. Start one with "
        "`ragmeter label RUN_ID --labels labels.jsonl --metric METRIC`.",
        "Здесь нет сеанса разметки. Запустите его: "
        "`ragmeter label RUN_ID --labels labels.jsonl --metric METRIC`."),
    "lb_q_faithfulness": (
        "Is everything the answer says supported by the contexts? 1 yes, 0 no.",
        "Подтверждается ли всё, что сказано в ответе, контекстами? 1 да, 0 нет."),
    "lb_q_answer_relevance": (
        "Does the answer address the question? 0 not at all, 1 partly, 2 fully.",
        "Отвечает ли ответ на вопрос? 0 нет, 1 частично, 2 полностью."),
    "lb_q_context_relevance": (
        "Are the contexts relevant to the question? 0 not at all, 1 partly, 2 fully.",
        "Относятся ли контексты к вопросу? 0 нет, 1 частично, 2 полностью."),
    "lb_q_factual_correctness": (
        "Does the answer state only what the reference answer supports? 1 yes, 0 no.",
        "Говорит ли ответ только то, что подтверждает эталонный ответ? 1 да, 0 нет."),
    "lb_q_e2e_score": (
        "Is the answer as useful as the reference answer? 0 no, 1 partly, 2 yes.",
        "Так же ли полезен ответ, как эталонный? 0 нет, 1 частично, 2 да."),
    "lb_q_other": ("Grade {metric}: {grades}.", "Оцените {metric}: {grades}."),
    # gates backed by a judge card (ragmeter gate, the decision table)
    "gate_card": ("card-backed", "по карточке"),
    "gate_advisory": ("advisory: no matching judge card", "рекомендательно: нет карточки судьи"),
    "gate_card_note": (
        "◆ card-backed: a judge card of this run matches the judge (model, its version, "
        "prompts); a gate on the metric checks the bias-corrected interval shown by ◆. "
        "◇ advisory: judged, no matching judge card; `ragmeter gate` does not enforce a gate "
        "on it unless --require-card.",
        "◆ по карточке: карточка судьи этого запуска совпадает с судьёй (модель, её версия, "
        "промпты); порог по метрике проверяет интервал с поправкой, показанный у ◆. "
        "◇ рекомендательно: оценка судьи без подходящей карточки; `ragmeter gate` не "
        "применяет порог к ней без --require-card."),
}
