"""A worker process starts with what it runs already imported, and without the parent's
main script: a child would otherwise run that script again (a benchmark, the `proctor`
console script), in every worker. Checked in a fresh interpreter, whose forkserver is
its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json
from pathlib import Path

if __name__ != "__main__":  # this script run again in a child, as __mp_main__
    Path(__file__).with_name("ran-again").write_text(__name__)


def main():
    from proctor.run.process import GRADING_PRELOAD, TRIAL_PRELOAD, Worker, worker_context

    worker = Worker(worker_context(TRIAL_PRELOAD))
    worker.ready()
    imported = "__import__('sys').modules"
    worker.send(eval, f"[m for m in {list(GRADING_PRELOAD)!r} if m not in {imported}]")
    missing = worker.result()
    worker.send(eval, "__import__('sys').modules['__main__'].__name__")
    main_name = worker.result()
    worker.stop()
    print(json.dumps([missing, main_name]))


if __name__ == "__main__":
    main()
"""


def test_a_worker_neither_runs_the_main_script_nor_imports_the_graders(tmp_path: Path) -> None:
    script = tmp_path / "main_script.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "ran-again").exists()
    missing, main_name = json.loads(done.stdout)
    assert missing == []  # every grader module came from the forkserver
    assert main_name != "__mp_main__"
