"""Which language a task's prompt is in, for `validate --strict`'s warning.

A task without `language` is read as English (grade.lexicon); one whose prompt is plainly
in another language would have its answers read with the wrong words. py3langid (a
Naive Bayes model over byte n-grams, 4.5 MB installed) names the prompt's language; it
is imported only here, on first use (its model loads in about 2 s), never by a run.
A prompt is plainly not English when it has at least MIN_WORDS words and the model's
first language is another, with at least MIN_PROBABILITY and RATIO times English's
(over its 97 languages): short prompts ("Close INC-7") are too little to tell from. Of
the shipped examples' prompts, only incident-014's ("Cierra INC-004217; ya está
resuelto": es 0.38, en 0.0006) is.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from proctor.tasks.loader import LoadedTask

MIN_WORDS = 4
MIN_PROBABILITY = 0.3
RATIO = 20.0
_WORD = re.compile(r"[^\W\d_]{2,}")


@cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def available() -> bool:
    """Is the language-ID extra installed (`pip install proctor[language]`)?"""
    from importlib.util import find_spec

    return find_spec("py3langid") is not None


def prompt_language(prompt: str) -> tuple[str, float, float] | None:
    """(language, its probability, English's) of a prompt long enough to tell; None when
    too short."""
    if len(_WORD.findall(prompt)) < MIN_WORDS:
        return None
    ranked = {str(lang): float(p) for lang, p in _identifier().rank(prompt)}
    language = max(ranked, key=ranked.__getitem__)
    return language, ranked[language], ranked.get("en", 0.0)


def language_warnings(tasks: list[LoadedTask]) -> list[str]:
    """file:line warnings for tasks without `language` whose prompt is plainly not English
    (none without the extra)."""
    if not available():
        return []
    out = []
    for loaded in tasks:
        if loaded.task.language is not None:
            continue
        found = prompt_language(loaded.task.prompt)
        if found is None:
            continue
        language, probability, english = found
        if language != "en" and probability >= max(MIN_PROBABILITY, RATIO * english):
            out.append(
                f"{loaded.path}:{loaded.line}: task {loaded.task.id}: its prompt reads as "
                f"{language!r} (p={probability:.2f}) but the task sets no `language`, so its "
                f"answers are read as English; add `language: {language}` if they are not"
            )
    return out
