"""The core never imports a framework, the openai client or OpenTelemetry: only an
adapter module, when it runs, does. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

OPTIONAL = (
    "openai",
    "pydantic_ai",
    "langchain_core",
    "langgraph",
    "agents",
    "smolagents",
    "opentelemetry",
)

PROBE = """
import json, sys
import proctor, proctor.run, proctor.cli, proctor.interop
import proctor.traces.replay, proctor.interop.redact, proctor.traces.grading
import proctor.agents.chat, proctor.agents.bridge
import proctor.agents.adapters.pydantic_ai, proctor.agents.adapters.langgraph
import proctor.agents.adapters.openai_agents, proctor.agents.adapters.smolagents
import proctor.interop.otel_export
from proctor.agents import load_agent
import os
os.environ["PROCTOR_CHAT_BASE_URL"] = "http://127.0.0.1:9/v1"
load_agent("chat:some-model")
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_importing_proctor_loads_no_optional_package() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert loaded & set(OPTIONAL) == set()
    assert "proctor" in loaded
