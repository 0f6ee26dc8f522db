"""Task files: the task models, loading with file:line errors, predicates, JSON Schema."""

from proctor.tasks.loader import LoadedTask, load_faults, load_task_file
from proctor.tasks.models import (
    AnswerExpect,
    AnyOf,
    Budget,
    CallPattern,
    EffectAssertion,
    Expectations,
    Fault,
    ForbiddenCall,
    Identity,
    PathAssertion,
    SafetyExpect,
    Task,
    TrajectoryExpect,
)
from proctor.tasks.schema import task_schema

__all__ = [
    "AnswerExpect",
    "AnyOf",
    "Budget",
    "CallPattern",
    "EffectAssertion",
    "Expectations",
    "Fault",
    "ForbiddenCall",
    "Identity",
    "LoadedTask",
    "PathAssertion",
    "SafetyExpect",
    "Task",
    "TrajectoryExpect",
    "load_faults",
    "load_task_file",
    "task_schema",
]
