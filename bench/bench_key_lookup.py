"""Bearer-key lookup in-process: ``principal_for_key`` against the ORM lookup it replaced and against the bare
statement alone, interleaved.

Three implementations resolve the same unrestricted key and the same key limited to two books, round by round
(the order reversed every other round):

- **ORM (before issue 19's lookup)**: the key with its owner through a queryset (an ``Exists`` for the book
  list), and a second query for the books of a limited key;
- **ours**: ``novelgraph.core.auth.principal_for_key``: one bare statement (key, owner, book list), the principal
  reused from the per-process cache while the row is unchanged;
- **floor**: the same bare statement on the DB-API cursor, the row fetched and nothing built.

    python -m bench.bench_key_lookup --calls 500 --rounds 7
"""

from __future__ import annotations

from bench import common

SIZES = {
    "small": {"calls": 300, "rounds": 5},
    "medium": {"calls": 500, "rounds": 7},
    "large": {"calls": 1000, "rounds": 9},
}


def orm_lookup(raw_key: str):
    """The lookup as it was on main before this change (two ORM queries for a limited key)."""
    from django.db.models import Exists, OuterRef

    from novelgraph.core.auth import Principal
    from novelgraph.core.models import ApiKey, hash_api_key

    scoped = ApiKey.books.through.objects.filter(apikey_id=OuterRef("pk"))
    key = (
        ApiKey.objects.select_related("owner")
        .annotate(scoped=Exists(scoped))
        .filter(key_hash=hash_api_key(raw_key), revoked_at__isnull=True, owner__is_active=True)
        .first()
    )
    if key is None:
        return None
    book_ids = frozenset(key.books.values_list("pk", flat=True)) if key.scoped else frozenset()
    return Principal(user=key.owner, key_role=key.role, api_key=key, key_book_ids=book_ids)


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Bearer-key lookup in-process", args)
    vendor = common.setup_django("key_lookup")
    report = common.Report("key_lookup", args.size)

    from django.db import connection

    from novelgraph.core import auth, key_rows
    from novelgraph.core.models import hash_api_key
    from novelgraph.core.services import api_key_create
    from tests.factories import BookFactory, UserFactory
    from tests.sqltrace import sql_trace

    owner = UserFactory(username="bench-keys")
    books = [BookFactory(owner=owner, title=f"Book {n}") for n in range(2)]
    keys = {
        "unrestricted key": api_key_create(owner=owner, role="sol")[1],
        "key limited to 2 books": api_key_create(owner=owner, role="luna", books=books)[1],
    }
    lookup = key_rows.key_lookup_for(connection)

    def floor(raw: str):
        with connection.cursor() as cursor:
            cursor.execute(lookup.sql, [hash_api_key(raw)])
            return cursor.fetchone()

    for label, raw in keys.items():
        assert orm_lookup(raw).key_book_ids == auth.principal_for_key(raw).key_book_ids
        with sql_trace() as orm_trace:
            orm_lookup(raw)
        with sql_trace() as our_trace:
            auth.principal_for_key(raw)
        print(f"  {label}: statements ORM {len(orm_trace)}, ours {len(our_trace)}")
        report.figures[f"statements ({label})"] = {"orm": len(orm_trace), "ours": len(our_trace)}

        ours, old, bare = (common.Samples(f"{name} ({label})") for name in ("ours", "ORM lookup", "floor: statement"))
        pairs = [(bare, lambda _, raw=raw: floor(raw)), (ours, lambda _, raw=raw: auth.principal_for_key(raw))]
        pairs.append((old, lambda _, raw=raw: orm_lookup(raw)))
        for round_no in range(args.rounds):
            common.interleaved(pairs if round_no % 2 == 0 else pairs[::-1], range(args.calls), rounds=1)
        common.print_title(f"{label} on {vendor}, {args.rounds} interleaved rounds of {args.calls} calls")
        common.print_timings([bare, ours, old], bare)
        report.ratio(f"principal_for_key vs the bare statement ({label})", common.round_ratios(ours, bare))
        report.ratio(f"the ORM lookup it replaced vs the bare statement ({label})", common.round_ratios(old, bare))
        report.figures[label] = {"floor_ms": bare.median_ms, "ours_ms": ours.median_ms, "orm_ms": old.median_ms}
    report.save()
    return report


if __name__ == "__main__":
    main()
