"""An authenticated framed-JSON connection between a command and the engine (asyncio streams).

Framing is the worker protocol's (``core.worker.contract.protocol``: a 4-byte length, then JSON). The engine
and its clients share a key kept in a file only the user can read (mode 0600). On connect:

1. engine → client ``{"hello": "kerneltui-engine", "nonce": hex, "pid", "version"}`` (plain frame);
2. client → engine ``{"nonce": hex, "proof": HMAC(key, "client" ‖ engine nonce ‖ client nonce)}``;
3. engine → client ``{"proof": HMAC(key, "engine" ‖ …)}``, or ``{"refused": why}`` and the engine hangs up.

The client thus proves it holds the key and the engine proves it holds it too (a process that
squatted the socket path cannot hand out verdicts). Every later frame is sealed as the worker's
replies are (``protocol.Signer``/``Verifier``: HMAC over the frame number and body), with one key
per direction derived from both nonces, so a frame cannot be replayed, reordered or reflected.
The engine also refuses a peer whose user id (``SO_PEERCRED``) is not its own, and one that is a
sandboxed worker (``core.engine.peer``), before the handshake: it sends ``{"refused": why}`` in place
of its hello and hangs up.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import socket
import struct
from pathlib import Path
from typing import Any

from kerneltui.core.engine.peer import boxed_peer
from kerneltui.core.worker.contract.protocol import (
    HEADER,
    MAX_MESSAGE,
    ProtocolError,
    Signer,
    Verifier,
    decode_body,
    encode,
)

GREETING = "kerneltui-engine"
HANDSHAKE_TIMEOUT_S = 10.0


class AuthError(Exception):
    """The other end could not prove it holds the engine's key."""


class KeyFileError(Exception):
    """The key file is missing, unreadable or readable by others."""


def read_key(path: Path) -> bytes:
    try:
        info = path.stat()
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError as exc:
        raise KeyFileError(f"no engine key at {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"cannot read the engine key {path}: {exc}") from exc
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise KeyFileError(f"the engine key {path} must belong to you and be readable by you alone (chmod 600)")
    try:
        folder = path.parent.stat()
    except OSError as exc:
        raise KeyFileError(f"cannot read the engine key's folder {path.parent}: {exc}") from exc
    if folder.st_uid != os.getuid() or folder.st_mode & 0o077:
        raise KeyFileError(f"the engine key's folder {path.parent} must belong to you and be open to you alone "
                           "(chmod 700)")
    try:
        key = bytes.fromhex(text)
    except ValueError as exc:
        raise KeyFileError(f"the engine key {path} is not a hex string: delete it and restart the engine") from exc
    if len(key) < 16:
        raise KeyFileError(f"the engine key {path} is too short: delete it and restart the engine")
    return key


def create_key(path: Path) -> bytes:
    """The key in ``path``, made (mode 0600) when there is none yet. It is written whole to a file of
    its own and linked into place, so a reader never sees a half-written key."""
    if path.exists():
        return read_key(path)
    return write_key(path, secrets.token_bytes(32))


def restore_key(path: Path, key: bytes) -> None:
    """Put a running engine's key back in ``path`` when the file is gone (deleted by hand): its clients
    read it there, and without it even `kerneltui engine stop` could not prove itself."""
    if not path.exists():
        write_key(path, key)


def write_key(path: Path, key: bytes) -> bytes:
    """``key`` written whole (mode 0600) and linked into place; the key already there if another
    process linked one first."""
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex() + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:  # another engine made it first: use that one
        return read_key(path)
    finally:
        draft.unlink(missing_ok=True)
    return key


def _mac(key: bytes, label: bytes, engine_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(key, label + engine_nonce + client_nonce, hashlib.sha256).digest()


class Channel:
    """A connected, authenticated end: ``send`` sealed frames, ``receive`` verified ones."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._signer: Signer | None = None
        self._verifier: Verifier | None = None
        # The frame being read. A receive cancelled inside a frame (a command cancelling its run while
        # an event comes in) leaves its reading to the next receive, which would otherwise take the rest
        # of that frame for a header and lose every later message (the run's last events among them).
        self._reading: asyncio.Future[bytes | None] | None = None
        self.peer: dict[str, Any] = {}

    def _keys(self, key: bytes, engine_nonce: bytes, client_nonce: bytes, engine_side: bool) -> None:
        to_client = _mac(key, b"to-client", engine_nonce, client_nonce)
        to_engine = _mac(key, b"to-engine", engine_nonce, client_nonce)
        self._signer = Signer(to_client if engine_side else to_engine)
        self._verifier = Verifier(to_engine if engine_side else to_client)

    # -- frames -----------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Queue one sealed frame (``drain`` to wait until it is written)."""
        if self._signer is None:
            raise ProtocolError("the channel is not authenticated yet")
        if not self.writer.is_closing():
            self.writer.write(self._signer.seal(message))

    async def drain(self) -> None:
        if not self.writer.is_closing():
            await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next verified message; None when the other end closed the connection."""
        if self._verifier is None:
            raise ProtocolError("the channel is not authenticated yet")
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_payload())
        payload = await asyncio.shield(self._reading)  # cancelled: the frame is still read whole
        self._reading = None
        return None if payload is None else self._verifier.open(payload)

    async def _read_payload(self) -> bytes | None:
        try:
            header = await self.reader.readexactly(HEADER.size)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return None
        (length,) = HEADER.unpack(header)
        if length > MAX_MESSAGE:
            raise ProtocolError(f"a frame of {length} bytes is over the limit")
        try:
            return await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
            raise ProtocolError("the connection ended inside a frame") from exc

    async def _plain(self) -> dict[str, Any]:
        payload = await asyncio.wait_for(self._read_payload(), HANDSHAKE_TIMEOUT_S)
        if payload is None:
            raise AuthError("the other end closed the connection during the handshake")
        return decode_body(payload)

    async def close(self) -> None:
        reading, self._reading = self._reading, None
        if reading is not None:  # left by a cancelled receive: nobody will take its frame now
            if not reading.done():
                reading.cancel()
            elif not reading.cancelled():
                reading.exception()  # its error, if any, is the closed stream's: seen, not logged
        if not self.writer.is_closing():
            self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    # -- handshakes -------------------------------------------------------------------------------

    async def accept(self, key: bytes, hello: dict[str, Any]) -> None:
        """Engine side: prove the client holds ``key``; raises AuthError (after telling it why)."""
        pid, uid = peer_credentials(self.writer)
        if uid is not None and uid != os.getuid():
            await self._refuse(f"the engine serves user id {os.getuid()} only (this client runs as {uid})")
        boxed = boxed_peer(pid)
        if boxed:
            await self._refuse(boxed)
        engine_nonce = secrets.token_bytes(16)
        self.writer.write(encode({"hello": GREETING, "nonce": engine_nonce.hex(), **hello}))
        await self.writer.drain()
        answer = await self._plain()
        try:
            client_nonce = bytes.fromhex(str(answer.get("nonce", "")))
            proof = bytes.fromhex(str(answer.get("proof", "")))
        except ValueError:
            client_nonce, proof = b"", b""
        if len(client_nonce) < 16 or not hmac.compare_digest(proof, _mac(key, b"client", engine_nonce, client_nonce)):
            await self._refuse("the client could not prove it holds the engine's key")
        self.peer = {k: v for k, v in answer.items() if k not in ("nonce", "proof")}
        self.writer.write(encode({"proof": _mac(key, b"engine", engine_nonce, client_nonce).hex()}))
        await self.writer.drain()
        self._keys(key, engine_nonce, client_nonce, engine_side=True)

    async def _refuse(self, why: str) -> None:
        self.writer.write(encode({"refused": why}))
        try:
            await self.writer.drain()
        except ConnectionError:
            pass
        await self.close()
        raise AuthError(why)

    async def greeting(self) -> dict[str, Any]:
        """Client side: the engine's hello, not yet proven (``connect`` proves it). A running engine
        writes its deleted key file again before it says hello (``restore_key``), so a client reads
        the key after this."""
        hello = await self._plain()
        if "refused" in hello:
            raise AuthError(f"the engine refused this client: {hello['refused']}")
        if hello.get("hello") != GREETING:
            raise AuthError(f"the socket did not answer as a kerneltui engine ({str(hello)[:80]})")
        return hello

    async def connect(self, key: bytes, about: dict[str, Any], hello: dict[str, Any] | None = None) -> dict[str, Any]:
        """Client side: prove we hold ``key`` and check that the engine does; the engine's hello
        (``hello``: the one ``greeting`` already read)."""
        if hello is None:
            hello = await self.greeting()
        engine_nonce = bytes.fromhex(str(hello.get("nonce", "")))
        client_nonce = secrets.token_bytes(16)
        self.writer.write(encode({"nonce": client_nonce.hex(), **about,
                                  "proof": _mac(key, b"client", engine_nonce, client_nonce).hex()}))
        await self.writer.drain()
        answer = await self._plain()
        if "refused" in answer:
            raise AuthError(f"the engine refused this client: {answer['refused']}")
        try:
            proof = bytes.fromhex(str(answer.get("proof", "")))
        except ValueError:
            proof = b""
        if not hmac.compare_digest(proof, _mac(key, b"engine", engine_nonce, client_nonce)):
            raise AuthError("the process on the engine's socket could not prove it holds the engine's key")
        self._keys(key, engine_nonce, client_nonce, engine_side=False)
        return hello


def peer_credentials(writer: asyncio.StreamWriter) -> tuple[int | None, int | None]:
    """The pid and user id of the process that connected (``SO_PEERCRED``); None where not known."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None, None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return int(pid), int(uid)
