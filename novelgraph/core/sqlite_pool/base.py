"""Django's SQLite backend, with a bounded pool of idle connections shared by a process's threads.

Under an ASGI server every request runs on a thread of its own, so a connection kept per thread
(``CONN_MAX_AGE`` > 0) is left behind when the thread ends, until the garbage collector closes it: one
uvicorn process held 54-134 of them (issue 30). With ``CONN_MAX_AGE = 0`` Django closes each request's
connection when the request ends; opening a new one for every request would cost about a millisecond
(the file, the pragmas, the schema parsed again, a cold page cache). So closing hands the connection,
rolled back to no transaction, to a process-wide pool instead, and the next request on any thread takes
it from there. ``OPTIONS["pool"]["max_size"]`` bounds the idle connections a process keeps; a connection
closed while the pool is full is really closed. A connection in use is one request's, so a process holds
at most its requests in progress plus ``max_size`` connections. The pool is keyed by database file, so a
test database never hands out a connection to another file.
"""

from __future__ import annotations

import queue
import threading
import weakref

from django.db.backends.sqlite3 import base


class Connection(base.Database.Connection):
    """The driver's connection, counted while open (``open_connections``): one not closed still counts until
    the garbage collector takes it, as its file stays open until then."""

    _open: weakref.WeakSet = weakref.WeakSet()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._open.add(self)

    def close(self):
        self._open.discard(self)
        super().close()


def open_connections() -> int:
    """How many SQLite connections this process holds open (in use, idle in the pool, or left behind)."""
    return len(Connection._open)


class DatabaseWrapper(base.DatabaseWrapper):
    _idle_pools: dict[tuple[str, str], queue.LifoQueue] = {}
    _idle_pools_lock = threading.Lock()

    def _pool_size(self) -> int:
        options = self.settings_dict["OPTIONS"].get("pool") or {}
        return int(options.get("max_size", 0))

    def _idle(self) -> queue.LifoQueue | None:
        size = self._pool_size()
        if size <= 0 or self.is_in_memory_db():
            return None
        key = (self.alias, str(self.settings_dict["NAME"]))
        with self._idle_pools_lock:
            pool = self._idle_pools.get(key)
            if pool is None:
                pool = self._idle_pools[key] = queue.LifoQueue(maxsize=size)
        return pool

    def get_connection_params(self):
        params = super().get_connection_params()
        params.pop("pool", None)
        params["factory"] = Connection
        return params

    def get_new_connection(self, conn_params):
        idle = self._idle()
        if idle is not None:
            try:
                return idle.get_nowait()
            except queue.Empty:
                pass
        return super().get_new_connection(conn_params)

    def _close(self):
        idle = self._idle()
        if idle is None or self.connection is None or self.in_atomic_block:
            return super()._close()
        connection = self.connection
        try:
            if connection.in_transaction:
                connection.rollback()
            connection.set_trace_callback(None)
            idle.put_nowait(connection)
        except (queue.Full, base.Database.Error):
            return super()._close()

    def close_pool(self) -> None:
        """Close every idle connection this process keeps for this database (as the PostgreSQL backend's)."""
        idle = self._idle()
        while idle is not None:
            try:
                idle.get_nowait().close()
            except queue.Empty:
                break
