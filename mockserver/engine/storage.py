"""The bytes of uploaded files (state, no HTTP): `FileStore`, bounded in total, oldest first out.

The storage service that takes and serves them (`PUT /__storage__/upload/{token}`,
`GET /__storage__/files/{storageId}`) is HTTP and lives in `mockserver/standalone/storage.py`;
the file's byte length, content type and workspace are recorded in table `uploads` by
`MockState.accept_upload`. reset() drops the bytes with the records.
"""

from __future__ import annotations

import threading

__all__ = ["MAX_KEPT_BYTES", "FileStore"]

# The bytes of uploaded files kept for downloads, in all; the oldest files go first.
MAX_KEPT_BYTES = 64 * 1024 * 1024


class FileStore:
    """The bytes of uploaded files by storageId, at most `limit` bytes in all."""

    def __init__(self, limit: int = MAX_KEPT_BYTES) -> None:
        self.limit = limit
        self._files: dict[str, bytes] = {}
        self._size = 0
        self._lock = threading.Lock()

    def put(self, storage_id: str, content: bytes) -> None:
        with self._lock:
            self._files[storage_id] = content
            self._size += len(content)
            while self._size > self.limit and len(self._files) > 1:
                oldest = next(iter(self._files))
                self._size -= len(self._files.pop(oldest))

    def get(self, storage_id: str) -> bytes | None:
        return self._files.get(storage_id)

    def clear(self) -> None:
        with self._lock:
            self._files.clear()
            self._size = 0

    @property
    def size(self) -> int:
        return self._size
