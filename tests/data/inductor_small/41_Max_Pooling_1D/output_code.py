# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph

def get_raw_stream(_):
    return 0


aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/torchinductor_root/xp/cxpnud7rbmgfxlvxjbvgs7qnplm2h7fzgv7rujev7wltly56gvpd.py
# Topologically Sorted Source Nodes: [max_pool1d], Original ATen: [aten.unsqueeze, aten.max_pool2d_with_indices]
# Source node to ATen node mapping:
#   max_pool1d => _low_memory_max_pool_with_offsets, unsqueeze
# Graph fragment:
#   %arg0_1 : Tensor "bf16[2, 3, 300][900, 300, 1]cpu" = PlaceHolder[target=arg0_1]
#   %unsqueeze : Tensor "bf16[2, 3, 1, 300][900, 300, 300, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg0_1, -2), kwargs = {})
#   %_low_memory_max_pool_with_offsets : [num_users=1] = call_function[target=torch.ops.prims._low_memory_max_pool_with_offsets.default](args = (%unsqueeze, [1, 8], [1, 1], [0, 4], [1, 3], False), kwargs = {})
#   return %getitem
triton_poi_fused_max_pool2d_with_indices_unsqueeze_0 = async_compile.triton('triton_poi_fused_max_pool2d_with_indices_unsqueeze_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_max_pool2d_with_indices_unsqueeze_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 8, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': set(), 'tiling_scores': {'x': 34440}, 'backend_hash': '0000000000000000000000000000000000000000000000000000000000000000', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_max_pool2d_with_indices_unsqueeze_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1722
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % 287)
    x1 = xindex // 287
    x2 = xindex
    tmp0 = tl.full([1], 0, tl.int64)
    tmp1 = tmp0 >= tmp0
    tmp2 = tl.full([1], 1, tl.int64)
    tmp3 = tmp0 < tmp2
    tmp4 = tmp1 & tmp3
    tmp5 = ((-4) + x0).to(tl.int32)
    tmp6 = tmp5 >= tmp0
    tmp7 = tl.full([1], 300, tl.int64)
    tmp8 = tmp5 < tmp7
    tmp9 = tmp6 & tmp8
    tmp10 = tmp4 & tmp9
    tmp11 = tl.load(in_ptr0 + ((-4) + x0 + 300*x1), tmp10 & xmask, other=float("-inf")).to(tl.float32)
    tmp12 = ((-1) + x0).to(tl.int32)
    tmp13 = tmp12 >= tmp0
    tmp14 = tmp12 < tmp7
    tmp15 = tmp13 & tmp14
    tmp16 = tmp4 & tmp15
    tmp17 = tl.load(in_ptr0 + ((-1) + x0 + 300*x1), tmp16 & xmask, other=float("-inf")).to(tl.float32)
    tmp18 = triton_helpers.maximum(tmp11, tmp17)
    tmp19 = (2 + x0).to(tl.int32)
    tmp20 = tmp19 >= tmp0
    tmp21 = tmp19 < tmp7
    tmp22 = tmp20 & tmp21
    tmp23 = tmp4 & tmp22
    tmp24 = tl.load(in_ptr0 + (2 + x0 + 300*x1), tmp23 & xmask, other=float("-inf")).to(tl.float32)
    tmp25 = triton_helpers.maximum(tmp18, tmp24)
    tmp26 = (5 + x0).to(tl.int32)
    tmp27 = tmp26 >= tmp0
    tmp28 = tmp26 < tmp7
    tmp29 = tmp27 & tmp28
    tmp30 = tmp4 & tmp29
    tmp31 = tl.load(in_ptr0 + (5 + x0 + 300*x1), tmp30 & xmask, other=float("-inf")).to(tl.float32)
    tmp32 = triton_helpers.maximum(tmp25, tmp31)
    tmp33 = (8 + x0).to(tl.int32)
    tmp34 = tmp33 >= tmp0
    tmp35 = tmp33 < tmp7
    tmp36 = tmp34 & tmp35
    tmp37 = tmp4 & tmp36
    tmp38 = tl.load(in_ptr0 + (8 + x0 + 300*x1), tmp37 & xmask, other=float("-inf")).to(tl.float32)
    tmp39 = triton_helpers.maximum(tmp32, tmp38)
    tmp40 = (11 + x0).to(tl.int32)
    tmp41 = tmp40 >= tmp0
    tmp42 = tmp40 < tmp7
    tmp43 = tmp41 & tmp42
    tmp44 = tmp4 & tmp43
    tmp45 = tl.load(in_ptr0 + (11 + x0 + 300*x1), tmp44 & xmask, other=float("-inf")).to(tl.float32)
    tmp46 = triton_helpers.maximum(tmp39, tmp45)
    tmp47 = (14 + x0).to(tl.int32)
    tmp48 = tmp47 >= tmp0
    tmp49 = tmp47 < tmp7
    tmp50 = tmp48 & tmp49
    tmp51 = tmp4 & tmp50
    tmp52 = tl.load(in_ptr0 + (14 + x0 + 300*x1), tmp51 & xmask, other=float("-inf")).to(tl.float32)
    tmp53 = triton_helpers.maximum(tmp46, tmp52)
    tmp54 = (17 + x0).to(tl.int32)
    tmp55 = tmp54 >= tmp0
    tmp56 = tmp54 < tmp7
    tmp57 = tmp55 & tmp56
    tmp58 = tmp4 & tmp57
    tmp59 = tl.load(in_ptr0 + (17 + x0 + 300*x1), tmp58 & xmask, other=float("-inf")).to(tl.float32)
    tmp60 = triton_helpers.maximum(tmp53, tmp59)
    tl.store(out_ptr0 + (x2), tmp60, xmask)
''', device_str='cpu')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, = args
        args.clear()
        assert_size_stride(arg0_1, (2, 3, 300), (900, 300, 1), 'input')
        buf0 = empty_strided_cpu((2, 3, 1, 287), (861, 287, 287, 1), torch.bfloat16)
        # Topologically Sorted Source Nodes: [max_pool1d], Original ATen: [aten.unsqueeze, aten.max_pool2d_with_indices]
        raw_streamNone = get_raw_stream(None)
        triton_poi_fused_max_pool2d_with_indices_unsqueeze_0.run(arg0_1, buf0, 1722, stream=raw_streamNone)
        del arg0_1
        return (reinterpret_tensor(buf0, (2, 3, 287), (861, 287, 1), 0), )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((2, 3, 300), (900, 300, 1), device='cpu', dtype=torch.bfloat16)
    return [arg0_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
