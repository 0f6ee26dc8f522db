"""The incident example's domain, for the adversarial tasks that attack it.

Examples are not packages, so this module loads `examples/incident/domain.py` by path with
proctor's own loader, which imports a file once per process: a run over both folders
uses one and the same Domain object. The task loader finds this file as
`domains/incident.py` when it walks up from `tasks/`.
"""

from __future__ import annotations

from pathlib import Path

from proctor import load_module_from_path

_source = load_module_from_path(Path(__file__).resolve().parents[2] / "incident" / "domain.py")
incident = _source.incident
