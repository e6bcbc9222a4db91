"""Noticing that a SQLite store's file vanished or was replaced while it is open.

SQLite keeps writing to the file it opened even after that file was deleted (or renamed,
or replaced by another): commits succeed into an inode no one will ever open again, and a
new connection creates an empty file at the path. So the store remembers the device and
inode of the file it opened and compares them with the path's before every transaction (a
``stat``, about a microsecond). Once they differ the store is gone for this process: every
operation raises :class:`StoreUnavailableError` (the host answers ``503 store_unavailable``) and
an error is logged once. It does not come back by itself, even when a file reappears at the
path — that may be a stray empty file, or a backup the operator restores: restart the host
on it, and the runs left open resume.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from .retry import StoreUnavailableError

log = logging.getLogger("openwop_eval.store")


class StoreGoneError(StoreUnavailableError):
    """The store's file was deleted or replaced: unavailable until a restart."""


def _inode(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


@dataclass
class FileIdentity:
    path: str
    inode: tuple[int, int]
    gone: bool = field(default=False)

    @classmethod
    def of(cls, engine: Engine) -> FileIdentity | None:
        """The identity of a SQLite store's file; None for memory, URIs and PostgreSQL."""
        path = engine.url.database
        if engine.dialect.name != "sqlite" or not path or path == ":memory:":
            return None
        if engine.url.query.get("uri") or path.startswith("file:"):
            return None
        inode = _inode(path)
        return None if inode is None else cls(path, inode)

    def check(self) -> None:
        """Raise :class:`StoreGoneError` when the path no longer holds the file opened."""
        if not self.gone and _inode(self.path) != self.inode:
            self.gone = True
            log.error(
                "the SQLite store %s was deleted or replaced while open: every request that"
                " needs the store now answers 503 store_unavailable and runs are left open;"
                " restore the file and restart the host",
                self.path,
            )
        if self.gone:
            raise StoreGoneError("the store's file is gone")
