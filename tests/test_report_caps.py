"""A huge answer or tool result does not make a huge report (issue 18 item 18).

The HTML report embeds at most FIELD_CHARS characters of any one field and marks the cut
with the command that prints it whole; `proctor show` still has every character.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import proctor
from proctor import Runner, Store, load_suite
from proctor.report.embed import FIELD_CHARS

MINI = Path(__file__).parent / "fixtures" / "mini"
ANSWER = "Item a is red. " + "la" * 2_500_000  # 5 MB
ARGS = {"item_id": "a", "padding": ["x" * 1000] * 3000}  # 3 MB of arguments


async def verbose(input, toolbox):  # type: ignore[no-untyped-def]
    await toolbox.call("items.get", ARGS)
    await toolbox.call("items.get", {"item_id": "a"})
    return ANSWER


def test_a_huge_answer_is_cut_in_the_report_and_whole_in_show(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store(db) as store:
        report = Runner(load_suite(MINI).select(ids=["read-item"]), verbose, store=store).run()
    html = tmp_path / "r.html"
    made = proctor("report", report.run_id, "--store", str(db), "--html", str(html))
    assert made.returncode == 0, made.stderr
    text = html.read_text()
    assert len(text) < 8 * FIELD_CHARS + 400_000  # a few cut fields, not 8 MB
    command = f"proctor show {report.run_id} --task read-item --trial 0"
    assert f"{len(ANSWER) - FIELD_CHARS:,} more characters cut; `{command}` shows them" in text
    assert text.count("more characters cut") >= 2  # the answer and the arguments
    shown = proctor("show", report.run_id, "--task", "read-item", "--store", str(db), "--json")
    assert shown.returncode == 0
    events = json.loads(shown.stdout)["events"]
    assert events[-1]["data"]["text"] == ANSWER
    assert events[1]["data"]["args"] == {"item_id": "a", "padding": ARGS["padding"]}
