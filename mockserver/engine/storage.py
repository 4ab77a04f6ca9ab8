"""The bytes of uploaded files (state, no HTTP): `FileStore`, bounded in total, oldest first out.

The storage service that takes and serves them (`PUT /__storage__/upload/{token}`,
`GET /__storage__/files/{storageId}`) is HTTP and lives in `mockserver/standalone/storage.py`;
the file's byte length, content type and workspace are recorded in table `uploads` by
`MockState.accept_upload`. reset() drops the bytes with the records.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

__all__ = ["MAX_KEPT_BYTES", "FileStore", "StorageKeys"]

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

    def discard(self, storage_id: str) -> None:
        """Forget one file (a replicated write undone)."""
        with self._lock:
            content = self._files.pop(storage_id, None)
            if content is not None:
                self._size -= len(content)

    def export(self) -> list[tuple[str, bytes]]:
        """The files kept, oldest first: what `restore` takes back (a checkpoint)."""
        with self._lock:
            return list(self._files.items())

    def restore(self, files: list[tuple[str, bytes]]) -> None:
        self.clear()
        for storage_id, content in files:
            self.put(storage_id, content)


class StorageKeys:
    """The server secret behind upload URLs, storage ids and file URLs, as an object store's
    signing key: ids nobody can predict without it, and signatures a download is checked by.

    Random per server unless pinned (`--storage-secret`): pinned, the same seed, session name
    and writes give the same URLs and ids again (reproducible tests). On shared state an
    unpinned key is derived from the namespace's secret in Redis (`rekey`), so every replica
    signs and verifies alike (DECISIONS H2, H12).

    Everything is bound to a state's *scope* (its session name and incarnation, `scope`):
    a session's ids are salted with `salt(scope)`, and a file URL's signature covers the
    scope, the file's workspace and its id, so a URL never opens another session's file
    (DECISIONS H2, H3)."""

    _ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

    def __init__(self, secret: bytes | None = None) -> None:
        self.pinned = secret is not None
        self._key = hashlib.blake2b(secret if secret is not None else secrets.token_bytes(32),
                                    digest_size=32).digest()

    def rekey(self, secret: bytes) -> None:
        """The key derived from a shared secret (a namespace's, in Redis); a pinned key stays."""
        if not self.pinned:
            self._key = hashlib.blake2b(secret, digest_size=32, person=b"mock-storage").digest()

    def scope(self, name: str, incarnation: str | None = None) -> str:
        """A state's scope: its name and incarnation (a fresh random nonce unless given; with
        a pinned key, the name alone, so pinned runs reproduce, in memory and on Redis alike)."""
        if self.pinned:
            incarnation = ""
        elif incarnation is None:
            incarnation = secrets.token_hex(16)
        return f"{name}\x00{incarnation}"

    def salt(self, scope: str) -> str:
        """What a state's ids are salted with: unpredictable without the key."""
        return hashlib.blake2b(scope.encode(), key=self._key, digest_size=16,
                               person=b"mock-salt").hexdigest() + ":"

    def sealed_id(self, prefix: str, plain: str, length: int = 32) -> str:
        """An id from `plain` (the store's id, with the scope and workspace) keyed by the
        secret: 150 bits a stranger cannot guess in the default length."""
        digest = hashlib.blake2b(plain.encode(), key=self._key, digest_size=32,
                                 person=b"mock-id").digest()
        body = "".join(self._ALPHABET[b % 32] for b in digest)
        return (prefix + body)[:length]

    def signature(self, scope: str, workspace_id: str, storage_id: str) -> str:
        """What a file's capability URL carries (`?signature=`): over the session's scope,
        the file's workspace and its id."""
        message = f"{scope}\x00{workspace_id}\x00{storage_id}".encode()
        return hashlib.blake2b(message, key=self._key, digest_size=20,
                               person=b"mock-file").hexdigest()

    def verify(self, scope: str, workspace_id: str, storage_id: str, signature: str) -> bool:
        return hmac.compare_digest(self.signature(scope, workspace_id, storage_id), signature)
