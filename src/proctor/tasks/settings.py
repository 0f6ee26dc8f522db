"""A suite's own settings: `suite.yaml` beside a suite's `tasks/` folder.

What every task of a suite shares and would otherwise repeat: today its `language`
(BCP 47), the default of each task that sets none. The default is written into the task
as it loads (tasks/loader.py), so the task's digest holds the language it is read in,
and a task's own `language:` wins. Problems name file, line and field, like task files
(docs/architecture.md, Reading).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proctor.core.documents import read_model
from proctor.tasks.models import LANGUAGE_TAG

#: The settings file's name, in a suite's root folder (the one holding `tasks/`).
SETTINGS_FILE = "suite.yaml"


class SuiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The language of every task that names none (BCP 47).
    language: str | None = Field(default=None, pattern=LANGUAGE_TAG)

    def task_defaults(self) -> dict[str, Any]:
        """The task fields these settings give a task that sets none of them."""
        return self.model_dump(exclude_none=True)


def load_settings(root: Path) -> SuiteSettings:
    """The settings in `root`'s `suite.yaml`; none when it has no such file."""
    path = root / SETTINGS_FILE
    if not path.is_file():
        return SuiteSettings()
    return read_model(path, SuiteSettings.model_validate, "suite settings are a mapping")
