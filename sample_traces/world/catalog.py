"""The world's fixed facts: the product catalog and the customers every episode reads from.

Why built once per seed and shared: a product's price, warehouse and bin, or a customer's tier and
dates, must be the same in every call of every episode that mentions them, or results would
contradict each other; so they are drawn from one `random.Random(f"{seed}:world")` up front.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .vocab import ADJECTIVES, CATEGORIES, CITIES, EPOCH, FIRST, LAST, STREET_KINDS, STREETS, WAREHOUSES


@dataclass(frozen=True)
class Product:
    """A catalog entry. Amounts are integer cents, so figures derived from them are exact to the cent."""

    sku: str
    name: str
    category: str
    price_cents: int
    cost_cents: int
    warehouse: str
    bin_location: str
    weight_g: int


@dataclass(frozen=True)
class Customer:
    """A customer profile; `phone` and `referrer` may be missing, as noise mining must tolerate."""

    customer_id: str
    name: str
    email: str
    tier: str
    city: str
    state: str
    zip: str
    street: str
    member_since: datetime
    last_login: datetime
    next_renewal: datetime
    lifetime_orders: int
    lifetime_spend_cents: int
    balance_delta_cents: int
    phone: str | None
    referrer: str | None
    marketing_opt_in: bool


@dataclass
class World:
    """The facts of one seed, with products indexed by SKU (tool results look them up by argument)."""

    seed: int
    products: list[Product]
    customers: list[Customer]
    by_sku: dict[str, Product] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_sku = {p.sku: p for p in self.products}


def build_world(seed: int) -> World:
    """The catalog (288 SKUs) and customers (600): fixed facts every episode reads from."""
    rng = random.Random(f"{seed}:world")
    products: list[Product] = []
    n = 0
    for category, nouns in CATEGORIES.items():
        for noun in nouns:
            for adj in rng.sample(ADJECTIVES, 8):
                price = rng.randint(299, 24999)
                if rng.random() < 0.4:
                    price = price // 100 * 100 + 99  # the usual .99 prices
                products.append(
                    Product(
                        sku=f"SKU-{10000 + n * 7}",
                        name=f"{adj} {noun}",
                        category=category,
                        price_cents=price,
                        cost_cents=max(50, round(price * rng.uniform(0.35, 0.7))),
                        warehouse=rng.choice(WAREHOUSES),
                        bin_location=f"{rng.choice('ABCDEFGH')}-{rng.randint(1, 40):02d}-{rng.randint(1, 9)}",
                        weight_g=rng.randint(80, 14000),
                    )
                )
                n += 1
    customers: list[Customer] = []
    for i in range(600):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        city, state, zipc = rng.choice(CITIES)
        since = datetime(2019, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 6 * 365 * 86400))
        last_login = since + timedelta(seconds=rng.randint(3600, int((EPOCH - since).total_seconds())))
        # Renewal is the next anniversary after a random reference date, so it is always after
        # `member_since` but on either side of `last_login` (an unordered pair, by design).
        years = rng.randint(1, 8)
        renewal = since + timedelta(days=365 * years)
        orders = 0 if rng.random() < 0.18 else rng.randint(1, 60)
        customers.append(
            Customer(
                customer_id=f"CUS-{20000 + i * 13}",
                name=f"{first} {last}",
                email=f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
                tier=rng.choices(("bronze", "silver", "gold"), (5, 3, 2))[0],
                city=city,
                state=state,
                zip=zipc,
                street=f"{rng.randint(1, 9999)} {rng.choice(STREETS)} {rng.choice(STREET_KINDS)}",
                member_since=since,
                last_login=last_login,
                next_renewal=renewal,
                lifetime_orders=orders,
                lifetime_spend_cents=0 if orders == 0 else orders * rng.randint(1500, 30000),
                balance_delta_cents=rng.randint(-5000, 7000),
                phone=f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
                if rng.random() < 0.6
                else None,
                referrer=rng.choice(("friend", "newsletter", "search", "podcast", "partner"))
                + f"-{rng.randint(1, 400)}"
                if rng.random() < 0.5
                else None,
                marketing_opt_in=rng.random() < 0.45,
            )
        )
    return World(seed, products, customers)
