"""What a newcomer hit in the first hour (issue 29 item 11), each checked where it was.

The tutorial said "four files" and wrote three; the HTML report labelled every interval
"paired t" though rates get Newcombe's; benchmarks/README.md said Ray is not in the dev
extra; KYC's per-category breakdown (tag slices) was only in --json; `ctx.identity` is an
object in tools and a dict for agents without a word on it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from conftest import proctor
from proctor.agents.agent import AgentInput
from proctor.env.domain import ToolContext
from proctor.report.html import PAIRED_RATE
from proctor.tasks.models import Identity

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SUPPORT = ROOT / "examples" / "support"


def test_the_tutorial_counts_the_files_it_writes() -> None:
    tutorial = README.split("## Five-minute tutorial", 1)[1].split("\n## ", 1)[0]
    files = set(re.findall(r"^# (myworld/\S+)", tutorial, re.M))
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    assert f"Write {words[len(files)]} files in a folder `myworld/`" in tutorial, files


def test_the_html_report_names_each_intervals_method(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    agent = f"{SUPPORT / 'agents.py'}:scripted"
    for _ in range(2):
        done = proctor("run", str(SUPPORT), "--agent", agent, "--trials", "2", "--store", db, "-q")
        assert done.returncode in (0, 1), done.stderr
        if not (tmp_path / "b.jsonl").exists():
            proctor("export", "latest", "--out", str(tmp_path / "b.jsonl"), "--store", db)
    page = tmp_path / "r.html"
    report = ("report", "latest", "--baseline", str(tmp_path / "b.jsonl"), "--html", str(page))
    assert proctor(*report, "--store", db).returncode == 0
    html = page.read_text()
    assert "(paired t)</th>" not in html
    cells = r'<td class="mono">(\w+)</td>(?:<td[^>]*>[^<]*</td>){4}<td>([^<]+)</td></tr>'
    rows = dict(re.findall(cells, html))
    assert rows["task_success_rate"] == PAIRED_RATE
    others = {m for m, method in rows.items() if method == "paired t"}
    assert others and "task_success_rate" not in others, rows


def test_benchmarks_readme_says_where_ray_comes_from() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    in_dev = any("ray" in dep for dep in extras["dev"])
    assert in_dev and "Ray is not in the `dev` extra" not in text
    assert "Ray is in the `dev` extra" in text


def test_every_tag_slice_is_on_screen_with_all_checks(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    cases = ROOT / "examples" / "kyc" / "tasks" / "cases.yaml"
    agent = f"{ROOT / 'examples' / 'kyc' / 'agents.py'}:hasty"
    done = proctor("run", str(cases), "--agent", agent, "--store", db)
    assert done.returncode in (0, 1), done.stderr
    shown = proctor("show", "latest", "--all-checks", "--store", db).stdout
    for category in ("tag:approve", "tag:request_documents", "tag:escalate"):
        assert f"│ {category} " in shown, category
    assert "stronger tag slices" not in shown
    plain = proctor("show", "latest", "--store", db).stdout
    assert "stronger tag slices: --all-checks or --json" in plain


def test_identity_is_an_object_in_tools_and_a_dict_for_agents_and_the_readme_says_so() -> None:
    # the modules' own annotations (postponed: read as written)
    assert ToolContext.__annotations__["identity"] == Identity.__name__
    assert AgentInput.__annotations__["identity"] == "dict[str, Any]"
    flat = " ".join(README.split())
    assert "`ctx.identity.user`" in flat and '`input.identity["user"]`' in flat
