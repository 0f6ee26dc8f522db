"""The JSON Schema of a task file, for editors (`yaml-language-server`) and validators."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from proctor.tasks.models import Task


def task_schema() -> dict[str, Any]:
    """JSON Schema of a task file (one task or a list), for editors and validators."""
    schema = TypeAdapter(Task | list[Task]).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "proctor task file"
    return schema
