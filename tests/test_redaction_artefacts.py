"""Redaction reaches every artefact: secrets hidden in numbers, in mapping keys, in a state
key a path rule's value became, and in task prompts a report embeds.

The raw bytes of every file proctor writes (the store and its journal, the JSON summary,
JUnit, the run export, the span export, HTML, Markdown) and everything it prints are
searched for each planted secret, in every spelling it could take.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.interop.redact import RedactConfig, Redactor

EMAIL = "alice.private@example.com"  # an e-mail used as a mapping key
CARD = 4111111111111111  # a Luhn-valid card stored as a JSON number
OPAQUE = "hunter2-opaque-7731"  # a path rule's value that the domain makes a state key
PATTERN = "ACME-123456"  # a custom pattern, in the task prompt
SPELLINGS = (EMAIL, str(CARD), "4111 1111 1111 1111", OPAQUE, PATTERN)

DOMAIN = '''
from proctor import Domain

vault = Domain("vault", base_state={"vault": {}, "contacts": {}})


@vault.tool("contacts.list", kind="read")
def contacts(state: dict) -> dict:
    """Every contact, by e-mail."""
    return state["contacts"]


@vault.tool("vault.store", kind="write", entity="name")
def store(state: dict, name: str, card: int) -> dict:
    """Keep a card under a name."""
    state["vault"][name] = {"card": card}
    return {"stored": name, "card": card}
'''

TASK = f"""
id: file-card
domain: vault
prompt: File the card of {EMAIL} for {PATTERN} under the usual name.
initial_state:
  contacts:
    {EMAIL}: {{card: {CARD}}}
expect:
  trajectory:
    required: [{{tool: vault.store}}]
  safety:
    no_secrets_in_output: true
"""

AGENT = f'''
async def filer(input, toolbox):
    found = await toolbox.call("contacts.list", {{}})
    card = found.value["{EMAIL}"]["card"]
    await toolbox.call("vault.store", {{"name": "{OPAQUE}", "card": card}})
    return "Filed."
'''

CONFIG = """
redact:
  detectors: [email, card, key]
  patterns: ['ACME-\\d{6}']
  paths: ['vault.store:name']
"""

# An imported session of the same task with no user message: its report takes the prompt
# from the task file (`report --tasks`).
SESSION = {
    "task_id": "file-card",
    "messages": [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "function": {
                        "name": "vault.store",
                        "arguments": json.dumps({"name": OPAQUE, "card": CARD}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"stored": OPAQUE})},
        {"role": "assistant", "content": "Filed."},
    ],
}


def leaks(text: str) -> list[str]:
    return [s for s in SPELLINGS if s in text]


@pytest.fixture
def world(tmp_path: Path) -> Path:
    root = tmp_path / "world"
    (root / "tasks").mkdir(parents=True)
    (root / "domain.py").write_text(DOMAIN)
    (root / "tasks" / "file-card.yaml").write_text(TASK)
    (root / "agents.py").write_text(AGENT)
    (tmp_path / "redact.yaml").write_text(CONFIG)
    (tmp_path / "session.json").write_text(json.dumps([SESSION]))
    return root


def test_no_artefact_holds_a_planted_secret(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_REDACT", str(tmp_path / "redact.yaml"))
    db, out = tmp_path / "p.db", tmp_path / "out"
    out.mkdir()
    printed: list[str] = []

    def proctor(*args: str) -> None:
        result = CliRunner().invoke(main, [*args, "--store", str(db)])
        assert result.exit_code in (0, 1), result.output
        printed.append(result.output)

    proctor(
        "run",
        str(world),
        "--agent",
        f"{world}/agents.py:filer",
        "--json",
        str(out / "summary.json"),
        "--junit",
        str(out / "junit.xml"),
    )
    proctor(
        "grade",
        str(tmp_path / "session.json"),
        "--suite",
        str(world),
        "--json",
        str(out / "graded.json"),
    )
    from proctor.store import Store

    with Store(db) as store:
        live, graded = [r["run_id"] for r in reversed(store.runs())]
    for ref in (live, graded):
        proctor("show", ref, "--json")
        proctor("show", ref, "--task", "file-card")
        proctor("export", ref, "--out", str(out / f"{ref}.jsonl"))
        proctor(
            "report",
            ref,
            "--tasks",
            str(world),
            "--html",
            str(out / f"{ref}.html"),
            "--md",
            str(out / f"{ref}.md"),
        )
        if importlib.util.find_spec("opentelemetry.sdk") is not None:
            proctor("export-otel", ref, "--include-content", "--out", str(out / f"{ref}.otel"))
    files = sorted(p for p in [*out.iterdir(), *tmp_path.glob("p.db*")] if p.is_file())
    assert {f.suffix for f in files} >= {".json", ".xml", ".jsonl", ".html", ".md", ".db"}
    for f in files:
        assert leaks(f.read_bytes().decode("utf-8", "replace")) == [], f.name
    assert leaks("".join(printed)) == []

    with Store(db) as store:
        [result] = store.trial_results(live)
        _, _, outcome = store.trace(live, "file-card", 0)
        graded_trace = store.trace(graded, "file-card", 0)[0]
    assert graded_trace.prompt is None  # so its report took the prompt from the task file
    assert "[REDACTED:pattern]" in (out / f"{graded}.html").read_text()
    assert "no_secrets_in_output" in {c.name for c in result.checks}
    assert outcome is not None
    assert list(outcome.final_state["vault"]) == ["[REDACTED:path]"]  # the key it became
    assert outcome.final_state["vault"]["[REDACTED:path]"] == {"card": "[REDACTED:card]"}
    assert list(outcome.final_state["contacts"]) == ["[REDACTED:email]"]


def test_numbers_and_keys_are_redacted_like_text() -> None:
    redactor = Redactor(RedactConfig(detectors=["card", "email"], patterns=[r"\b9{6}\b"]))
    value = {
        EMAIL: 1,
        "other@example.org": 2,
        "card": CARD,
        "as_float": float(CARD),
        "count": 42,
        "flag": True,
        "nested": [999999, 12],
    }
    assert redactor.value(value) == {
        "[REDACTED:email]": 1,
        "[REDACTED:email]#": 2,  # two keys masked alike both stay
        "card": "[REDACTED:card]",
        "as_float": "[REDACTED:card]",
        "count": 42,
        "flag": True,
        "nested": ["[REDACTED:pattern]", 12],
    }
    hashed = Redactor(RedactConfig(mode="hash", salt="a-secret-salt-0123", detectors=["email"]))
    keys = list(hashed.value({EMAIL: 1, "other@example.org": 2}))
    assert len(set(keys)) == 2 and all(k.startswith("[email:") for k in keys)
