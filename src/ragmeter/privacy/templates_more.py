"""More templates of the labelled personal-data set, written after the first detectors were
measured on text written by others: other domains (banks, telecom, government services,
pharmacies, marketplaces, delivery), names in lower case and in Latin letters, dates of birth
with the cue after the date or right after a name, passports written several ways, street
addresses. Same slot syntax as :mod:`ragmeter.privacy.templates`; ``{personlow}`` is a
Russian name in lower case, ``{personlat}`` a name in Latin letters, ``{dobyear}`` a year of
birth, ``{address}`` a street address."""

from __future__ import annotations

TEMPLATES_MORE: dict[str, list[str]] = {
    "ru": [
        "Клиент {person}, {birth_date}, просит перевыпустить карту {card}.",
        "Получатель: {person}, {birth_date} г.р., адрес доставки {address}.",
        "передай {personlow:dat} что посылка пришла",
        "звонила {personlow}, просила перезвонить на {phone}",
        "скажи {personlow:dat} пусть заберёт заказ в пункте выдачи",
        "Абонент {person}, {dobyear} г.р., хочет перенести номер {phone} к нам.",
        "Паспорт: серия {passport_series} номер {passport_number}, выдан УФМС.",
        "Данные для МФЦ: паспорт {passport}, СНИЛС {snils}, прописка {address}.",
        "Доставьте, пожалуйста, по адресу {address}, домофон не работает.",
        "Я живу по адресу {address}, счётчики меняли в мае.",
        "Рецепт выписан на {person:acc}, дата рождения {birth_date}.",
        "Пенсионер {person}, {birth_date}, подал заявление на перерасчёт.",
        "Застрахованный: {person}, {birth_date} г.р., полис оформлен онлайн.",
        "Курьер не нашёл {address}, перезвоните {person:dat} на {phone}.",
        "Сотрудник банка {person} подтвердил перевод с карты {card}.",
        "Список группы: {person}, {birth_date}; {person}, {birth_date}.",
        "Продавец ИП {person}, ИНН {inn}, склад {address}.",
        "У {personlow:gen} не проходит оплата картой {card}",
        "Заявитель {person} ({dobyear} года рождения) просит выписку из ЕГРН.",
        "Прописан: {address}. Телефон {phone}.",
    ],
    "en": [
        "Customer {personlat}, date of birth {birth_date}, asked to reissue card {card}.",
        "Ship to {personlat}, {address}.",
        "My name is {personlat} and I live at {address}.",
        "Please call {personlat} back on {phone}.",
        "Patient {personlat}, born {birth_date}, needs a repeat prescription.",
        "Thanks, {personlat}! Your order goes to {address}.",
        "The account holder is {personlat}, passport {passport}.",
        "Dear {personlat}, your parcel is waiting at the pick-up point.",
        "Forward the invoice to {personlat} at {email}.",
        "Registered address: {address}, phone {phone}.",
        "{personlat} ({birth_date}) opened a deposit yesterday.",
        "Our manager {personlat} will contact you at {email}.",
    ],
}

NEGATIVES_MORE: dict[str, list[str]] = {
    "ru": [
        "Отделение банка находится по адресу ул. Садовая, д. 5, работает до 19:00.",
        "Аптека на проспекте Мира, 12 открыта круглосуточно.",
        "Тариф «Смарт Лайн» стоит 450 рублей в месяц.",
        "Заказ № {bad_card} оформлен 12.03.2024 и доставлен 15.03.2024.",
        "Пункт выдачи: ул. Ленина, 40, вход со двора.",
        "Справку выдают с 1990 года по новой форме.",
    ],
    "en": [
        "Our office is at 10 High Street, open 9 to 5.",
        "The pharmacy on Baker Street closes at 8 pm.",
        "Ticket {bad_inn} was opened on 2024-03-12.",
        "Black Friday deals start on Monday in every Grand Mall store.",
    ],
}
