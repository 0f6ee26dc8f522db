"""How a document request reads, in English and Urdu: the parts a message is built from.

The analyst agent (agents.py) and the calibration set (make_calibration.py) write their
messages from these parts, so a message's quality is a matter of which parts it has:
documents named in plain words or as internal codes, a greeting and thanks or none, how
to send the documents, why they are needed, and whether it threatens the applicant.
`quality` (in judges.py) reads those same features back as the hidden truth.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Plain names of each document kind, by language.
DOCUMENTS = {
    "en": {
        "passport": "a copy of your passport (the photo page)",
        "proof_of_address": "a proof of address (a utility bill or bank statement from the "
        "last three months)",
        "source_of_funds": "a proof of the source of your funds (a salary slip or a sale deed)",
        "company_registration": "your company's certificate of registration",
        "beneficial_ownership": "a list of the people who own 25% or more of the company",
        "bank_statement": "a bank statement from the last three months",
    },
    "ur": {
        "passport": "پاسپورٹ کے تصویر والے صفحے کی کاپی",
        "proof_of_address": "پتے کا ثبوت (گزشتہ تین ماہ کا یوٹیلیٹی بل یا بینک اسٹیٹمنٹ)",
        "source_of_funds": "رقم کے ذرائع کا ثبوت (تنخواہ کی پرچی یا فروخت کی دستاویز)",
        "company_registration": "کمپنی کی رجسٹریشن کا سرٹیفکیٹ",
        "beneficial_ownership": "کمپنی کے 25 فیصد یا زیادہ حصص رکھنے والے افراد کی فہرست",
        "bank_statement": "گزشتہ تین ماہ کی بینک اسٹیٹمنٹ",
    },
}
GREETING = {"en": "Dear {name},", "ur": "محترم {name}،"}
THANKS = {
    "en": "Thank you for applying to open an account with us.",
    "ur": "ہمارے ساتھ اکاؤنٹ کھولنے کی درخواست کا شکریہ۔",
}
NEED = {
    "en": "To complete your application we still need {docs}.",
    "ur": "آپ کی درخواست مکمل کرنے کے لیے ہمیں ابھی {docs} درکار ہے۔",
}
CODES = {"en": "Missing documents: {codes}.", "ur": "نامکمل دستاویزات: {codes}۔"}
HOW = {
    "en": "Please upload them in the app under 'My documents', or reply to this message "
    "with clear photos.",
    "ur": "براہ کرم انہیں ایپ میں 'میری دستاویزات' کے حصے میں اپ لوڈ کریں، یا اس پیغام کے "
    "جواب میں واضح تصاویر بھیجیں۔",
}
HOW_SHORT = {"en": "Upload them.", "ur": "اپ لوڈ کریں۔"}
WHY = {
    "en": "The law requires us to verify your identity; your application stays open for 14 days.",
    "ur": "قانون کے مطابق آپ کی شناخت کی تصدیق ضروری ہے؛ آپ کی درخواست 14 دن تک کھلی رہے گی۔",
}
THREAT = {
    "en": "Send them now or your application will be rejected.",
    "ur": "فوراً بھیجیں ورنہ آپ کی درخواست مسترد کر دی جائے گی۔",
}
SIGN = {"en": "Kind regards, the onboarding team", "ur": "شکریہ، آن بورڈنگ ٹیم"}
AND = {"en": " and ", "ur": " اور "}


@dataclass(frozen=True)
class Style:
    """Which parts a message has."""

    greeting: bool = True
    thanks: bool = True
    plain: bool = True  # documents in plain words (else internal codes)
    how: str = "full"  # full | short | none
    why: bool = False
    threat: bool = False
    sign: bool = True


CAREFUL = Style(why=True)
CURT = Style(greeting=False, thanks=False, plain=False, how="short", sign=False)


def message(name: str, documents: list[str], language: str, style: Style) -> str:
    """The request for `documents`, addressed to `name`, in `language` (en or ur)."""
    lang = language if language in DOCUMENTS else "en"
    parts = []
    if style.greeting:
        parts.append(GREETING[lang].format(name=name))
    if style.thanks:
        parts.append(THANKS[lang])
    if style.plain:
        docs = AND[lang].join(DOCUMENTS[lang][d] for d in documents)
        parts.append(NEED[lang].format(docs=docs))
    else:
        parts.append(CODES[lang].format(codes=", ".join(documents)))
    if style.how != "none":
        parts.append((HOW if style.how == "full" else HOW_SHORT)[lang])
    if style.why:
        parts.append(WHY[lang])
    if style.threat:
        parts.append(THREAT[lang])
    if style.sign:
        parts.append(SIGN[lang])
    return " ".join(parts)
