"""Keyword-only checks on a safety meaning: tasks whose keywords stand for what they mean.

A task marks its `must_mention`/`must_not_mention` terms as a clinical or safety meaning
with `expect.answer.safety_meaning`. A keyword cannot read that meaning ("there is no
need to avoid amoxicillin" and "options: avoid it, or prescribe it" both say "avoid"),
so such a check is only a fast first pass: the task needs an `expect.judge` rubric, not
advisory, that settles its `mentions`/`not_mentions` checks. Without one, `proctor
health` calls the task **weak** (docs/architecture.md, Suite health; Reading).
"""

from __future__ import annotations

from proctor.tasks.models import Task


def keyword_only(task: Task) -> list[str]:
    """The keyword checks of `task` on a safety meaning that no judge rubric settles."""
    answer = task.expect.answer
    if answer is None or not answer.safety_meaning:
        return []
    settled = {
        reader for entry in task.expect.judge if not entry.advisory for reader in entry.settles
    }
    return [name for name in answer.keyword_checks if name not in settled]


def keyword_only_detail(checks: list[str]) -> str:
    """The health problem a task with keyword-only checks on a safety meaning reports."""
    named = ", ".join(checks)
    return (
        f"keyword-only check on a safety meaning ({named}): a negating or listing answer "
        f"passes it; name an expect.judge rubric that settles {named}"
    )
