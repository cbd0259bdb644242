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


# kernel path: /tmp/inductor-cache-zgwdbpi5/iu/ciuzr5y5nwdmblgy6kxc6nokqzw5eitygdxcs4pzimatuyzntpnc.py
# Topologically Sorted Source Nodes: [kl_div, log], Original ATen: [aten.xlogy, aten.log, aten.mul, aten.sub, aten.sum, aten.div]
# Source node to ATen node mapping:
#   kl_div => convert_element_type, convert_element_type_1, convert_element_type_2, div, eq, full_default, full_default_1, isnan, log_1, mul, mul_1, sub, sum_1, where, where_1
#   log => log
# Graph fragment:
#   %arg1_1 : Tensor "bf16[8, 64][64, 1]cpu" = PlaceHolder[target=arg1_1]
#   %arg0_1 : Tensor "bf16[8, 64][64, 1]cpu" = PlaceHolder[target=arg0_1]
#   %sum_1 : Tensor "bf16[][]cpu" = PlaceHolder[target=sum_1]
#   %convert_element_type_1 : Tensor "f32[8, 64][64, 1]cpu"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%arg1_1, torch.float32), kwargs = {})
#   %isnan : Tensor "b8[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.isnan.default](args = (%convert_element_type_1,), kwargs = {})
#   %full_default_1 : Tensor "f32[][]cpu"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], nan), kwargs = {dtype: torch.float32, layout: torch.strided, device: cpu, pin_memory: False})
#   %convert_element_type : Tensor "f32[8, 64][64, 1]cpu"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%arg1_1, torch.float32), kwargs = {})
#   %eq : Tensor "b8[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.eq.Scalar](args = (%convert_element_type, 0), kwargs = {})
#   %full_default : Tensor "f32[][]cpu"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cpu, pin_memory: False})
#   %log_1 : Tensor "f32[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.log.default](args = (%convert_element_type_1,), kwargs = {})
#   %mul_1 : Tensor "f32[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type, %log_1), kwargs = {})
#   %where : Tensor "f32[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%eq, %full_default, %mul_1), kwargs = {})
#   %where_1 : Tensor "f32[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%isnan, %full_default_1, %where), kwargs = {})
#   %convert_element_type_2 : Tensor "bf16[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%where_1, torch.bfloat16), kwargs = {})
#   %log : Tensor "bf16[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.log.default](args = (%arg0_1,), kwargs = {})
#   %mul : Tensor "bf16[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg1_1, %log), kwargs = {})
#   %sub : Tensor "bf16[8, 64][64, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_2, %mul), kwargs = {})
#   %sum_1 : Tensor "bf16[][]cpu"[num_users=1] = call_function[target=torch.ops.aten.sum.default](args = (%sub,), kwargs = {})
#   %div : Tensor "bf16[][]cpu"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%sum_1, 8), kwargs = {})
#   return %sum_1,%div
triton_per_fused_div_log_mul_sub_sum_xlogy_0 = async_compile.triton('triton_per_fused_div_log_mul_sub_sum_xlogy_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 1, 'r0_': 512},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'xnumel': 'constexpr', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {'xnumel': 1}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_per_fused_div_log_mul_sub_sum_xlogy_0', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 1, 'autotune_hints': set(), 'tiling_scores': {'r0_': 2048}, 'backend_hash': '0000000000000000000000000000000000000000000000000000000000000000', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False}
)
@triton.jit
def triton_per_fused_div_log_mul_sub_sum_xlogy_0(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 512
    R0_BLOCK: tl.constexpr = 512
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_0 = r0_index
    tmp0 = tl.load(in_ptr0 + (r0_0), None, eviction_policy='evict_first').to(tl.float32)
    tmp11 = tl.load(in_ptr1 + (r0_0), None, eviction_policy='evict_first').to(tl.float32)
    tmp1 = tmp0.to(tl.float32)
    tmp2 = libdevice.isnan(tmp1).to(tl.int1)
    tmp3 = tl.full([1, 1], 0.0, tl.float32)
    tmp4 = tmp1 == tmp3
    tmp5 = tl_math.log(tmp1)
    tmp6 = tmp1 * tmp5
    tmp7 = tl.where(tmp4, tmp3, tmp6)
    tmp8 = tl.full([1, 1], float("nan"), tl.float32)
    tmp9 = tl.where(tmp2, tmp8, tmp7)
    tmp10 = tmp9.to(tl.float32)
    tmp12 = tl_math.log(tmp11)
    tmp13 = tmp0 * tmp12
    tmp14 = tmp10 - tmp13
    tmp15 = tl.broadcast_to(tmp14, [XBLOCK, R0_BLOCK])
    tmp17 = tl.sum(tmp15, 1)[:, None].to(tl.float32)
    tmp18 = tl.full([1, 1], 8.0, tl.float32)
    tmp19 = (tmp17 / tmp18)
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp19, None)
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
        arg0_1, arg1_1 = args
        args.clear()
        assert_size_stride(arg1_1, (8, 64), (64, 1), 'input')
        assert_size_stride(arg0_1, (8, 64), (64, 1), 'input')
        buf0 = empty_strided_cpu((), (), torch.bfloat16)
        buf1 = buf0; del buf0  # reuse
        # Topologically Sorted Source Nodes: [kl_div, log], Original ATen: [aten.xlogy, aten.log, aten.mul, aten.sub, aten.sum, aten.div]
        raw_streamNone = get_raw_stream(None)
        triton_per_fused_div_log_mul_sub_sum_xlogy_0.run(buf1, arg1_1, arg0_1, 1, 512, stream=raw_streamNone)
        del arg0_1
        del arg1_1
        return (buf1, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((8, 64), (64, 1), device='cpu', dtype=torch.bfloat16)
    arg1_1 = rand_strided((8, 64), (64, 1), device='cpu', dtype=torch.bfloat16)
    return [arg0_1, arg1_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
