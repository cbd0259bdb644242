"""Inductor's own Triton kernels for this problem (torch.compile, max-autotune), made standalone.

Valid only at the input shapes and strides Inductor compiled for (sizes are literals in the kernels);
each launch carries the config Inductor's autotuner chose.
"""


import torch
import triton
import triton.language as tl


@triton.jit
def triton_red_fused_mean_pow_sub_0(in_ptr0, in_ptr1, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 8192
    r0_numel = 131072
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp6 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 131072*x0), None, eviction_policy='evict_first').to(tl.float32)
        tmp1 = tl.load(in_ptr1 + (r0_1 + 131072*x0), None, eviction_policy='evict_first').to(tl.float32)
        tmp2 = tmp0 - tmp1
        tmp3 = tmp2 * tmp2
        tmp4 = tmp3.to(tl.float32)
        tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
        tmp7 = _tmp6 + tmp5
        _tmp6 = tmp7
    tmp6 = tl.sum(_tmp6, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp6, None)


@triton.jit
def triton_red_fused_mean_pow_sub_1(in_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 8192
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_0 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_0), r0_mask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tmp4 = tl.full([1, 1], 1073741824.0, tl.float32)
    tmp5 = (tmp2 / tmp4)
    tmp6 = tmp5.to(tl.float32)
    tl.store(out_ptr1 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp6, None)


_SHAPES = {'input0': ((32768, 32768), (32768, 1)), 'input1': ((32768, 32768), (32768, 1))}


def _check_shapes(**tensors):
    for name, t in tensors.items():
        size, stride = _SHAPES[name]
        if tuple(t.shape) != size or tuple(t.stride()) != stride:
            raise ValueError(
                f"this seed holds Inductor's kernels compiled for {name} of shape {size}, strides {stride}; "
                f"got shape {tuple(t.shape)}, strides {tuple(t.stride())}"
            )


def _grid(meta, axes, whole):
    for numel, block in whole:
        if numel % meta[block]:
            raise ValueError(
                f"{block}={meta[block]} does not divide {numel}: Inductor compiled this kernel without bounds "
                "masks on that axis, so its blocks must divide the size"
            )
    return tuple(triton.cdiv(numel, meta[block] if isinstance(block, str) else block) for numel, block in axes)


def kernel_function(input0, input1):
    _check_shapes(input0=input0, input1=input1)
    arg0_1 = input0
    arg1_1 = input1
    device = input0.device
    buf1 = torch.empty_strided((8192,), (1,), dtype=torch.float32, device=device)
    triton_red_fused_mean_pow_sub_0[lambda meta: _grid(meta, [(8192, 'XBLOCK')], [(131072, 'R0_BLOCK'), (8192, 'XBLOCK')])](arg0_1, arg1_1, buf1, 8192, 131072, XBLOCK=1, R0_BLOCK=8192, num_warps=16, num_stages=1)
    del arg0_1
    del arg1_1
    buf3 = torch.empty_strided((), (), dtype=torch.bfloat16, device=device)
    triton_red_fused_mean_pow_sub_1[lambda meta: _grid(meta, [(1, 'XBLOCK')], [(1, 'XBLOCK')])](buf1, buf3, 1, 8192, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del buf1
    return buf3
