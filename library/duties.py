"""The library's duties for agents through MCP: searching the curated library and reading one chunk.

Registered from ``LibraryConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``).

- ``novelgraph://chunks/{chunk_id}``: one library chunk with its source (literary:read).
"""

from __future__ import annotations

from discovery.access import Cap, book_access, principal_capabilities, refusal
from novelgraph.core.auth import Principal
from novelgraph.core.duties import SCHEME, ResourceKind, ToolSpec, read_tool, register_resources, register_tools

from . import selectors
from . import services as library
from .schemas import (
    ChunkOut,
    ResearchIn,
    ResearchOut,
    SearchOut,
    SearchParams,
    SourceDetailOut,
    SourceOut,
    source_detail,
)
from .selectors import chunk_get


def library_search(principal: Principal, _args, params: SearchParams):
    result = library.library_search(
        principal=principal,
        query=params.q,
        limit=params.limit,
        applicability=params.applicability or None,
        topic=params.topic or None,
    )
    return result.as_dict()


def chunk_read(principal: Principal, chunk_id: str) -> dict:
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)
    chunk = chunk_get(chunk_id)
    return {
        "chunk": ChunkOut.from_orm(chunk).model_dump(mode="json"),
        "source": SourceOut.from_orm(chunk.source).model_dump(mode="json"),
    }


def research_propose(principal: Principal, args, payload: ResearchIn):
    return library.research_propose(access=book_access(principal, args.book_id), payload=payload)


TOOL = ToolSpec(
    name="library_search",
    route="GET /library/search",
    description="Search the curated literary library. Every word must appear; results are cited chunks "
    "(read one whole with the novelgraph://chunks/{chunk_id} resource).",
    needs=(Cap.LITERARY_READ,),
    run=library_search,
    out=SearchOut,
    payload=SearchParams,
    read_only=True,
)

RESEARCH = ToolSpec(
    name="research_propose",
    route="POST /books/{book_id}/research",
    description="Propose outside research for the book (a URL, its excerpt, the claim it supports and its "
    "citation); it waits, pending, for the author to admit or reject it.",
    needs=(Cap.DISCOVERY_WRITE, Cap.SCRATCHPAD_WRITE),
    run=research_propose,
    out=ResearchOut,
    payload=ResearchIn,
    path=("book_id",),
)

CHUNK = ResourceKind(
    name="chunk",
    template=f"{SCHEME}://chunks/{{chunk_id}}",
    description="One cited chunk of the literary library, with its source.",
    read=chunk_read,
    per_book=False,
)


def _literary(principal: Principal) -> None:
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)


def sources_list(principal: Principal, _args, _params):
    _literary(principal)
    return selectors.sources_all()


def source_read(principal: Principal, args, _params):
    _literary(principal)
    source = selectors.source_get(args.source_id)
    return source_detail(source, selectors.chunks_of(source))


def source_chunks(principal: Principal, args, _params):
    _literary(principal)
    return selectors.chunks_of(selectors.source_get(args.source_id))


def research_list(principal: Principal, args, _params):
    return selectors.research_of(book_access(principal, args.book_id, Cap.BOOK_READ).book)


LITERARY = (Cap.LITERARY_READ,)
READS = (
    read_tool(
        "library_sources",
        "GET /library/sources",
        "The curated library's sources, paged.",
        sources_list,
        SourceOut,
        needs=LITERARY,
        many=True,
    ),
    read_tool(
        "library_source",
        "GET /library/sources/{source_id}",
        "A library source with its first chunks.",
        source_read,
        SourceDetailOut,
        ("source_id",),
        LITERARY,
    ),
    read_tool(
        "library_chunks",
        "GET /library/sources/{source_id}/chunks",
        "A library source's chunks in order, paged.",
        source_chunks,
        ChunkOut,
        ("source_id",),
        LITERARY,
        many=True,
    ),
    read_tool(
        "research_list",
        "GET /books/{book_id}/research",
        "The book's research items (pending, admitted, rejected), paged.",
        lambda p, a, _q: selectors.research_of(book_access(p, a.book_id, Cap.BOOK_READ).book),
        ResearchOut,
        ("book_id",),
        (Cap.BOOK_READ,),
        many=True,
    ),
)


def register() -> None:
    register_tools(TOOL, RESEARCH, *READS)
    register_resources(CHUNK)
