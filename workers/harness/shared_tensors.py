"""Tensors shared between two processes without copies and without pickle.

The verification child (the *judge*) and the process that runs the candidate kernel (the *runner*) talk
over a Unix socket pair in JSON messages. A tensor crosses as its metadata plus a handle to its memory:
on the CPU a file descriptor of a shared-memory segment (passed with the message, ``SCM_RIGHTS``), on a
GPU a CUDA IPC handle. Both sides then see the same memory: the kernel's writes into an input are seen
by the judge, the judge's in-place changes by the kernel, and multi-GB outputs are never copied.

Nothing received is unpickled or executed: a message is JSON, a tensor is rebuilt from plain numbers,
and every field is checked, so a runner taken over by the kernel can send wrong data but not code.

Limits: a CUDA IPC handle names a whole allocation segment, so the receiver can reach other tensors in
the same segment; the judge therefore allocates what it shares from a memory pool of its own (see
``verify_child``). A sender must keep a tensor alive until the receiver is done with it (the protocol
is strictly request/reply, and each side holds the last message's tensors until the next).
"""

from __future__ import annotations

import base64
import json
import os
import select
import socket
from typing import Any

import torch

# Taken before any kernel is imported.
_synchronize, _cuda_initialized, _current_device = (torch.cuda.synchronize, torch.cuda.is_initialized,
                                                    torch.cuda.current_device)  # fmt: skip
MAX_MESSAGE_BYTES = 1 << 20  # JSON only (tracebacks are cut short); tensors travel as handles
MAX_FDS = 64

DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
    )
}  # fmt: skip
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


class ChannelClosed(ConnectionError):
    """The other process closed its end or died."""


class ChannelTimeout(TimeoutError):
    """Nothing came from the other process in the time allowed."""


class ProtocolError(ValueError):
    """A message that does not follow the protocol (malformed JSON, bad tensor metadata)."""


class Channel:
    """One end of a SOCK_SEQPACKET socket pair: whole messages, with file descriptors attached."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @staticmethod
    def pair() -> tuple[Channel, Channel]:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        return Channel(a), Channel(b)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()

    def send(self, body: dict[str, Any], tensors: list[torch.Tensor] | tuple[torch.Tensor, ...] = ()) -> None:
        """Send ``body`` (JSON-able) with ``tensors`` shared, in order.

        GPU writes still queued on this side are finished first: the other process works on its own
        streams, which nothing orders after ours (a judge's in-place change to a multi-GB input was seen
        only after the kernel had read the old values). That holds for tensors shared earlier too, so
        the current device is finished even when nothing new is shared."""
        if _cuda_initialized():
            try:
                for device in {t.device for t in tensors if t.is_cuda} | {_current_device()}:
                    _synchronize(device)
            except RuntimeError:
                pass  # a faulted context (illegal address): the message still goes, it says what happened
        metas, fds = [], []
        for t in tensors:
            meta, fd = _share(t)
            if fd is not None:
                meta["fd_index"] = len(fds)
                fds.append(fd)
            metas.append(meta)
        data = json.dumps({"body": body, "tensors": metas}).encode()
        if len(data) > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message of {len(data)} bytes is over the limit of {MAX_MESSAGE_BYTES}")
        try:
            socket.send_fds(self.sock, [data], fds)
        except OSError as e:
            raise ChannelClosed(f"cannot send: {e}") from e

    def recv(self, timeout_s: float | None = None) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The next message and its tensors. Raises ChannelClosed, ProtocolError, or ChannelTimeout when
        nothing has come within ``timeout_s`` (None: wait as long as it takes)."""
        if timeout_s is not None and not select.select([self.sock], [], [], max(timeout_s, 0.0))[0]:
            raise ChannelTimeout(f"no message within {timeout_s:.1f} s")
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE_BYTES, MAX_FDS)
        except OSError as e:
            raise ChannelClosed(f"cannot receive: {e}") from e
        try:
            if not data:
                raise ChannelClosed("the other side closed the channel")
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ProtocolError("message truncated")
            try:
                message = json.loads(data)
                body, metas = message["body"], message["tensors"]
            except (ValueError, KeyError, TypeError) as e:
                raise ProtocolError(f"malformed message: {e}") from e
            if not isinstance(body, dict) or not isinstance(metas, list):
                raise ProtocolError("malformed message")
            return body, [_rebuild(m, fds) for m in metas]
        finally:
            for fd in fds:
                _close_quietly(fd)


def encode_value(value: Any, tensors: list[torch.Tensor]) -> Any:
    """A JSON-able form of a model value (tensors appended to ``tensors`` and referred to by index)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v, tensors) for v in value]}
    if isinstance(value, list):
        return [encode_value(v, tensors) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot send a {type(value).__name__} to the kernel's process")


def encode_inputs(inputs: list[Any], values: dict[str, Any], tensors: list[torch.Tensor]) -> dict[str, Any]:
    """A runner request's ``inputs`` and ``values`` fields (``runner_messages.OnInputs``), their tensors
    appended to ``tensors``."""
    return {"inputs": [encode_value(v, tensors) for v in inputs],
            "values": {k: encode_value(v, tensors) for k, v in values.items()}}  # fmt: skip


def decode_value(encoded: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(encoded, dict):
        if "tensor" in encoded:
            return tensors[encoded["tensor"]]
        return tuple(decode_value(v, tensors) for v in encoded["tuple"])
    if isinstance(encoded, list):
        return [decode_value(v, tensors) for v in encoded]
    return encoded


def _share(t: torch.Tensor) -> tuple[dict[str, Any], int | None]:
    meta: dict[str, Any] = {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "offset": t.storage_offset(),
    }
    storage = t.untyped_storage()
    if t.device.type == "meta":  # shapes only (``compile_ahead``): nothing to share
        meta["storage"] = {"kind": "meta", "size": storage.nbytes()}
        return meta, None
    if storage.nbytes() == 0:
        meta["storage"] = {"kind": "empty", "device": str(t.device)}
        return meta, None
    if t.device.type == "cuda":
        (device, handle, size, offset, rc_handle, rc_offset, event_handle, event_sync) = storage._share_cuda_()
        meta["storage"] = {
            "kind": "cuda", "device": device, "handle": _b64(handle), "size": size, "offset": offset,
            "ref_counter_handle": _b64(rc_handle), "ref_counter_offset": rc_offset,
            "event_handle": _b64(event_handle), "event_sync_required": bool(event_sync),
        }  # fmt: skip
        return meta, None
    if t.device.type == "cpu":
        fd, size = storage._share_fd_cpu_()
        meta["storage"] = {"kind": "fd", "size": size}
        return meta, fd
    raise ProtocolError(f"cannot share a tensor on {t.device}")


def _rebuild(meta: Any, fds: list[int]) -> torch.Tensor:
    try:
        dtype = DTYPES[meta["dtype"]]
        shape, stride, offset = meta["shape"], meta["stride"], meta["offset"]
        if not (_ints(shape) and _ints(stride) and len(shape) == len(stride) and _ints([offset])):
            raise ProtocolError("bad tensor shape, stride or offset")
        where = meta["storage"]
        kind = where["kind"]
        if kind == "empty":
            return torch.empty(shape, dtype=dtype, device=torch.device(where["device"]))
        if kind == "fd":
            fd = fds[meta["fd_index"]]
            storage = torch.UntypedStorage._new_shared_fd_cpu(fd, int(where["size"]))
            device = torch.device("cpu")
        elif kind == "meta":  # set_ grows a meta storage instead of refusing a view past it
            size = where["size"]
            if not _ints([size]):
                raise ProtocolError("bad meta storage size")
            last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if all(shape) else -1
            if (last + 1) * dtype.itemsize > size:
                raise ProtocolError("a meta tensor's view reaches past its storage")
            storage = torch.UntypedStorage(size, device="meta")
            device = torch.device("meta")
        elif kind == "cuda":
            torch.cuda._lazy_init()
            storage = torch.UntypedStorage._new_shared_cuda(
                int(where["device"]), _unb64(where["handle"]), int(where["size"]), int(where["offset"]),
                _unb64(where["ref_counter_handle"]), int(where["ref_counter_offset"]),
                _unb64(where["event_handle"]), bool(where["event_sync_required"]),
            )  # fmt: skip
            device = torch.device("cuda", int(where["device"]))
        else:
            raise ProtocolError(f"unknown storage kind {kind!r}")
        t = torch.empty(0, dtype=dtype, device=device)
        t.set_(storage, offset, shape, stride)  # checks that the view fits in the storage
        return t
    except ProtocolError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
        raise ProtocolError(f"bad tensor in message: {type(e).__name__}: {e}") from e


def _ints(xs: Any) -> bool:
    return isinstance(xs, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in xs)


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
