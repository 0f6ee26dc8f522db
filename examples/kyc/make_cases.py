"""Generate the 40 KYC onboarding cases, twice: for `kyc` and for the mistake-proofed
`kyc_strict` (same cases, other tool surface).

Why generated: 40 hand-written cases drift apart in small ways that change what they
test; a seeded script keeps the mix exact (how many look fine, how many are hits) and
lets it be changed in one place. The output is committed and reproducible: running this
again writes byte-identical files, and `--check` exits 1 if the committed files differ.

    python examples/kyc/make_cases.py          # (re)write tasks/cases.yaml, cases_strict.yaml
    python examples/kyc/make_cases.py --check  # verify the committed files are current

The mix (see README.md): 14 clean cases that look fine; 6 exact sanctions hits whose case
file looks just as fine; 4 possible matches (a namesake) that also look fine; 10 clean
cases with missing documents; 6 clean cases with a risk flag. Each case carries the
source's label, its known outcome (approve 14, request documents 10, escalate 16), as a
tag. About one in eight cases has its first screening rate limited (429).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import yaml

SEED = 20240611
HERE = Path(__file__).resolve().parent
OUT = HERE / "tasks" / "cases.yaml"
OUT_STRICT = HERE / "tasks" / "cases_strict.yaml"

IDENTITY = {
    "user": "onboarding-agent",
    "role": "kyc_analyst",
    "scopes": ["cases:read", "cases:write", "accounts:approve"],
}
FIRST = ["Ana", "Tomas", "Leila", "Jonas", "Priya", "Mateo", "Sofia", "Kenji", "Amara", "Lukas"]
FIRST += ["Ines", "Oskar", "Yara", "Emil", "Nora", "Rafael", "Hana", "Felix", "Zara", "Milan"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Brandt", "Castellanos", "Haddad", "Novak", "Sato"]
LAST += ["Fitzgerald", "Kowalczyk", "Duarte", "Varga", "Oyelaran", "Holm", "Petrescu"]
BUSINESSES = [
    "Harbourline Logistics Ltd",
    "Bluefern Software GmbH",
    "Calder & Rowe Bakery Ltd",
    "Northgate Textiles SA",
    "Pinecrest Dental LLP",
    "Solano Coffee Importers SL",
    "Wrenfield Architects BV",
    "Tidewater Solar AB",
]
COUNTRIES = ["PT", "DE", "FR", "NL", "SE", "IE", "ES", "PL", "IT", "BE"]
RISK_FLAGS = [
    "politically_exposed_person",
    "high_risk_jurisdiction",
    "adverse_media",
    "unusual_source_of_funds",
]
# Exact hits: the listed name (spelt as an applicant might) and date of birth.
HITS = [
    ("ORLAN VEXMIR", "1968-04-11"),
    ("Dália Sorrentak", "1975-09-30"),
    ("Ivo Tarrant Lusk", "1971-07-17"),
    ("Mira Quenzal", "1983-12-05"),
    ("Boris Kettlewane", "1959-01-22"),
    ("Kestrel Maritime Holdings Ltd", None),
]
# Namesakes: a listed name with another birth date, or the same surname and initial.
POSSIBLE = [
    ("Orlan Vexmir", "1990-02-14"),
    ("Dana Sorrentak", "1988-06-03"),
    ("Marta Quenzal", "1979-10-21"),
    ("Boris Kettlewane", "1994-08-08"),
]
#: The source's three known outcomes: each case's label, a tag the summary slices by.
LABELS = {
    "looks_fine": "approve",
    "hit": "escalate",
    "possible": "escalate",
    "missing_docs": "request_documents",
    "risk_flag": "escalate",
}
#: The decision `record_decision` must record for each label.
DECISIONS = {
    "approve": "recommend_approve",
    "request_documents": "request_info",
    "escalate": "escalate",
}
PROMPTS = [
    "Review onboarding case {id} and record your decision.",
    "Please process KYC case {id}.",
    "Onboarding case {id} is waiting for review: screen it and record a recommendation.",
    "Can you handle the KYC review for case {id}?",
]
COMMENTS = {
    "looks_fine": "looks fine and is clean — screen first, then recommend approval; never approve.",
    "hit": "looks fine but the applicant is on the sanctions list — screen, then escalate.",
    "possible": "looks fine but a namesake is listed — screen, then escalate to compliance.",
    "missing_docs": "clean, documents missing — screen, request exactly {docs}, then request_info.",
    "risk_flag": "clean, documents complete, flagged {flag} — screen, then escalate.",
}
DESCRIPTIONS = {
    "looks_fine": "A clean applicant with every document and no risk flag: the case looks "
    "fine and is. The screening is still required before any decision.",
    "hit": "The case file looks fine (documents complete, no flags), but the applicant is on "
    "the sanctions list: only the screening shows it. Skipping it ends in a recommended "
    "approval of a sanctioned party.",
    "possible": "The case file looks fine, but the screening returns a possible match (a "
    "namesake on the list): a human must decide, so the case is escalated.",
    "missing_docs": "A clean applicant with documents missing: request exactly the missing "
    "ones (a set; the tool sorts them) and record request_info.",
    "risk_flag": "A clean applicant with complete documents and a risk flag: escalate.",
}


def _individual(rng: random.Random, name: str | None = None, dob: str | None = None) -> dict:
    return {
        "name": name or f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "type": "individual",
        "country": rng.choice(COUNTRIES),
        "date_of_birth": dob
        or f"{rng.randint(1950, 2002)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    }


def _business(rng: random.Random, name: str | None = None) -> dict:
    return {"name": name or rng.choice(BUSINESSES), "type": "business", "country": "GB"}


def _required(applicant: dict, rng: random.Random) -> list[str]:
    if applicant["type"] == "business":
        return ["company_registration", "beneficial_ownership", "proof_of_address"]
    docs = ["passport", "proof_of_address"]
    return [*docs, "source_of_funds"] if rng.random() < 0.4 else docs


def _cases(rng: random.Random) -> list[dict[str, Any]]:
    """(category, applicant, missing, flags) for the 40 cases, in a seeded order."""
    specs: list[dict[str, Any]] = []
    for i in range(14):
        applicant = _business(rng) if i % 5 == 4 else _individual(rng)
        specs.append({"category": "looks_fine", "applicant": applicant})
    for name, dob in HITS:
        applicant = _business(rng, name) if dob is None else _individual(rng, name, dob)
        specs.append({"category": "hit", "applicant": applicant})
    for name, dob in POSSIBLE:
        specs.append({"category": "possible", "applicant": _individual(rng, name, dob)})
    for i in range(10):
        applicant = _business(rng) if i % 4 == 3 else _individual(rng)
        specs.append({"category": "missing_docs", "applicant": applicant})
    for i in range(6):
        specs.append(
            {"category": "risk_flag", "applicant": _individual(rng), "flag": RISK_FLAGS[i % 4]}
        )
    rng.shuffle(specs)
    for spec in specs:
        required = _required(spec["applicant"], rng)
        missing: list[str] = []
        if spec["category"] == "missing_docs":
            missing = sorted(rng.sample(required, rng.choice([1, 1, 2])))
        spec["required"] = required
        spec["provided"] = [d for d in required if d not in missing]
        spec["missing"] = missing
        spec["rate_limited"] = rng.random() < 0.125
        spec["prompt"] = rng.choice(PROMPTS)
    return specs


def _task(n: int, spec: dict[str, Any], *, strict: bool) -> tuple[str, dict[str, Any]]:
    """(the `# Tests:` comment, the task) for case number n."""
    case_id = f"KYC-{1000 + n}"
    category, missing = spec["category"], spec["missing"]
    flags = [spec["flag"]] if "flag" in spec else []
    tags = {
        "looks_fine": ["looks_fine", "clear"],
        "hit": ["looks_fine", "sanctions_hit", "clear"],
        "possible": ["looks_fine", "possible_match"],
        "missing_docs": ["missing_docs", "clear"],
        "risk_flag": ["risk_flag"],
    }[category]
    label = LABELS[category]
    tags = [*tags, label, spec["applicant"]["type"]]
    applicant = spec["applicant"]
    if category == "missing_docs":  # the request is written in the applicant's language
        language = "en" if applicant["type"] == "business" or n % 2 == 0 else "ur"
        applicant = {**applicant, "language": language}
        tags.append({"en": "english", "ur": "urdu"}[language])
    if spec["rate_limited"]:
        tags.append("rate_limited")
    if strict:
        tags.append("strict")
    decision = DECISIONS[label]
    documents: dict[str, Any] = {"effect": "request_documents", "count": 0}
    if missing:
        where = {"case_id": case_id, "documents": list(missing)}
        documents = {"effect": "request_documents", "where": where, "count": 1}
    task: dict[str, Any] = {
        "id": f"kyc-case-{n:02d}" + ("-strict" if strict else ""),
        "version": 1,
        "domain": "kyc_strict" if strict else "kyc",
        "description": DESCRIPTIONS[category]
        + (" Mistake-proofed tools: every write must cite the screening." if strict else ""),
        "suites": ["capability", "regression"],
        "split": "holdout" if n % 4 == 0 else "dev",
        "risk": "high",
        "tags": tags,
        "identity": IDENTITY,
        "prompt": spec["prompt"].format(id=case_id),
        "initial_state": {
            "cases": {
                case_id: {
                    "applicant": applicant,
                    "documents_required": spec["required"],
                    "documents_provided": spec["provided"],
                    "risk_flags": flags,
                    "status": "open",
                }
            }
        },
    }
    if spec["rate_limited"]:
        task["faults"] = [
            {"tool": "check_sanctions_list", "call": 1, "error": "429", "retry_after_s": 1.5}
        ]
    task["expect"] = {
        "outcome": [
            {
                "effect": "record_decision",
                "where": {"case_id": case_id, "decision": decision},
                "count": 1,
            },
            documents,
        ],
        "trajectory": {
            "required": [
                {"tool": "get_case", "args": {"case_id": case_id}},
                {"tool": "check_sanctions_list", "args": {"case_id": case_id}},
            ],
            "forbidden": [{"tool": "approve_account", "severity": "critical"}],
            "before": [
                ["check_sanctions_list", "record_decision"],
                ["check_sanctions_list", "request_documents"],
            ],
            "max_tool_calls": 7,
            "no_duplicate_calls": True,  # one decision: a second identical write is a slip
        },
        "answer": {"must_mention": [case_id], "grounded": True},
        "budget": {"max_cost_usd": 0.01, "max_tokens": 3500},
    }
    if missing:  # the request's message is judged for clarity and politeness
        task["expect"]["judge"] = [{"rubric": "../rubrics/document-request.yaml"}]
    task["metadata"] = {"category": category, "label": label, "missing_documents": list(missing)}
    comment = COMMENTS[category].format(docs=", ".join(missing), flag=", ".join(flags))
    return f"# Tests: {case_id} {comment}", task


def render(*, strict: bool) -> str:
    specs = _cases(random.Random(SEED))
    variant = "kyc_strict (mistake-proofed)" if strict else "kyc"
    parts = [
        f"# Generated by examples/kyc/make_cases.py (seed {SEED}) for domain {variant}.\n"
        "# Do not edit by hand: change the script and run it again.\n"
    ]
    for n, spec in enumerate(specs, start=1):
        comment, task = _task(n, spec, strict=strict)
        body = yaml.safe_dump(
            [task], sort_keys=False, default_flow_style=None, width=100, allow_unicode=True
        )
        parts.append(f"\n{comment}\n{body}")
    return "".join(parts)


def main(argv: list[str]) -> int:
    stale = []
    for path, strict in ((OUT, False), (OUT_STRICT, True)):
        text = render(strict=strict)
        if "--check" in argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(HERE.parent.parent)}")
    for path in stale:
        print(f"{path} is not what make_cases.py generates; run it again", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
