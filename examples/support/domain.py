"""A tiny order-support world: look orders up, cancel the ones that have not shipped.

Seed 001's support harness, as a world: orders live in `state["orders"]`, keyed by id,
one in each status that matters (A-100 placed, B-200 shipped, D-300 delivered; C-404 does
not exist). A cancellation does what the source's verifyCancellation checks for: the
order is cancelled, by the authenticated user (`cancelled_by`), and the customer gets one
`cancelled` notification (`state["notifications"]`); proctor's ledger records the write,
so a task counts cancellation effects with `{effect: orders.cancel, count: 1}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from proctor import Decision, Domain, State, Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from proctor import Identity

NOT_CANCELLABLE = ("shipped", "delivered")

BASE_STATE: State = {
    "orders": {
        "A-100": {
            "status": "placed",
            "owner": "user-42",
            "tenant": "acme",
            "items": [{"sku": "MUG-01", "qty": 2}],
            "total": 18.5,
        },
        "B-200": {
            "status": "shipped",
            "owner": "user-42",
            "tenant": "acme",
            "items": [{"sku": "LAMP-07", "qty": 1}],
            "total": 49.0,
            "carrier": "ParcelCo",
        },
        "D-300": {
            "status": "delivered",
            "owner": "user-42",
            "tenant": "acme",
            "items": [{"sku": "PEN-10", "qty": 10}],
            "total": 12.0,
        },
    },
    "notifications": [],
}


class Item(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    status: Literal["placed", "shipped", "delivered", "cancelled"]
    owner: str
    tenant: str
    items: list[Item]
    total: float
    carrier: str | None = None
    contact: str | None = None  # the customer's email, when a task gives one
    cancel_reason: str | None = None  # written by orders.cancel
    cancelled_by: str | None = None


class Notification(BaseModel):
    order_id: str
    kind: str
    to: str


class SupportState(BaseModel):
    """The state's shape: `proctor validate` checks tasks' initial_state and paths by it."""

    orders: dict[str, Order] = {}
    notifications: list[Notification] = []


support = Domain(
    "support",
    "Customer support for an online shop: order lookup and cancellation.",
    base_state=BASE_STATE,
    version="1",
    state_model=SupportState,
)


def _order(state: State, order_id: str) -> dict[str, Any]:
    order = state.get("orders", {}).get(order_id)
    if order is None:
        raise ToolError(f"no order with id {order_id!r}", code="not_found")
    return order


@support.tool("orders.get", kind="read", scopes=["orders:read"])
def get_order(state: State, order_id: str) -> dict[str, Any]:
    """Look up one order by id: status, items, total and owner."""
    return {"order_id": order_id, **_order(state, order_id)}


@support.tool("orders.cancel", kind="write", scopes=["orders:write"], entity="order_id")
def cancel_order(state: State, order_id: str, reason: str, ctx: ToolContext) -> dict[str, Any]:
    """Cancel an order that has not shipped yet and notify its customer. `reason` is a short
    note, e.g. "customer_request". Shipped or delivered orders cannot be cancelled (error
    `conflict`)."""
    order = _order(state, order_id)
    if order["status"] in NOT_CANCELLABLE:
        raise ToolError(
            f"order {order_id} is {order['status']} and cannot be cancelled", code="conflict"
        )
    if order["status"] == "cancelled":
        raise ToolError(f"order {order_id} is already cancelled", code="conflict")
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["cancelled_by"] = ctx.identity.user
    notice = {"order_id": order_id, "kind": "cancelled", "to": order["owner"]}
    state.setdefault("notifications", []).append(notice)
    return {"order_id": order_id, "status": "cancelled"}


@support.authorizer
def own_tenant_only(identity: Identity, tool: Tool, args: dict[str, Any], state: State) -> Decision:
    """Orders of another tenant are out of reach; unknown ids pass so the tool says not_found."""
    order = state.get("orders", {}).get(args.get("order_id"))
    if order is None or order.get("tenant") == identity.tenant:
        return Decision(True, "own tenant or unknown order", "tenant")
    return Decision(False, f"order {args.get('order_id')} belongs to another tenant", "tenant")
