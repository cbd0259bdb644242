"""Tensors shared between the judge and the kernel's process: no copies, no pickle, checked metadata."""

from __future__ import annotations

import json
import os
import socket

import pytest
import torch

from workers.harness.shared_tensors import Channel, ChannelTimeout, ProtocolError, decode_value, encode_value


def test_tensors_are_shared_both_ways_without_copies() -> None:
    judge, runner = Channel.pair()
    x = torch.rand(4, 5, dtype=torch.bfloat16)
    tensors: list[torch.Tensor] = []
    values = {"weight": encode_value(x[1:], tensors), "kernel_size": encode_value((3, 5), tensors), "eps": 1e-5}
    pid = os.fork()
    if pid == 0:  # the other process: writes into what it was given, answers with a tensor of its own
        code = 1
        try:
            judge.close()
            body, got = runner.recv()
            weight = decode_value(body["values"]["weight"], got)
            weight.zero_()
            out = torch.full((3,), 7.0)
            runner.send({"kernel_size": decode_value(body["values"]["kernel_size"], got)}, [out, out[1:]])
            runner.recv()
            code = 0
        finally:
            os._exit(code)
    runner.close()
    judge.send({"values": values}, tensors)
    body, outs = judge.recv()
    assert body == {"kernel_size": [3, 5]}  # sent back as plain JSON: a list
    assert torch.equal(outs[0], torch.full((3,), 7.0)) and torch.equal(outs[1], torch.full((2,), 7.0))
    assert x[1:].eq(0).all() and x[0].ne(0).any()  # the runner's write landed in the judge's tensor
    judge.send({"done": True})
    os.waitpid(pid, 0)


def test_bad_metadata_is_a_protocol_error_not_a_crash() -> None:
    a, b = Channel.pair()
    fake = {"body": {}, "tensors": [{"dtype": "float32", "shape": [10**6], "stride": [1], "offset": 0,
                                     "storage": {"kind": "fd", "size": 16}, "fd_index": 0}]}  # fmt: skip
    r, w = os.pipe()
    socket.send_fds(a.sock, [json.dumps(fake).encode()], [r])
    with pytest.raises(ProtocolError):
        b.recv()
    for bad in ({"body": {}, "tensors": [{"dtype": "object", "shape": [1], "stride": [1], "offset": 0}]}, "nope"):
        a.sock.send(json.dumps(bad).encode())
        with pytest.raises(ProtocolError):
            b.recv()
    os.close(r), os.close(w)


def test_a_receive_with_a_deadline_times_out_and_then_still_gets_the_next_message() -> None:
    a, b = Channel.pair()
    with pytest.raises(ChannelTimeout):
        b.recv(timeout_s=0.05)
    a.send({"op": "late"})
    assert b.recv(timeout_s=1.0) == ({"op": "late"}, [])


def test_meta_tensors_cross_as_shapes_strides_and_offsets_and_a_view_past_its_storage_is_refused() -> None:
    """``compile_ahead`` sends the inputs' shapes as meta tensors: no memory, the same layout."""
    a, b = Channel.pair()
    x = torch.empty(8, 6, dtype=torch.bfloat16, device="meta")[:, 2:4]
    tensors: list[torch.Tensor] = []
    a.send({"x": encode_value(x, tensors)}, tensors)
    body, got = b.recv()
    y = decode_value(body["x"], got)
    assert y.device.type == "meta" and y.dtype == x.dtype
    assert (y.shape, y.stride(), y.storage_offset()) == (x.shape, x.stride(), x.storage_offset())
    past = {"body": {}, "tensors": [{"dtype": "float32", "shape": [100], "stride": [1], "offset": 0,
                                     "storage": {"kind": "meta", "size": 16}}]}  # fmt: skip
    a.sock.send(json.dumps(past).encode())
    with pytest.raises(ProtocolError):
        b.recv()
