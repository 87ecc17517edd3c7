"""The planted invariants (what mining must find) and the noise fields (what it must not turn into rules).

Why they are listed by hand rather than read off the data: they are the specification the tool
results were written to satisfy, so a test can re-check each one against the generated files with
plain Python (tests/sample_traces/), and a miner's output can be scored against them. They are written to
`planted.json` in rule-path notation: result patterns such as `/items/*/price`, argument patterns
prefixed `$args`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .vocab import (
    CARRIERS,
    CATEGORIES,
    CITIES,
    CURRENCIES,
    LEGACY_BIN_TASK,
    ORDER_STATUSES,
    RARE_CARRIER_TASK,
    REFUND_REASONS,
    SERVICES,
    TAX_BP,
    WAREHOUSES,
)

Rule = dict[str, Any]
ARGS = "$args"
INVENTORY_TOOLS = ("lookup_inventory", "query_warehouse", "get_stock_by_sku")


def _rule(tool: str, code: str, paths: Iterable[str], params: dict[str, Any] | None = None) -> Rule:
    return {"tool": tool, "code": code, "paths": list(paths), "params": params or {}}


def _required(tool: str, *paths: str) -> list[Rule]:
    return [_rule(tool, "REQUIRED", [p]) for p in paths]


def _types(tool: str, **kinds: str) -> list[Rule]:
    """`_types(t, total="number")`; nested paths are passed as `{"/items/*/price": "number"}` via **."""
    return [_rule(tool, "TYPE", [p], {"kind": k}) for p, k in kinds.items()]


def _each(tool: str, code: str, *paths: str) -> list[Rule]:
    return [_rule(tool, code, [p]) for p in paths]


def _domain(tool: str, path: str, values: Iterable[str]) -> Rule:
    return _rule(tool, "DOMAIN", [path], {"values": sorted(values)})


def _echo(tool: str, result_path: str, arg: str) -> Rule:
    return _rule(tool, "ECHO", [result_path, ARGS + arg])


def _order(tool: str, earlier: str, later: str) -> Rule:
    return _rule(tool, "DATE_ORDER", [earlier, later])


def _linear(tool: str, coef: list[int], *paths: str) -> Rule:
    """A = Σ coef_i·X_i, stated with the X_i sorted and all-positive coefficients where the relation
    allows (`on_hand = available + reserved`, not `available = on_hand - reserved`). `terms` gives the
    same relation orientation-free: Σ terms[p]·value(p) = 0 with the left side's coefficient 1, so a
    test can compare it with a miner's rule stated in any rearrangement."""
    r = _rule(tool, "RELATION", paths, {"form": "linear", "coef": coef})
    r["terms"] = {paths[0]: 1, **{x: -c for x, c in zip(paths[1:], coef, strict=True)}}
    return r


def _product(tool: str, *paths: str) -> Rule:
    return _rule(tool, "RELATION", paths, {"form": "product"})


def _sum_over(tool: str, total: str, over: str) -> Rule:
    return _rule(tool, "RELATION", [total, over], {"form": "sum_over"})


def _when(tool: str, disc: str, path: str, then: str, *, values: Iterable[str] = (), sign: str = "") -> Rule:
    """CONDITIONAL: `path` is `then` whenever `disc` is one of `values` (or a number of sign `sign`).
    The miner states the values whose groups have support in its checker's data, so a miner's rule
    matches when it has the same paths and `then` and its values are among these."""
    when: dict[str, Any] = {"sign": [sign]} if sign else {"in": sorted(values)}
    return _rule(tool, "CONDITIONAL", [path, disc], {"then": then, "when": when})


def planted_rules() -> list[Rule]:
    """Every invariant the generator guarantees in clean results, in rule-path notation."""
    rules: list[Rule] = []
    for t in INVENTORY_TOOLS:
        req = ["/sku", "/warehouse", "/on_hand", "/reserved", "/available", "/status", "/unit_cost"]
        req += ["/last_counted_at"] if t == "lookup_inventory" else ["/bin_location", "/last_counted_at"]
        rules += _required(t, *req)
        rules += _types(
            t,
            **{
                "/sku": "string",
                "/on_hand": "int",
                "/reserved": "int",
                "/available": "int",
                "/unit_cost": "number",
            },
        )
        rules += _each(t, "NONNEG", "/on_hand", "/reserved", "/available")
        rules += _each(t, "POSITIVE", "/unit_cost")
        rules += [
            _domain(t, "/warehouse", WAREHOUSES),
            _domain(t, "/status", ("in_stock", "low_stock", "out_of_stock")),
        ]
        rules += [_echo(t, "/sku", "/sku")]
        if t == "query_warehouse":
            rules += [_echo(t, "/warehouse", "/warehouse")]
        rules += [_order(t, "/last_counted_at", "/restock_eta")]
        rules += [_linear(t, [1, 1], "/on_hand", "/available", "/reserved")]
    t = "get_order"
    rules += _required(
        t, "/order_id", "/customer_id", "/status", "/items", "/items/*/sku", "/items/*/name", "/items/*/quantity",
        "/items/*/unit_price", "/items/*/line_total", "/subtotal", "/tax", "/total", "/currency",
        "/shipping_address", "/shipping_address/city", "/shipping_address/state", "/shipping_address/zip",
        "/created_at",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/order_id": "string", "/items": "array", "/shipping_address": "object", "/items/*/quantity": "int",
            "/items/*/unit_price": "number", "/items/*/line_total": "number", "/subtotal": "number",
            "/tax": "number", "/total": "number",
        },
    )  # fmt: skip
    rules += _each(
        t,
        "POSITIVE",
        "/items/*/quantity",
        "/items/*/unit_price",
        "/items/*/line_total",
        "/subtotal",
        "/total",
    )
    rules += _each(t, "NONNEG", "/tax")
    rules += [_domain(t, "/status", ORDER_STATUSES), _echo(t, "/order_id", "/order_id")]
    rules += [_order(t, "/created_at", "/shipped_at"), _order(t, "/shipped_at", "/delivered_at")]
    # an order carries its shipping and delivery times exactly once it has shipped / been delivered
    rules += [
        _when(t, "/status", "/delivered_at", "present", values=("delivered",)),
        _when(t, "/status", "/shipped_at", "present", values=("delivered", "shipped")),
        _when(
            t, "/status", "/delivered_at", "absent", values=("cancelled", "pending", "processing", "shipped")
        ),
    ]
    rules += [
        _product(t, "/items/*/line_total", "/items/*/quantity", "/items/*/unit_price"),
        _sum_over(t, "/subtotal", "/items/*/line_total"),
        _linear(t, [1, 1], "/total", "/subtotal", "/tax"),
    ]
    t = "list_shipments"
    rules += _required(
        t, "/order_id", "/count", "/shipments", "/shipments/*/shipment_id", "/shipments/*/carrier",
        "/shipments/*/tracking_number", "/shipments/*/packages", "/shipments/*/weight_kg", "/shipments/*/status",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/count": "int",
            "/shipments": "array",
            "/shipments/*/packages": "int",
            "/shipments/*/weight_kg": "number",
        },
    )
    rules += _each(t, "POSITIVE", "/shipments/*/packages", "/shipments/*/weight_kg")
    rules += _each(t, "NONNEG", "/count")
    rules += [_domain(t, "/shipments/*/status", ("delivered", "in_transit", "label_created"))]
    rules += [_echo(t, "/order_id", "/order_id")]
    rules += [
        _when(t, "/count", "/shipments", "nonempty", sign="positive"),
        _when(t, "/count", "/shipments", "empty", sign="zero"),
    ]
    t = "get_customer"
    rules += _required(
        t, "/customer_id", "/name", "/email", "/tier", "/member_since", "/last_login", "/next_renewal",
        "/lifetime_orders", "/lifetime_spend", "/balance_delta", "/referrer", "/marketing_opt_in",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/name": "string", "/email": "string", "/lifetime_orders": "int", "/lifetime_spend": "number",
            "/balance_delta": "number", "/marketing_opt_in": "bool",
        },
    )  # fmt: skip
    rules += _each(t, "NONNEG", "/lifetime_orders", "/lifetime_spend")
    rules += [_domain(t, "/tier", ("bronze", "gold", "silver")), _echo(t, "/customer_id", "/customer_id")]
    rules += [_order(t, "/member_since", "/last_login"), _order(t, "/member_since", "/next_renewal")]
    t = "search_products"
    rules += _required(
        t, "/query", "/total_hits", "/results", "/took_ms", "/results/*/sku", "/results/*/name",
        "/results/*/category", "/results/*/price", "/results/*/in_stock",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/query": "string", "/total_hits": "int", "/took_ms": "int", "/results": "array",
            "/results/*/price": "number", "/results/*/in_stock": "bool",
        },
    )  # fmt: skip
    rules += _each(t, "POSITIVE", "/results/*/price", "/took_ms")
    rules += _each(t, "NONNEG", "/total_hits")
    rules += [_domain(t, "/results/*/category", CATEGORIES), _echo(t, "/query", "/query")]
    rules += [_when(t, "/total_hits", "/results", "nonempty", sign="positive")]
    t = "quote_shipping"
    rules += _required(
        t, "/quote_id", "/sku", "/service", "/carrier", "/unit_rate", "/freight", "/taxes", "/fees", "/total",
        "/currency", "/estimated_days", "/quoted_at", "/valid_until",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/quote_id": "string", "/unit_rate": "number", "/freight": "number", "/fees": "number",
            "/total": "number", "/estimated_days": "int",
        },
    )  # fmt: skip
    rules += _each(t, "POSITIVE", "/unit_rate", "/freight", "/fees", "/total", "/estimated_days")
    rules += _each(t, "NONNEG", "/taxes")
    rules += [_domain(t, "/service", SERVICES), _domain(t, "/carrier", CARRIERS)]
    rules += [_echo(t, "/sku", "/sku"), _echo(t, "/service", "/service")]
    rules += [_order(t, "/quoted_at", "/valid_until")]
    rules += [
        _product(t, "/freight", "$args/quantity", "/unit_rate"),
        _linear(t, [1, 1, 1], "/total", "/fees", "/freight", "/taxes"),
    ]
    t = "create_invoice"
    rules += _required(
        t, "/invoice_id", "/order_id", "/customer_id", "/currency", "/status", "/lines", "/lines/*/sku",
        "/lines/*/quantity", "/lines/*/unit_price_cents", "/lines/*/line_total_cents", "/subtotal_cents",
        "/tax_cents", "/total_cents", "/paid_cents", "/amount_due_cents", "/issued_at", "/due_at",
    )  # fmt: skip
    rules += _types(
        t,
        **{
            "/invoice_id": "string", "/lines": "array", "/lines/*/quantity": "int", "/lines/*/unit_price_cents": "int",
            "/lines/*/line_total_cents": "int", "/subtotal_cents": "int", "/tax_cents": "int",
            "/total_cents": "int", "/paid_cents": "int", "/amount_due_cents": "int",
        },
    )  # fmt: skip
    rules += _each(
        t, "POSITIVE", "/lines/*/quantity", "/lines/*/unit_price_cents", "/lines/*/line_total_cents",
        "/subtotal_cents", "/total_cents",
    )  # fmt: skip
    rules += _each(t, "NONNEG", "/tax_cents", "/paid_cents", "/amount_due_cents")
    rules += [_domain(t, "/currency", CURRENCIES), _domain(t, "/status", ("draft", "issued", "paid"))]
    rules += [_echo(t, "/order_id", "/order_id"), _echo(t, "/customer_id", "/customer_id")]
    rules += [_echo(t, "/currency", "/currency"), _order(t, "/issued_at", "/due_at")]
    rules += [
        _product(t, "/lines/*/line_total_cents", "/lines/*/quantity", "/lines/*/unit_price_cents"),
        _sum_over(t, "/subtotal_cents", "/lines/*/line_total_cents"),
        _linear(t, [1, 1], "/total_cents", "/subtotal_cents", "/tax_cents"),
        _linear(t, [1, 1], "/total_cents", "/amount_due_cents", "/paid_cents"),
    ]
    t = "refund_order"
    rules += _required(
        t, "/refund_id", "/order_id", "/amount", "/reason", "/status", "/method", "/requested_at"
    )
    rules += _types(t, **{"/refund_id": "string", "/amount": "number"})
    rules += _each(t, "POSITIVE", "/amount")
    rules += [
        _domain(t, "/reason", REFUND_REASONS),
        _domain(t, "/status", ("approved", "pending_review", "rejected")),
        _domain(t, "/method", ("original_payment", "store_credit")),
    ]
    rules += [
        _echo(t, "/order_id", "/order_id"),
        _echo(t, "/amount", "/amount"),
        _echo(t, "/reason", "/reason"),
    ]
    rules += [_order(t, "/requested_at", "/processed_at")]
    # a refund is processed (approved or rejected) or still pending review, never both
    rules += [
        _when(t, "/status", "/processed_at", "present", values=("approved", "rejected")),
        _when(t, "/status", "/processed_at", "absent", values=("pending_review",)),
    ]
    return rules


def _noise(
    tool: str, path: str, codes: list[str], why: str, *, with_: str | None = None, crossfit: bool = False
) -> Rule:
    n: Rule = {"tool": tool, "path": path, "codes": codes, "why": why}
    if with_ is not None:
        n["with"] = with_
    n["crossfit"] = crossfit
    return n


def noise_fields() -> list[Rule]:
    """Fields that look rule-like but must NOT become rules of the named codes.

    `with` names the other side of a pair code (ECHO, DATE_ORDER): no rule of that code may relate
    `path` and `with`, in either order. `crossfit: true` marks the deliberate single-task exceptions:
    not a rule on the whole corpus, but a rule in the fold checkers that never saw that task.
    """
    opt = "optional: present in about 60% of results"
    text = "free text with hundreds of distinct values"
    uid = "an id, unique per call"
    many_ids = "hundreds of distinct ids"
    zero = "often exactly 0: NONNEG holds, POSITIVE must not be claimed"
    n: list[Rule] = []
    for t in INVENTORY_TOOLS:
        n += [_noise(t, "/restock_eta", ["REQUIRED"], opt)]
        n += [_noise(t, "/note", ["REQUIRED", "DOMAIN"], "optional (about 30%) " + text)]
        n += [_noise(t, p, ["POSITIVE"], zero) for p in ("/on_hand", "/reserved", "/available")]
    n += [
        _noise(
            "lookup_inventory", "/bin_location", ["REQUIRED"],
            f"absent in every result of one task ({LEGACY_BIN_TASK}, a legacy warehouse system); a fold "
            "checker mined without that task learns REQUIRED and fires on it",
            crossfit=True,
        ),
        _noise("get_order", "/shipped_at", ["REQUIRED"], "present only once the order has shipped"),
        _noise("get_order", "/delivered_at", ["REQUIRED"], "present only once the order is delivered"),
        _noise("get_order", "/delivery_instructions", ["REQUIRED", "DOMAIN"], opt + "; " + text),
        _noise("get_order", "/tax", ["POSITIVE"], "zero in the five zero-sales-tax states: " + zero),
        _noise("get_order", "/shipping_address/city", ["DOMAIN"], f"{len(CITIES)} cities: too many distinct values"),
        _noise("get_order", "/shipping_address/state", ["DOMAIN"], f"{len(TAX_BP)} states: too many distinct values"),
        _noise("get_order", "/items/*/name", ["DOMAIN"], "product names: hundreds of distinct values"),
        _noise("get_order", "/customer_id", ["DOMAIN"], "hundreds of distinct ids"),
        _noise("list_shipments", "/count", ["POSITIVE"], "0 for pending and cancelled orders: " + zero),
        _noise(
            "list_shipments", "/shipments/*/carrier", ["DOMAIN"],
            f"dhl/fedex/ups/usps everywhere, plus 'ontrac' in one task only ({RARE_CARRIER_TASK}); a fold "
            "checker mined without that task learns the 4-value domain and fires on it",
            crossfit=True,
        ),
        _noise("list_shipments", "/shipments/*/tracking_number", ["DOMAIN"], "one per shipment: " + many_ids),
        _noise("list_shipments", "/shipments/*/shipment_id", ["DOMAIN"], "one per shipment: " + many_ids),
        _noise("get_customer", "/phone", ["REQUIRED"], opt),
        _noise("get_customer", "/referrer", ["TYPE", "DOMAIN"], "null in about half the results; many values"),
        _noise("get_customer", "/balance_delta", ["NONNEG", "POSITIVE"], "a signed amount, negative in ~40%"),
        _noise("get_customer", "/lifetime_orders", ["POSITIVE"], "0 for new customers: " + zero),
        _noise("get_customer", "/lifetime_spend", ["POSITIVE"], "0 for new customers: " + zero),
        _noise("get_customer", "/name", ["DOMAIN"], "hundreds of distinct names"),
        _noise("get_customer", "/email", ["DOMAIN"], "hundreds of distinct addresses"),
        _noise(
            "get_customer", "/last_login", ["DATE_ORDER"],
            "renewal and last login are unrelated: each comes first in a large share of results",
            with_="/next_renewal",
        ),
        _noise("search_products", "/results/*/rating", ["TYPE"], "null for unrated products (about 25%)"),
        _noise("search_products", "/next_cursor", ["TYPE"], "null on the last page"),
        _noise("search_products", "/total_hits", ["POSITIVE"], "0 when nothing matches: " + zero),
        _noise("search_products", "/query", ["DOMAIN"], "free search phrases: hundreds of distinct values"),
        _noise("search_products", "/results/*/name", ["DOMAIN"], "product names: hundreds of distinct values"),
        _noise(
            "quote_shipping", "/currency", ["ECHO"],
            "always 'USD' in both the arguments and the result: equal constants, not an echo",
            with_="$args/currency",
        ),
        _noise("quote_shipping", "/quote_id", ["DOMAIN"], uid),
        _noise("quote_shipping", "/taxes", ["POSITIVE"], "zero for zero-tax destinations: " + zero),
        _noise("create_invoice", "/notes", ["REQUIRED", "DOMAIN"], opt + "; " + text),
        _noise("create_invoice", "/invoice_id", ["DOMAIN"], uid),
        _noise("create_invoice", "/tax_cents", ["POSITIVE"], zero),
        _noise("create_invoice", "/paid_cents", ["POSITIVE"], "0 until paid: " + zero),
        _noise("create_invoice", "/amount_due_cents", ["POSITIVE"], "0 once paid: " + zero),
        _noise("refund_order", "/processed_at", ["REQUIRED"], "absent while a refund is pending review"),
        _noise("refund_order", "/refund_id", ["DOMAIN"], uid),
    ]  # fmt: skip
    return n


#: How `planted.json` writes rules and noise fields (its `notation` member, for readers of the file).
NOTATION = {
    "paths": "result patterns as RFC 6901 pointers with '*' for any array index ('' = whole result); "
    "argument patterns prefixed '$args' (e.g. '$args/sku')",
    "TYPE": "params.kind in int|number|string|bool|object|array ('number' for any float field)",
    "DOMAIN": "params.values sorted",
    "ECHO": "paths [result path, '$args/...']",
    "DATE_ORDER": "paths [earlier, later]",
    "RELATION": "paths [A, X1, ...]; linear: A = sum(coef[i] * X_i); product: A = X1 * X2; "
    "sum_over: A = sum of X1 over '*'; linear relations also carry 'terms' {path: c} meaning "
    "sum(c * value) = 0 with A's c = 1, to compare with any rearrangement",
    "noise": "no rule of any code in 'codes' on 'path' (for ECHO/DATE_ORDER: relating 'path' and "
    "'with', in either order); crossfit marks single-task exceptions that fold checkers do learn",
}
