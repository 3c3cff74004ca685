"""The loop's sidecar on disk (seed 002): ``<discovery-root>/<book-slug>/_state/*.json`` with the committed
artifacts beside ``_state`` and ``screens/`` holding the loop's pictures.

The files are the zip's (``transfer.loop_files``), byte for byte; the folder is read back through the same
import as the zip (``transfer.loop_import``), so its validation is the zip's.

The discovery root is resolved config → default → discover-by-marker:

1. the ``NOVELGRAPH_DISCOVERY_ROOT`` setting, when set;
2. else the default ``VAR_DIR/discovery``, when the app's ``var/`` directory exists;
3. else the nearest folder, from the working directory up, that holds a ``.novelgraph-discovery`` marker file
   (that folder is the root);
4. else the default, which is created on the first write.

Nothing is created by resolving a root; directories are made only when a file is written into them.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from discovery.access import BookAccess
from discovery.models import Book
from novelgraph.core.errors import Invalid

from ..selectors import nodes_of, trace_edges_of, trace_lint, trace_nodes_of
from ..svg import plan_tree_svg, trace_svg
from .transfer import MAX_STATE_FILE, STATE_FILES, loop_files, loop_import, read_state_files

MARKER = ".novelgraph-discovery"


def _default_root() -> Path:
    return Path(settings.VAR_DIR) / "discovery"


def discovery_root(cwd: Path | None = None) -> Path:
    """Where the sidecars live (the module doc's order). Creates nothing."""
    configured = str(getattr(settings, "NOVELGRAPH_DISCOVERY_ROOT", "") or "").strip()
    if configured:
        return Path(configured).expanduser()
    if Path(settings.VAR_DIR).is_dir():
        return _default_root()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return _default_root()


def sidecar_folder(book: Book, root: Path | None = None) -> Path:
    """The book's folder under the root (not created)."""
    return (root or discovery_root()) / book.slug


def loop_screens(*, book: Book) -> dict[str, str]:
    """The loop's pictures as SVG documents: the plan-tree and the traceability graph (as the loop page draws)."""
    report = trace_lint(book, strict=True)
    return {
        "plan-tree.svg": str(plan_tree_svg(list(nodes_of(book)))),
        "traceability.svg": str(trace_svg(list(trace_nodes_of(book)), list(trace_edges_of(book)), report)),
    }


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    tmp.replace(path)


def loop_export_folder(*, book: Book, root: Path | None = None) -> dict:
    """Write the book's loop into ``<root>/<book-slug>/``: the zip's files, and ``screens/*.svg``. Each file is
    replaced whole (written beside, then renamed); files this export does not write are left alone."""
    root = root or discovery_root()
    folder = sidecar_folder(book, root)
    files = loop_files(book=book)
    written = []
    for name, content in files.items():
        _write(root / name, content)
        written.append(name)
    for name, svg in loop_screens(book=book).items():
        _write(folder / "screens" / name, svg.encode("utf-8"))
        written.append(f"{book.slug}/screens/{name}")
    return {"folder": str(folder), "files": written}


def loop_import_folder(*, access: BookAccess, folder: Path) -> dict:
    """Import the sidecar at ``folder`` (the book folder holding ``_state/``) into the access's book, through the
    zip's import (``transfer.loop_import``): the same rules, the same refusals."""
    folder = Path(folder)
    state = folder / "_state"
    if not state.is_dir():
        raise Invalid(f"{folder} holds no _state folder", field="from")
    raw = {}
    for name in STATE_FILES:
        path = state / f"{name}.json"
        if path.is_file():
            if path.stat().st_size > MAX_STATE_FILE:
                raise Invalid(f"_state/{name}.json is too large", field="from")
            raw[name] = path.read_bytes()
    return loop_import(access=access, files=read_state_files(raw))
