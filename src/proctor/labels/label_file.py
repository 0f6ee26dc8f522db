"""The labels file: what people said about items, as `proctor calibrate` reads it.

One row (CSV) or one JSON object per line (JSONL) per label, with these columns:

| column | required | meaning |
| --- | --- | --- |
| `item` | yes | the labelled item: an id of the items file, or a trial `RUN/TASK#TRIAL` |
| `label` | yes | `pass` or `fail`, or an integer score of the rubric's scale (one kind per file) |
| `labeller` | yes | who labelled it (each labeller labels an item once) |
| `slice` | no | the item's slice (a language, a case kind): figures are given per slice |
| `rubric` | no | the rubric id (or `id@version`) the label was given on |
| `note` | no | the labeller's evidence or remark |

This module is the format's one reader and writer: anything that produces labels (the
review desk's export) writes them with `write_labels` (docs/architecture.md, Judges).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from proctor.core.bounded import MAX_BYTES
from proctor.core.documents import SpecError, dump_document

COLUMNS = ("item", "label", "labeller", "slice", "rubric", "note")
REQUIRED = ("item", "label", "labeller")
VERDICTS = ("pass", "fail")


@dataclass(frozen=True)
class Label:
    item: str
    label: str
    labeller: str
    slice: str = ""
    rubric: str = ""
    note: str = ""
    line: int = 0  # where it was read (0: not from a file)

    @property
    def is_verdict(self) -> bool:
        return self.label.lower() in VERDICTS

    @property
    def score(self) -> int | None:
        """The label as an integer score, None when it is not one."""
        try:
            return int(self.label)
        except ValueError:
            return None


def _rows(path: Path, text: str) -> list[tuple[int, dict[str, object]]]:
    if path.suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise SpecError.one(path, 1, "", f"missing column(s): {', '.join(missing)}")
        unknown = [c for c in reader.fieldnames or [] if c not in COLUMNS]
        if unknown:
            raise SpecError.one(
                path, 1, unknown[0], f"unknown column (known: {', '.join(COLUMNS)})"
            )
        try:
            return [(reader.line_num, dict(row)) for row in reader]
        except csv.Error as exc:
            raise SpecError.one(path, reader.line_num, "", f"invalid CSV: {exc}") from None
    if path.suffix not in (".jsonl", ".json"):
        raise SpecError.one(path, 1, "", "a labels file is .csv or .jsonl")
    rows = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 is text
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecError.one(path, number, "", f"invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise SpecError.one(path, number, "", "nested deeper than JSON is read") from None
        if not isinstance(data, dict):
            raise SpecError.one(path, number, "", "a label is a JSON object")
        unknown = [c for c in data if c not in COLUMNS]
        if unknown:
            raise SpecError.one(
                path, number, unknown[0], f"unknown field (known: {', '.join(COLUMNS)})"
            )
        rows.append((number, data))
    return rows


def read_labels(path: str | Path) -> list[Label]:
    """Every label of a CSV/JSONL file; a problem is a SpecError naming file, line, field."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise SpecError.one(path, 1, "", f"larger than {MAX_BYTES:,} bytes")
        text = path.read_bytes().decode("utf-8-sig")  # no newline translation: CSV fields keep \r
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError.one(path, 1, "", f"cannot read file: {exc}") from None
    labels: list[Label] = []
    problems = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in _rows(path, text):
        values = {c: "" if row.get(c) is None else str(row.get(c)).strip() for c in COLUMNS}
        empty = [c for c in REQUIRED if not values[c]]
        if empty:
            problems.append((path, line, empty[0], "required field is empty"))
            continue
        label = Label(**values, line=line)
        if not label.is_verdict and label.score is None:
            problems.append(
                (path, line, "label", f"{label.label!r} is neither pass/fail nor a score")
            )
            continue
        key = (label.item, label.labeller)
        if key in seen:
            problems.append(
                (
                    path,
                    line,
                    "item",
                    f"{label.labeller} labelled {label.item} twice (line {seen[key]})",
                )
            )
            continue
        seen[key] = line
        labels.append(label)
    if problems:
        raise SpecError(problems)
    if not labels:
        raise SpecError.one(path, 1, "", "no labels in the file")
    return labels


def write_labels(path: str | Path, labels: list[Label]) -> None:
    """Write labels as CSV or JSONL (by the suffix), in the columns `read_labels` reads."""
    path = Path(path)
    rows = [{c: v for c, v in asdict(label).items() if c in COLUMNS} for label in labels]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(COLUMNS))  # RFC 4180: CRLF, CR quoted
        writer.writeheader()
        writer.writerows(rows)
        path.write_bytes(out.getvalue().encode("utf-8"))
    elif path.suffix in (".jsonl", ".json"):
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        path.write_text(text, encoding="utf-8")
    else:
        raise ValueError(f"{path}: a labels file is .csv or .jsonl")


def write_generated_set(
    items_path: Path,
    items: list[Any],
    labels_path: Path,
    labels: list[Label],
    *,
    script: str,
    check: bool = False,
) -> int:
    """Write a calibration set a script generates (the examples' simulated labellers):
    the items as YAML headed by the script's name, and the labels file. With `check`,
    write nothing and compare with the committed files instead; the exit code (1: stale).
    """
    text = f"# Generated by {script}; do not edit by hand.\n" + dump_document(items)
    if check:
        scratch = labels_path.with_name(f".check{labels_path.suffix}")
        write_labels(scratch, labels)
        same = items_path.is_file() and items_path.read_text(encoding="utf-8") == text
        same = same and labels_path.is_file() and scratch.read_bytes() == labels_path.read_bytes()
        scratch.unlink()
        if not same:
            stale = f"{items_path.name} or {labels_path.name} is stale; run {script}"
            print(stale, file=sys.stderr)
        return 0 if same else 1
    items_path.write_text(text, encoding="utf-8")
    write_labels(labels_path, labels)
    print(f"wrote {items_path.name} ({len(items)} items) and {labels_path.name}")
    return 0
