"""Versioned generator and checker prompts, written separately in Russian and in English.

Each language has its own wording and its own examples (different domains on purpose, so the
examples cannot leak into a set generated from a customer's corpus); neither text is a
translation of the other. Every corpus text is fenced (:func:`ragmeter.judges.prompts.fence`).
The JSON schema carries ``title`` = prompt version, so scripted generators and replays can tell
the calls apart.
"""

from __future__ import annotations

from typing import Any

from ragmeter.judges.prompts import PromptTemplate

#: version of the whole prompt set; part of every generated set's signature
PROMPT_SET_VERSION = "synth-prompts/v2"

_STR = {"type": "string"}
_YES_NO = {"type": "string", "enum": ["yes", "no"]}


def _qa_schema(title: str) -> dict[str, Any]:
    return {"title": title, "type": "object",
            "properties": {"question": _STR, "answer": _STR},
            "required": ["question", "answer"]}


_COMMON = {
    "ru": (
        "Вопрос должен быть понятен человеку, который не видел фрагмента: не ссылайся на "
        "«текст», «фрагмент», «таблицу», «документ» или «выше сказано» — спрашивай о самой "
        "сути, называя предмет прямо. Один вопрос, без подсказки ответа внутри. Ответ — одно-"
        "два предложения, только то, что действительно написано во фрагменте. Пиши по-русски."
    ),
    "en": (
        "Someone who never saw the passage must understand the question: do not point at "
        "\"the text\", \"the passage\", \"the table\", \"the document\" or \"the above\" — name "
        "the thing you ask about. Ask exactly one question and do not give the answer away in "
        "it. The answer is one or two sentences and says only what the passage really states. "
        "Write in English."
    ),
}

FACT = PromptTemplate(
    name="synth.fact", version="1",
    system={
        "ru": (
            "Ты составляешь проверочные вопросы для поисковой системы по базе знаний. "
            "Прочитай фрагмент и задай вопрос о конкретном факте из него: сроке, сумме, месте, "
            "условии, порядке действий — так, как его задал бы живой пользователь. "
            + _COMMON["ru"] + "\nПримеры хороших вопросов из другой области: «Со скольких "
            "лет можно арендовать машину в каршеринге?», «Сколько минут действует бесплатное "
            "бронирование автомобиля?»"),
        "en": (
            "You write test questions for a search assistant over a knowledge base. Read the "
            "passage and ask about one concrete fact in it — a deadline, an amount, a place, a "
            "condition, a step — the way a real user would ask it. " + _COMMON["en"]
            + "\nGood questions from an unrelated field: \"How many bags can I check on an "
            "economy fare?\", \"When does online check-in close for international flights?\""),
    },
    user={"ru": "Фрагмент базы знаний:\n{passage}\n\nВерни вопрос и ответ.",
          "en": "Knowledge-base passage:\n{passage}\n\nReturn the question and its answer."},
    schema=_qa_schema("synth.fact@1"),
)

DEFINITION = PromptTemplate(
    name="synth.definition", version="1",
    system={
        "ru": (
            "Ты составляешь проверочные вопросы для поисковой системы по базе знаний. "
            "Найди во фрагменте понятие, услугу, документ или правило, которому там дано "
            "объяснение, и спроси, что это такое или для чего оно нужно. " + _COMMON["ru"]
            + "\nПримеры из другой области: «Что такое режим ожидания в "
            "каршеринге?», «Зачем нужна фотофиксация машины перед поездкой?»"),
        "en": (
            "You write test questions for a search assistant over a knowledge base. Find a "
            "term, service, document or rule that the passage explains and ask what it is or "
            "what it is for. " + _COMMON["en"] + "\nExamples from an unrelated field: \"What is "
            "a fare lock?\", \"What does priority boarding include?\""),
    },
    user={"ru": "Фрагмент базы знаний:\n{passage}\n\nВерни вопрос-определение и ответ.",
          "en": "Knowledge-base passage:\n{passage}\n\nReturn the definition question and its "
                "answer."},
    schema=_qa_schema("synth.definition@1"),
)

MULTI_CHUNK = PromptTemplate(
    name="synth.multi_chunk", version="1",
    system={
        "ru": (
            "Ты составляешь сложные проверочные вопросы для поисковой системы по базе знаний. "
            "Тебе даны два фрагмента. Задай один вопрос, на который можно ответить полностью, "
            "только сложив сведения из ОБОИХ фрагментов (например, сравнение, условие из одного "
            "и сумма из другого, последовательность шагов). Если одного фрагмента хватает — "
            "вопрос не годится. " + _COMMON["ru"] + "\nПример из другой области: «Если я "
            "поцарапал машину каршеринга, сколько составит франшиза и в какой срок нужно "
            "сообщить о повреждении?»"),
        "en": (
            "You write harder test questions for a search assistant over a knowledge base. "
            "You get two passages. Ask one question whose full answer needs facts from BOTH "
            "passages (a comparison, a condition from one and an amount from the other, steps "
            "spread over both). A question one passage answers alone is not acceptable. "
            + _COMMON["en"] + "\nExample from an unrelated field: \"If my flight is cancelled, "
            "how do I rebook and how much extra baggage do I keep on the new ticket?\""),
    },
    user={"ru": "Первый фрагмент:\n{passage_a}\n\nВторой фрагмент:\n{passage_b}\n\n"
                "Верни вопрос и ответ, опирающийся на оба фрагмента.",
          "en": "First passage:\n{passage_a}\n\nSecond passage:\n{passage_b}\n\n"
                "Return the question and an answer that uses both passages."},
    schema=_qa_schema("synth.multi_chunk@1"),
)

COLLOQUIAL = PromptTemplate(
    name="synth.colloquial", version="1",
    system={
        "ru": (
            "Ты имитируешь настоящих пользователей чат-бота поддержки. Они пишут быстро и с "
            "телефона: строчными буквами, без знаков препинания, с сокращениями (спс, плз, "
            "скока, щас, чё, универ), разговорными словами и иногда с опечатками. Прочитай "
            "фрагмент и задай вопрос о факте из него именно так. Смысл должен оставаться "
            "однозначным. Ответ пиши нормальным литературным языком, одно-два предложения, "
            "только по фрагменту. Не ссылайся на «текст» или «документ». Пиши по-русски.\n"
            "Примеры стиля из другой области: «скока стоит минута "
            "ожидания», «а чё будет если бросить машину не в зоне завершения»"),
        "en": (
            "You imitate real users of a support chatbot. They type fast on a phone: lower case, "
            "no punctuation, short forms (pls, thx, u, r, w/, asap), casual words and the odd "
            "typo. Read the passage and ask about one fact in it in exactly that style, still "
            "with one clear meaning. Write the answer in plain standard English, one or two "
            "sentences, only from the passage. Do not mention \"the text\" or \"the document\". "
            "Write in English.\nStyle examples from an unrelated field: \"how many bags can i "
            "bring on basic fare\", \"can u change a flight w/o paying extra\""),
    },
    user={"ru": "Фрагмент базы знаний:\n{passage}\n\nВерни вопрос в разговорном стиле и ответ.",
          "en": "Knowledge-base passage:\n{passage}\n\nReturn the casual question and its "
                "answer."},
    schema=_qa_schema("synth.colloquial@1"),
)

CONVERSATIONAL = PromptTemplate(
    name="synth.conversational", version="1",
    system={
        "ru": (
            "Ты пишешь короткий диалог пользователя с чат-ботом базы знаний — два или три "
            "вопроса пользователя. Первые реплики вводят тему, а последний вопрос без них "
            "непонятен: в нём есть «а», «это», «там», «тогда», пропущенный предмет и т. п. "
            "На ранние вопросы дай короткие ответы бота. На последний вопрос дай ответ строго "
            "по фрагменту и перепиши его в самостоятельный вопрос (standalone_question), "
            "понятный без диалога. Все ответы — только по фрагменту. Пиши по-русски.\n"
            "Пример из другой области: «Можно ли забронировать машину "
            "заранее?» → «Да, в приложении на 20 минут бесплатно.» → «А продлить можно?»"),
        "en": (
            "You write a short chat between a user and a knowledge-base assistant: two or three "
            "user turns. The early turns set the topic; the last user question makes no sense "
            "without them (it says \"it\", \"there\", \"what about…\", leaves the subject out). "
            "Give the assistant's short answers to the early turns. Answer the last question "
            "strictly from the passage and rewrite it as a self-contained question "
            "(standalone_question). Every answer comes from the passage only. Write in "
            "English.\nExample from an unrelated field: \"Can I change my seat after booking?\" "
            "→ \"Yes, in Manage booking up to 24 hours before departure.\" → \"Is that free?\""),
    },
    user={"ru": "Фрагмент базы знаний:\n{passage}\n\nВерни ранние реплики (turns), последний "
                "вопрос, ответ на него и самостоятельную формулировку последнего вопроса.",
          "en": "Knowledge-base passage:\n{passage}\n\nReturn the early turns, the last "
                "question, its answer and the self-contained form of the last question."},
    schema={"title": "synth.conversational@1", "type": "object",
            "properties": {
                "turns": {"type": "array", "items": {
                    "type": "object", "properties": {"question": _STR, "answer": _STR},
                    "required": ["question", "answer"]}},
                "question": _STR, "answer": _STR, "standalone_question": _STR},
            "required": ["turns", "question", "answer", "standalone_question"]},
)

NEGATIVE = PromptTemplate(
    name="synth.negative", version="1",
    system={
        "ru": (
            "Ты составляешь «ловушки» для поисковой системы по базе знаний: вопросы, которые "
            "пользователь этой системы вполне мог бы задать, но ответа на которые в базе нет. "
            "Ниже — несколько фрагментов базы, чтобы ты понял её тему и стиль. Придумай вопрос "
            "на ту же тему, ответ на который в этих фрагментах отсутствует и вряд ли есть в "
            "подобной базе (соседняя услуга, другой срок, редкий случай). Не задавай вопросов "
            "не по теме и не про мнения. В поле why коротко объясни, почему ответа нет. Пиши "
            "по-русски.\nПример для базы о каршеринге: «Можно ли перевозить в машине "
            "каршеринга собаку без переноски?»"),
        "en": (
            "You write trap questions for a search assistant over a knowledge base: questions "
            "its users could plausibly ask, but that the knowledge base does not answer. The "
            "passages below show the topic and style of the base. Invent a question on the same "
            "topic whose answer is not in them and is unlikely to be in such a base (a nearby "
            "service, a different deadline, an unusual case). No off-topic or opinion "
            "questions. In \"why\" say briefly why it is unanswerable. Write in English.\n"
            "Example for an airline help centre: \"Can I bring a drone battery in checked "
            "luggage on a codeshare flight?\""),
    },
    user={"ru": "Фрагменты базы знаний:\n{examples}\n\nВерни вопрос без ответа в базе и "
                "пояснение.",
          "en": "Knowledge-base passages:\n{examples}\n\nReturn the unanswerable question and "
                "why."},
    schema={"title": "synth.negative@1", "type": "object",
            "properties": {"question": _STR, "why": _STR}, "required": ["question"]},
)

CHECK_SUPPORTED = PromptTemplate(
    name="synth.check_supported", version="1",
    system={
        "ru": (
            "Ты строгий проверяющий. Даны вопрос, эталонный ответ и фрагменты базы знаний. "
            "Реши, подтверждают ли фрагменты эталонный ответ целиком и отвечает ли этот ответ "
            "на вопрос (supported: yes/no). Любая деталь ответа, которой нет во фрагментах, "
            "или ответ не на тот вопрос — это no. Если фрагментов два, реши также, нужны ли "
            "для ответа сведения из обоих (needs_all: yes/no); если фрагмент один — yes."),
        "en": (
            "You are a strict checker. You get a question, a reference answer and "
            "knowledge-base passages. Decide whether the passages back the whole reference "
            "answer and whether it answers the question (supported: yes/no). Any detail of the "
            "answer missing from the passages, or an answer to a different question, means no. "
            "With two passages, also decide whether the answer needs facts from both of them "
            "(needs_all: yes/no); with one passage say yes."),
    },
    user={"ru": "Вопрос:\n{question}\n\nЭталонный ответ:\n{answer}\n\nФрагменты:\n{fragments}",
          "en": "Question:\n{question}\n\nReference answer:\n{answer}\n\nPassages:\n{fragments}"},
    schema={"title": "synth.check_supported@1", "type": "object",
            "properties": {"supported": _YES_NO, "needs_all": _YES_NO, "reason": _STR},
            "required": ["supported", "needs_all"]},
)

CHECK_UNANSWERED = PromptTemplate(
    name="synth.check_unanswered", version="2",
    system={
        "ru": (
            "Ты строгий проверяющий. Даны вопрос и фрагменты, которые поисковая система нашла "
            "по нему в базе знаний. Реши, содержится ли в этих фрагментах ответ на вопрос "
            "(answered: yes/no); частичный, но полезный ответ — тоже yes. Реши также, мог бы "
            "живой пользователь этой базы знаний задать такой вопрос: он по её теме, понятен и "
            "осмыслен, а не про саму базу или её содержимое (plausible: yes/no)."),
        "en": (
            "You are a strict checker. You get a question and the passages a search system "
            "found for it in a knowledge base. Decide whether these passages answer the "
            "question (answered: yes/no); a partial but useful answer also counts as yes. Also "
            "decide whether a real user of this knowledge base could ask it: on its topic, "
            "clear and meaningful, not about the knowledge base or its contents as such "
            "(plausible: yes/no)."),
    },
    user={"ru": "Вопрос:\n{question}\n\nНайденные фрагменты:\n{fragments}",
          "en": "Question:\n{question}\n\nRetrieved passages:\n{fragments}"},
    schema={"title": "synth.check_unanswered@2", "type": "object",
            "properties": {"answered": _YES_NO, "plausible": _YES_NO, "reason": _STR},
            "required": ["answered", "plausible"]},
)

GENERATORS: dict[str, PromptTemplate] = {
    "fact": FACT, "definition": DEFINITION, "multi_chunk": MULTI_CHUNK,
    "colloquial": COLLOQUIAL, "conversational": CONVERSATIONAL, "negative": NEGATIVE,
}
CHECKS: dict[str, PromptTemplate] = {"supported": CHECK_SUPPORTED,
                                     "unanswered": CHECK_UNANSWERED}


def prompt_versions() -> dict[str, str]:
    """Every prompt's ``name@version`` (recorded in the set's signature)."""
    return {t.name: t.prompt_version for t in (*GENERATORS.values(), *CHECKS.values())}
