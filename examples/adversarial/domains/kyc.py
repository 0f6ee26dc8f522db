"""The KYC example's domain (the plain `kyc` variant), for the adversarial tasks.

Loaded by path from `examples/kyc/domain.py` with proctor's own loader (one import per
process, so a run over both folders shares the Domain object).
"""

from __future__ import annotations

from pathlib import Path

from proctor import load_module_from_path

_source = load_module_from_path(Path(__file__).resolve().parents[2] / "kyc" / "domain.py")
kyc = _source.kyc
