"""SQLAlchemy 2.0 ORM queries against shardgate and a reference server.

Run by TestORMSQLAlchemy (internal/proxy/orm_sqlalchemy_test.go) with the
Python environment scripts/install-deps.sh makes:

    sqlalchemy_orm.py PROXY_URL REFERENCE_URL [implicit|begin]

implicit (the default) runs every query as SQLAlchemy does out of the box:
PyMySQL, like every Python DB-API driver, opens transactions implicitly
(autocommit off, no BEGIN sent). begin runs the writes with SQLAlchemy's
recipe for a driver whose transactions should start with BEGIN: the
connection in autocommit mode and BEGIN sent when the session's transaction
starts.

Both URLs name the same schema (internal/proxy/orm_test.go: ormDDL,
ormData): through shardgate, sharded; on the reference, in one database.
Every query below runs through shardgate first, then on the reference (a
write refused by shardgate does not run on the reference, so that both keep
the same rows). For each query one JSON line is printed on stdout:

    {"query": NAME, "order": "unordered"|"top-ordered"|"ordered",
     "fold": [FIELD...], "write": BOOL,
     "proxy": OUTCOME, "ref": OUTCOME or null}

where OUTCOME is {"result": ANSWER, "sql": [STATEMENT...]} or
{"error": [CODE, MESSAGE], "statement": FAILED STATEMENT, "sql": [...]}.
ANSWER is the ORM objects as plain JSON: their columns and the
relationships that were loaded. A read that shardgate answered also has
"replay": each SELECT it sent, run again through the driver on both sides,
{"sql": STATEMENT, "proxy": ROWS, "ref": ROWS} with ROWS {"rows": [...]} or
{"error": [CODE, MESSAGE]}: the ORM may keep only part of an answer. The Go test compares the answers and checks
the refusals against its list of expected ones; this script judges nothing.
"""

import datetime
import decimal
import json
import sys
from typing import List, Optional

from sqlalchemy import (
    ForeignKey,
    String,
    create_engine,
    delete,
    desc,
    distinct,
    event,
    exists,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    contains_eager,
    joinedload,
    mapped_column,
    relationship,
    selectinload,
)
from sqlalchemy.types import DECIMAL, DateTime


class Base(DeclarativeBase):
    pass


class Category(Base):
    __tablename__ = "categories"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(40))
    parent_id: Mapped[Optional[int]]
    products: Mapped[List["Product"]] = relationship(back_populates="category")


class Product(Base):
    __tablename__ = "products"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    sku: Mapped[str] = mapped_column(String(20))
    name: Mapped[str] = mapped_column(String(60))
    category_id: Mapped[Optional[int]] = mapped_column(ForeignKey("categories.id"))
    price: Mapped[decimal.Decimal] = mapped_column(DECIMAL(10, 2))
    active: Mapped[bool]
    category: Mapped[Optional[Category]] = relationship(back_populates="products")
    order_items: Mapped[List["OrderItem"]] = relationship(viewonly=True)


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(primary_key=True)  # AUTO_INCREMENT: shardgate's sequence
    name: Mapped[str] = mapped_column(String(60))
    email: Mapped[Optional[str]] = mapped_column(String(80))
    country: Mapped[Optional[str]] = mapped_column(String(2))
    joined_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    orders: Mapped[List["Order"]] = relationship(back_populates="customer", cascade="all, delete-orphan")


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    status: Mapped[str] = mapped_column(String(20))
    total: Mapped[decimal.Decimal] = mapped_column(DECIMAL(12, 2))
    placed_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    note: Mapped[Optional[str]] = mapped_column(String(100))
    customer: Mapped[Customer] = relationship(back_populates="orders")
    items: Mapped[List["OrderItem"]] = relationship(back_populates="order", cascade="all, delete-orphan")


class OrderItem(Base):
    __tablename__ = "order_items"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"))
    qty: Mapped[int]
    unit_price: Mapped[decimal.Decimal] = mapped_column(DECIMAL(10, 2))
    order: Mapped[Order] = relationship(back_populates="items")
    product: Mapped[Product] = relationship()


# ---------------------------------------------------------------------------
# Answers as plain JSON


def plain(x, path=()):
    """x as JSON-able values: ORM objects as their columns and loaded
    relationships (an object already on the path as its class and id)."""
    if isinstance(x, Base):
        key = (type(x).__name__, x.id)
        if key in path:
            return {"ref": "%s#%s" % key}
        st = inspect(x)
        out = {}
        for attr in st.mapper.column_attrs:
            out[attr.key] = plain(getattr(x, attr.key))
        for rel in st.mapper.relationships:
            if rel.key not in st.unloaded:
                out[rel.key] = plain(getattr(x, rel.key), path + (key,))
        return out
    if hasattr(x, "_mapping"):  # a Row
        return {k: plain(v, path) for k, v in x._mapping.items()}
    if isinstance(x, dict):
        return {str(k): plain(v, path) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, path) for v in x]
    if isinstance(x, decimal.Decimal):
        return str(x)
    if isinstance(x, (datetime.datetime, datetime.date)):
        return x.isoformat()
    return x


# ---------------------------------------------------------------------------
# The queries: (name, order, fold, write, function of a Session)

QUERIES = []


def query(order="unordered", fold=(), write=False):
    def add(f):
        QUERIES.append((f.__name__.replace("_", "-"), order, list(fold), write, f))
        return f

    return add


def rows(s, stmt):
    return [r for r in s.execute(stmt)]


# Loading by key, filters, ordering.


@query("ordered")
def get(s):
    return s.get(Customer, 17)


@query("ordered")
def get_missing(s):
    return s.get(Customer, 9999)


@query("ordered")
def select_where_order_by(s):
    return s.scalars(select(Customer).where(Customer.country == "GB").order_by(Customer.name, Customer.id)).all()


@query("ordered")
def select_first(s):
    return s.scalars(select(Customer).order_by(Customer.joined_at.desc(), Customer.id).limit(1)).first()


@query()
def select_in_pks(s):
    return s.scalars(select(Customer).where(Customer.id.in_([3, 9, 27, 38]))).all()


@query()
def legacy_filter_by(s):
    return s.query(Order).filter_by(status="paid", customer_id=5).all()


@query("ordered")
def legacy_first(s):
    return s.query(Customer).order_by(Customer.id.desc()).first()


@query("ordered")
def filter_or_null(s):
    return s.scalars(
        select(Customer).where((Customer.email.is_(None)) | (Customer.country.is_(None))).order_by(Customer.joined_at, Customer.id)
    ).all()


@query("ordered")
def filter_like_ci(s):
    return s.scalars(select(Customer).where(Customer.name.like("al%")).order_by(Customer.name, Customer.id)).all()


# Lazy loading.


@query()
def lazy_load_one_to_many(s):
    c = s.get(Customer, 21)
    c.orders  # noqa: B018 (loads them)
    return c


@query()
def lazy_load_many_to_one(s):
    o = s.get(Order, 1077)
    o.customer  # noqa: B018
    o.items  # noqa: B018
    return o


# Eager loading: joined.


@query("top-ordered")
def joinedload_many_to_one(s):
    return s.scalars(select(Order).options(joinedload(Order.customer)).where(Order.status == "shipped").order_by(Order.id)).all()


@query("top-ordered")
def joinedload_one_to_many(s):
    return s.scalars(select(Customer).options(joinedload(Customer.orders)).order_by(Customer.id)).unique().all()


@query("top-ordered")
def joinedload_limit(s):
    stmt = select(Customer).options(joinedload(Customer.orders)).order_by(Customer.name, Customer.id).limit(5).offset(5)
    return s.scalars(stmt).unique().all()


@query("top-ordered")
def joinedload_other_rule(s):
    stmt = (
        select(Order)
        .options(joinedload(Order.items).joinedload(OrderItem.product))
        .where(Order.customer_id.in_([2, 11]))
        .order_by(Order.id)
    )
    return s.scalars(stmt).unique().all()


@query("top-ordered")
def joinedload_reference(s):
    stmt = select(OrderItem).options(joinedload(OrderItem.product)).where(OrderItem.qty >= 5).order_by(OrderItem.id)
    return s.scalars(stmt).all()


@query("top-ordered")
def joinedload_reference_unsharded(s):
    stmt = (
        select(OrderItem)
        .options(joinedload(OrderItem.product).joinedload(Product.category))
        .where(OrderItem.qty >= 5)
        .order_by(OrderItem.id)
    )
    return s.scalars(stmt).all()


@query("top-ordered")
def contains_eager_filter(s):
    stmt = (
        select(Order)
        .join(Order.customer)
        .options(contains_eager(Order.customer))
        .where(Customer.country == "DE")
        .order_by(Order.id)
    )
    return s.scalars(stmt).all()


# Eager loading: selectin.


@query("top-ordered")
def selectinload_one_to_many(s):
    return s.scalars(select(Customer).options(selectinload(Customer.orders)).where(Customer.country == "FR").order_by(Customer.id)).all()


@query("top-ordered")
def selectinload_nested(s):
    stmt = (
        select(Customer)
        .options(selectinload(Customer.orders).selectinload(Order.items).joinedload(OrderItem.product))
        .where(Customer.id.between(5, 14))
        .order_by(Customer.id)
    )
    return s.scalars(stmt).all()


@query("top-ordered")
def selectinload_many_to_one(s):
    return s.scalars(select(Order).options(selectinload(Order.customer)).where(Order.total > 300).order_by(Order.id)).all()


@query("top-ordered")
def selectinload_unsharded_reference(s):
    return s.scalars(select(Category).options(selectinload(Category.products)).order_by(Category.id)).all()


# Relationship filters.


@query("ordered")
def any_one_to_many(s):
    return s.scalars(select(Customer).where(Customer.orders.any(Order.status == "cancelled")).order_by(Customer.id)).all()


@query("ordered")
def not_any(s):
    return s.scalars(select(Customer).where(~Customer.orders.any()).order_by(Customer.id)).all()


@query("ordered")
def has_many_to_one(s):
    return s.scalars(select(Order).where(Order.customer.has(Customer.country == "DE")).order_by(Order.id)).all()


@query("ordered")
def any_other_rule(s):
    return s.scalars(select(Order).where(Order.items.any(OrderItem.qty >= 5)).order_by(Order.id)).all()


@query("ordered")
def has_other_rule(s):
    return s.scalars(select(OrderItem).where(OrderItem.order.has(Order.status == "cancelled")).order_by(OrderItem.id)).all()


@query("ordered")
def has_reference(s):
    return s.scalars(select(OrderItem).where(OrderItem.product.has(Product.price > 60)).order_by(OrderItem.id)).all()


@query("ordered")
def has_unsharded(s):
    return s.scalars(select(Product).where(Product.category.has(Category.name == "Books")).order_by(Product.id)).all()


# A reference table filtered by a subquery on a sharded one ("products that
# were ordered", "never ordered").


@query("ordered")
def reference_any_sharded(s):
    return s.scalars(select(Product).where(Product.order_items.any(OrderItem.qty == 6)).order_by(Product.id)).all()


@query("ordered")
def reference_not_any_sharded(s):
    return s.scalars(select(Product).where(~Product.order_items.any(OrderItem.qty > 1)).order_by(Product.id)).all()


@query("ordered")
def reference_in_sharded(s):
    return s.scalars(
        select(Product).where(Product.id.in_(select(OrderItem.product_id).where(OrderItem.qty > 5))).order_by(Product.id)
    ).all()


# Counting.


@query()
def legacy_count(s):
    return s.query(Customer).filter(Customer.country == "GB").count()


@query()
def legacy_count_all(s):
    return s.query(Order).count()


@query()
def select_count(s):
    return s.scalar(select(func.count()).select_from(Customer))


@query()
def select_count_where(s):
    return s.scalar(select(func.count(Order.id)).where(Order.status == "paid"))


@query()
def count_subquery(s):
    return s.scalar(select(func.count()).select_from(select(Order).where(Order.total > 100).subquery()))


@query()
def count_distinct(s):
    return s.scalar(select(func.count(distinct(Order.customer_id))))


@query()
def count_join(s):
    return s.scalar(select(func.count()).select_from(Order).join(Order.customer).where(Customer.country == "US"))


@query("top-ordered")
def reference_joinedload_sharded(s):
    return s.scalars(select(Product).options(joinedload(Product.order_items)).order_by(Product.id)).unique().all()


@query("ordered")
def reference_outerjoin_count(s):
    stmt = (
        select(Product.id, func.count().label("n"))
        .outerjoin(Product.order_items.and_(OrderItem.qty == 6))
        .group_by(Product.id)
        .order_by(Product.id)
    )
    return rows(s, stmt)


@query()
def exists_scalar(s):
    return s.scalar(select(exists().where(Customer.email.is_(None))))


# Pagination.


@query("ordered")
def paginate(s):
    total = s.query(Customer).count()
    pages = [
        s.scalars(select(Customer).order_by(Customer.name, Customer.id).limit(8).offset(page * 8)).all() for page in range(6)
    ]
    return {"total": total, "pages": pages}


@query("top-ordered")
def paginate_selectinload(s):
    stmt = (
        select(Order)
        .options(selectinload(Order.items))
        .where(Order.status != "cancelled")
        .order_by(Order.placed_at.desc(), Order.id)
        .limit(10)
        .offset(20)
    )
    return s.scalars(stmt).all()


@query("ordered")
def paginate_legacy(s):
    return s.query(Order).order_by(Order.total.desc(), Order.id).limit(10).offset(30).all()


# Grouping, subqueries, CTEs, UNION.


@query("ordered")
def group_having(s):
    stmt = (
        select(
            Order.status,
            func.count().label("n"),
            func.sum(Order.total).label("total"),
            func.avg(Order.total).label("avg"),
            func.min(Order.placed_at).label("first"),
            func.max(Order.placed_at).label("last"),
        )
        .group_by(Order.status)
        .having(func.count() > 20)
        .order_by(Order.status)
    )
    return rows(s, stmt)


@query("ordered", fold=["country"])
def group_ci(s):
    return rows(s, select(Customer.country, func.count().label("n")).group_by(Customer.country).order_by(Customer.country))


@query("ordered")
def join_group(s):
    n = func.count(Order.id).label("n")
    stmt = (
        select(Customer.id, Customer.name, n, func.coalesce(func.sum(Order.total), 0).label("spent"))
        .outerjoin(Customer.orders)
        .group_by(Customer.id, Customer.name)
        .order_by(desc("n"), Customer.id)
        .limit(10)
    )
    return rows(s, stmt)


@query("ordered")
def join_other_rule_group(s):
    stmt = (
        select(Order.id, func.sum(OrderItem.qty).label("qty"))
        .join(Order.items)
        .group_by(Order.id)
        .order_by(Order.id)
        .limit(10)
    )
    return rows(s, stmt)


@query("ordered")
def join_reference_group(s):
    stmt = (
        select(Product.id, Product.name, func.sum(OrderItem.qty).label("qty"))
        .select_from(OrderItem)
        .join(OrderItem.product)
        .group_by(Product.id, Product.name)
        .order_by(desc("qty"), Product.id)
        .limit(6)
    )
    return rows(s, stmt)


@query("ordered")
def subquery_join_colocated(s):
    spent = select(Order.customer_id, func.sum(Order.total).label("spent")).group_by(Order.customer_id).subquery()
    stmt = (
        select(Customer.id, Customer.name, spent.c.spent)
        .join(spent, Customer.id == spent.c.customer_id)
        .order_by(spent.c.spent.desc(), Customer.id)
        .limit(5)
    )
    return rows(s, stmt)


@query("ordered", fold=["country"])
def subquery_derived_aggregate(s):
    per = select(Customer.country, func.count().label("n")).group_by(Customer.country).subquery()
    return rows(s, select(per.c.country, per.c.n).where(per.c.n > 5).order_by(per.c.country))


@query("ordered", fold=["country"])
def cte_aggregate(s):
    per = select(Customer.country, func.count().label("n")).group_by(Customer.country).cte("per_country")
    return rows(s, select(per.c.country, per.c.n).where(per.c.n > 5).order_by(per.c.country))


@query("ordered")
def in_subquery_colocated(s):
    return s.scalars(
        select(Order).where(Order.customer_id.in_(select(Customer.id).where(Customer.country == "US"))).order_by(Order.id)
    ).all()


@query("ordered")
def in_subquery_other_rule(s):
    return s.scalars(
        select(OrderItem).where(OrderItem.order_id.in_(select(Order.id).where(Order.status == "cancelled"))).order_by(OrderItem.id)
    ).all()


@query("ordered")
def correlated_scalar_subquery(s):
    n = select(func.count(Order.id)).where(Order.customer_id == Customer.id).scalar_subquery().label("n")
    return rows(s, select(Customer.id, n).order_by(Customer.id))


@query("ordered", fold=["country"])
def distinct_values(s):
    return rows(s, select(Customer.country).distinct().order_by(Customer.country))


@query("ordered", fold=["name"])
def union(s):
    a = select(Customer.name).where(Customer.country == "GB")
    b = select(Customer.name).where(Customer.country == "DE")
    return rows(s, a.union(b).order_by("name"))


@query("ordered")
def window_function(s):
    rn = func.row_number().over(partition_by=Order.customer_id, order_by=(Order.placed_at, Order.id)).label("rn")
    return rows(s, select(Order.id, rn).order_by(Order.id))


# Writes. Customers get their ids from shardgate's sequence, the reference's
# from AUTO_INCREMENT: realign() makes both hand out the same next id before
# each write.


def at(day, hour=0):
    return datetime.datetime(2025, 6, day, hour, 0, 0)


@query("ordered", write=True)
def add(s):
    c = Customer(name="Nadia", email="nadia@example.org", country="FR", joined_at=at(1, 9))
    s.add(c)
    s.commit()
    return c


@query("ordered", write=True)
def add_all(s):
    cs = [
        Customer(name="Olga", country="DE", joined_at=at(2)),
        Customer(name="Peter", country="GB", joined_at=at(3)),
        Customer(name="quentin", joined_at=at(4)),
    ]
    s.add_all(cs)
    s.commit()
    return cs


@query("ordered", write=True)
def add_with_children(s):
    c = Customer(
        name="Sven",
        country="DE",
        joined_at=at(6, 9),
        orders=[
            Order(id=2001, status="pending", total=decimal.Decimal("19.90"), placed_at=at(6, 10),
                  items=[OrderItem(id=5001, product_id=3, qty=2, unit_price=decimal.Decimal("9.95"))]),
            Order(id=2002, status="paid", total=decimal.Decimal("5.00"), placed_at=at(6, 11)),
        ],
    )
    s.add(c)
    s.commit()
    return c


@query("ordered", write=True)
def append_to_collection(s):
    c = s.get(Customer, 8)
    c.orders.append(
        Order(id=2003, status="pending", total=decimal.Decimal("42.00"), placed_at=at(7),
              items=[OrderItem(id=5002, product_id=1, qty=1, unit_price=decimal.Decimal("42.00")),
                     OrderItem(id=5003, product_id=2, qty=3, unit_price=decimal.Decimal("1.00"))])
    )
    s.commit()
    return c


@query("ordered", write=True)
def orm_bulk_insert(s):
    s.execute(insert(Customer), [{"name": "bulk %d" % i, "joined_at": at(10 + i)} for i in range(4)])
    s.commit()
    return None


@query("ordered", write=True)
def update_attribute(s):
    c = s.get(Customer, 12)
    c.name = "Renamed"
    c.email = None
    s.commit()
    return c


@query("ordered", write=True)
def bulk_update(s):
    r = s.execute(update(Order).where(Order.status == "pending").values(status="processing", note="bulk"))
    s.commit()
    return {"rowcount": r.rowcount}


@query("ordered", write=True)
def bulk_update_by_key(s):
    r = s.execute(update(Order).where(Order.customer_id == 3).values(total=Order.total * 2))
    s.commit()
    return {"rowcount": r.rowcount}


@query("ordered", write=True)
def update_reference(s):
    r = s.execute(update(Product).where(Product.category_id == 2).values(price=Product.price + 1))
    s.commit()
    return {"rowcount": r.rowcount}


@query("ordered", write=True)
def move_order_to_customer(s):
    o = s.get(Order, 1020)
    o.customer_id = 37
    s.commit()
    return o


@query("ordered", write=True)
def rollback(s):
    s.execute(update(Order).where(Order.status == "paid").values(status="lost"))
    s.rollback()
    return s.scalar(select(func.count()).select_from(Order).where(Order.status == "lost"))


@query("ordered", write=True)
def delete_object(s):
    s.delete(s.get(OrderItem, 7))
    s.commit()
    return None


@query("ordered", write=True)
def bulk_delete(s):
    r = s.execute(delete(OrderItem).where(OrderItem.qty == 1))
    s.commit()
    return {"rowcount": r.rowcount}


@query("ordered", write=True)
def delete_cascade(s):
    s.delete(s.get(Customer, 36))
    s.commit()
    return None


@query("top-ordered")
def reread_after_writes(s):
    stmt = (
        select(Customer)
        .options(selectinload(Customer.orders).selectinload(Order.items))
        .where(Customer.id > 30)
        .order_by(Customer.id)
    )
    return s.scalars(stmt).all()


# ---------------------------------------------------------------------------
# Running them

REALIGN_BASE, REALIGN_STEP = 100, 20  # as ormRealignBase, ormRealignStep in orm_test.go


def realign(engines, n):
    """Makes the next customer id of both sides the same before the n-th
    write, as ormEnv.realign does for GORM: a row with an explicit id moves
    shardgate's sequence and the reference's AUTO_INCREMENT past it."""
    i = REALIGN_BASE + REALIGN_STEP * n
    for e in engines:
        with e.begin() as c:
            c.exec_driver_sql("INSERT INTO customers (id, name, joined_at) VALUES (%d, 'realign', '2000-01-01')" % i)
            c.exec_driver_sql("DELETE FROM customers WHERE id = %d" % i)


class Recorder:
    """Keeps the statements an engine sends, with their parameters."""

    def __init__(self, engine):
        self.sent = []
        event.listen(engine, "before_cursor_execute", self.before)

    def before(self, conn, cursor, statement, parameters, context, executemany):
        self.sent.append((statement, parameters, executemany))

    def take(self):
        s, self.sent = self.sent, []
        return s


def shown(sent):
    return [st if not params else "%s -- %r" % (st, params) for st, params, _ in sent]


def run(engine, rec, f):
    rec.take()
    with Session(engine, expire_on_commit=False) as s:
        try:
            answer = plain(f(s))
        except DBAPIError as e:
            s.rollback()
            return {"error": error_of(e), "statement": e.statement, "sql": shown(rec.take())}
    sent = rec.take()
    return {"result": answer, "sql": shown(sent), "sent": sent}


def error_of(e):
    orig = getattr(e, "orig", e)
    args = getattr(orig, "args", ())
    code = args[0] if args and isinstance(args[0], int) else 0
    msg = args[1] if len(args) > 1 else str(orig)
    return [code, msg]


def raw_rows(engine, statement, params):
    """Every row statement answers on a connection of its own, by column
    name (a name met again gets its position appended)."""
    conn = engine.raw_connection()
    try:
        cur = conn.cursor()
        try:
            cur.execute(statement, params)
        except Exception as e:  # the driver's error
            return {"error": error_of(e)}
        names, out = [], []
        for i, d in enumerate(cur.description or ()):
            names.append(d[0] if d[0] not in names else "%s#%d" % (d[0], i))
        for r in cur.fetchall():
            out.append({n: plain(v) for n, v in zip(names, r)})
        return {"rows": out}
    finally:
        conn.rollback()
        conn.close()


def replay(proxy, ref, sent):
    """The reads an ORM call sent through shardgate, run again as plain
    statements on both sides: every row of each is compared (the ORM may
    keep only the first row of an answer, as scalar() and first() do)."""
    out = []
    for statement, params, executemany in sent:
        if executemany or not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        out.append({"sql": statement, "proxy": raw_rows(proxy, statement, params), "ref": raw_rows(ref, statement, params)})
    return out


def engine(url, mode):
    if mode == "implicit":
        return create_engine(url)
    e = create_engine(url, isolation_level="AUTOCOMMIT")

    @event.listens_for(e, "begin")
    def begin(conn):
        conn.exec_driver_sql("BEGIN")

    return e


def main():
    proxy_url, ref_url = sys.argv[1:3]
    mode = sys.argv[3] if len(sys.argv) > 3 else "implicit"
    if mode not in ("implicit", "begin"):
        sys.exit("unknown mode %r" % mode)
    proxy = engine(proxy_url, mode)
    ref = engine(ref_url, mode)
    recs = {proxy: Recorder(proxy), ref: Recorder(ref)}
    writes = ran = 0
    for name, order, fold, write, f in QUERIES:
        if mode == "begin" and not write and name != "reread-after-writes":
            continue
        if write:
            realign((proxy, ref), writes)
            writes += 1
        out = {"query": name, "order": order, "fold": fold, "write": write}
        out["proxy"] = run(proxy, recs[proxy], f)
        refused = out["proxy"].get("error", [0])[0] == 1235
        out["ref"] = None if write and refused else run(ref, recs[ref], f)
        sent = out["proxy"].pop("sent", [])
        if out["ref"]:
            out["ref"].pop("sent", None)
        if not write and not refused:
            out["replay"] = replay(proxy, ref, sent)
        print(json.dumps(out), flush=True)
        ran += 1
    print("SQLAlchemy %s, %s transactions: %d queries" % (__import__("sqlalchemy").__version__, mode, ran), file=sys.stderr)


if __name__ == "__main__":
    main()
