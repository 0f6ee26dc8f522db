"""Task files: models, loading with file:line errors, suites, JSON Schema."""

from proctor.spec.errors import SpecError
from proctor.spec.loader import load_task_file
from proctor.spec.models import (
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
from proctor.spec.suite import Suite, SuiteTask, load_suite, task_schema

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
    "PathAssertion",
    "SafetyExpect",
    "SpecError",
    "Suite",
    "SuiteTask",
    "Task",
    "TrajectoryExpect",
    "load_suite",
    "load_task_file",
    "task_schema",
]
