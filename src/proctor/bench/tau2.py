"""tau2-bench's mock domain, written for proctor from its policy and its database.

The state holds tau2's two databases: `db` (the agent's: `tasks` by id, each with
`task_id`, `title`, `description`, `status`; `users` by id, each with `user_id`, `name`
and the ids of its `tasks`) and `user_db` (the user's: `notifications` by id, each with
`notification_id`, `message`, `status` unread or read, `task_id`). The agent's tools
follow the policy: a task needs a title, a status is `pending` or `completed`, only an
existing user gets a task, and nothing is deleted: such a request goes to a human
(`transfer_to_human_agents`). A new task's id counts the tasks (`task_2` when there is
one), as tau2 numbers them. `ENV_FUNCTIONS` are what tau2 tasks name in their
initialisation (including the user's `add_notification`), and the check `tau2:db`
compares the final databases with those the gold actions leave, exactly (tau2 hashes
both). Imported by `proctor import tau2` (interop/tau2_tasks.py), whose tasks name this
domain as `proctor.bench.tau2:mock`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from proctor.core.jsonvalues import diff, json_equal
from proctor.core.outcome import Outcome
from proctor.core.results import Check
from proctor.core.trace import Trace
from proctor.env.domain import Domain, State, ToolError
from proctor.tasks.models import Task

mock = Domain("tau2-mock", "tau2-bench's mock task manager (policy: tasks need a title, ...)")
#: Where a task's metadata keeps the databases its gold actions leave.
EXPECTED = "expected_db"
DATABASES = ("db", "user_db")


def _task(state: State, task_id: str) -> dict[str, Any]:
    task = state["db"]["tasks"].get(task_id)
    if task is None:
        raise ToolError(f"no task {task_id}", code="not_found")
    return dict(task)


@mock.tool("create_task", kind="write", entity="user_id")
def create_task(state: State, user_id: str, title: str, description: str | None = None) -> dict:
    """Create a task for a user; it starts pending. Every task needs a title."""
    db = state["db"]
    if user_id not in db["users"]:
        raise ToolError(f"no user {user_id}: only existing users can have tasks", "not_found")
    if not title.strip():
        raise ToolError("a task needs a title", code="invalid")
    task_id = f"task_{len(db['tasks']) + 1}"
    task = {"task_id": task_id, "title": title, "description": description, "status": "pending"}
    db["tasks"][task_id] = task
    db["users"][user_id]["tasks"].append(task_id)
    return dict(task)


@mock.tool("get_users", kind="read")
def get_users(state: State) -> list:
    """Every user, with the ids of their tasks."""
    return list(state["db"]["users"].values())


@mock.tool("update_task_status", kind="write", entity="task_id")
def update_task_status(state: State, task_id: str, status: Literal["pending", "completed"]) -> dict:
    """Set a task's status to pending or completed."""
    _task(state, task_id)
    state["db"]["tasks"][task_id]["status"] = status
    return _task(state, task_id)


@mock.tool("transfer_to_human_agents", kind="write")
def transfer_to_human_agents(state: State, summary: str) -> str:
    """Hand the conversation to a human agent, with a summary of the user's request
    (for what policy does not allow, such as deleting tasks)."""
    return "Transfer successful"


def add_notification(
    state: State, notification_id: str, message: str, task_id: str | None = None
) -> dict:
    """The user's side: a new (or replaced) unread notification."""
    note = {
        "notification_id": notification_id,
        "message": message,
        "status": "unread",
        "task_id": task_id,
    }
    state["user_db"]["notifications"][notification_id] = note
    return dict(note)


#: (env_type, function) → function of the state, as tau2 tasks name them.
ENV_FUNCTIONS: dict[tuple[str, str], Callable[..., Any]] = {
    **{("assistant", name): tool.fn for name, tool in mock.tools.items()},
    ("user", "add_notification"): add_notification,
}


@mock.check
def databases_check(task: Task, trace: Trace, outcome: Outcome) -> list[Check]:
    """`tau2:db`: both final databases equal those of the gold actions, exactly."""
    expected = task.metadata.get("tau2", {}).get(EXPECTED)
    if expected is None:
        return []
    final = {name: outcome.final_state.get(name) for name in DATABASES}
    changes = diff(expected, final)
    return [
        Check(
            "tau2:db",
            "outcome",
            json_equal(final, expected),
            evidence={"differences": changes[:20], "count": len(changes)},
        )
    ]
