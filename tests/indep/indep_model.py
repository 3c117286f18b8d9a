"""Job model of tests/indep/indep_sim.py: kernel catalogue, layout, faults and per-rank programs."""
import os, random

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DDL_DIR = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared', 'docs', 'nsys-ddl'))
DDL = {'3.25': ('nsys-2026.2.1_schema-3.25.0_lazy-partial.sql', '2026.2.1.210', True),
       '3.0': ('nsys-2022.4.2_schema-3.0.0_full.sql', '2022.4.2.1-46ef1aa', False)}
VM = 1 << 48                     # <hw:8><vm:8><pid:24><tid:24>; the samples use vm 1, hw 0
# program op codes: kernel, blocking collective, host work, pinned memcpy, step-end synchronize, marker
# start/end, iteration start; async (overlapped) collective, wait for the async ones, tiny-kernel storm,
# pageable H2D copies, GC pause, one-time JIT / module loading
K, COLL, CPU, MCPY, SYNC, MSTART, MEND, ITER, ACOLL, WAIT, STORM, PCOPY, GC, JIT = range(14)
APP, PWAIT = 14, 15              # isend/irecv on the link's stream (gpipe, interleaved); req.wait() of an irecv

# ---------------------------------------------------------------- kernel catalogue
# role -> (modern shortName, modern demangled, 2022 shortName, 2022 demangled, base us, grid)
KERNELS = {
 'ln_f': ('vectorized_layer_norm_kernel', 'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>(int, float, const c10::BFloat16 *, const c10::BFloat16 *, const c10::BFloat16 *, float *, float *, c10::BFloat16 *)', 'vectorized_layer_norm_kernel', 'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, const c10::BFloat16 *, const c10::BFloat16 *, const c10::BFloat16 *, float *, float *, c10::BFloat16 *)', 35, 4096),
 'qkv': ('nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN', None, 'sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel', None, 420, 264),
 'attn_f': ('flash_fwd_kernel', 'void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)', 'fmha_fwd_loop_kernel', 'void fmha::fmha_fwd_loop_kernel<FMHA_kernel_traits<256u, 64u, 16u, 1u, 4u, 8u, unsigned int, __nv_bfloat16>, true, false, false>(FMHA_fprop_params)', 310, 512),
 'proj': ('nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT', None, 'ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn', None, 150, 132),
 'add': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char *, 3UL>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char *, 3UL>)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char *, 3>)', 30, 2048),
 'fc1': ('nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNN', None, 'ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn', None, 600, 264),
 'gelu': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2UL>>(int, T2, T3)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], at::detail::Array<char *, 2>>(int, T2, T3)', 60, 4096),
 'fc2': ('nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT', None, 'ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn', None, 580, 264),
 'ln_b': ('layer_norm_grad_input_kernel_vectorized', 'void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(const c10::BFloat16 *, const c10::BFloat16 *, const float *, const float *, const c10::BFloat16 *, c10::BFloat16 *, int)', 'layer_norm_grad_input_kernel', 'void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<c10::BFloat16, float>(const c10::BFloat16 *, const c10::BFloat16 *, const float *, const float *, const c10::BFloat16 *, c10::BFloat16 *, int)', 55, 4096),
 'ln_gb': ('GammaBetaBackwardCUDAKernel', None, 'GammaBetaBackwardCUDAKernel', None, 40, 128),
 'dgemm': ('nvjet_tst_192x192_64x4_2x1_v_bz_coopB_NNN', None, 'ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn', None, 560, 264),
 'wgemm': ('nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTN', None, 'ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nt', None, 590, 264),
 'gelu_b': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16, c10::BFloat16) (instance 1)], std::array<char *, 3UL>>(int, T2, T3)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16, c10::BFloat16) (instance 1)], at::detail::Array<char *, 3>>(int, T2, T3)', 70, 4096),
 'attn_b': ('flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel', 'void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t>>, true, false, false, false, false, true, false>(flash::Flash_bwd_params)', 'fmha_dgrad_fp16_sm80_loop_kernel', 'void fmha::fmha_dgrad_fp16_sm80_loop_kernel<FMHA_kernel_traits<256u, 64u, 16u, 1u, 8u, 8u, unsigned int, __nv_bfloat16>, false, false>(FMHA_dgrad_params)', 720, 512),
 'embed_f': ('indexSelectLargeIndex', 'void indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<const c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<const long, unsigned int>, int, int, unsigned int, unsigned int, long)', 'indexSelectLargeIndex', None, 45, 1024),
 'embed_b': ('embedding_backward_feature_kernel', 'void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, long>(const long *, const c10::BFloat16 *, c10::BFloat16 *, int, long, int)', 'embedding_backward_feature_kernel', None, 160, 2048),
 'logits': ('nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT', None, 'ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn', None, 900, 264),
 'xent_f': ('cunn_SoftMaxForward', 'void (anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, float, (anonymous namespace)::LogSoftMaxForwardEpilogue>(float *, const c10::BFloat16 *, int)', 'cunn_SoftMaxForward', None, 210, 4096),
 'xent_b': ('cunn_SoftMaxBackward', 'void (anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, float, (anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16 *, const float *, const float *, int)', 'cunn_SoftMaxBackward', None, 260, 4096),
 'adam': ('multi_tensor_apply_kernel', 'void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float, int>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile *, TensorListMetadata<4>, AdamFunctor<float, float, int>, float, float, float, float, float, float, adamMode_t, float)', 'multi_tensor_apply_kernel', None, 900, 320),
 'l2norm': ('multi_tensor_apply_kernel', 'void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<float, 512, 1>, float *, float *, bool, int>(long, int volatile *, TensorListMetadata<1>, L2NormFunctor<float, 512, 1>, float *, float *, bool, int)', 'multi_tensor_apply_kernel', None, 260, 320),
 'randn': ('distribution_elementwise_grid_stride_kernel', 'void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, void at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)], void at::native::<unnamed>::distribution_nullary_kernel<c10::Half, float, float4, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)], void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T4, const T5 &, T6)::[lambda(int, float) (instance 1)]>(int, at::PhiloxCudaState, T3, T4)', 'distribution_elementwise_grid_stride_kernel', 'void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, (int)4, void at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)], void at::native::(anonymous namespace)::distribution_nullary_kernel<c10::Half, float, float4, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)], void at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T4, const T5 &, T6)::[lambda(int, float) (instance 1)]>(int, at::PhiloxCudaState, T3, T4)', 40, 1056),   # torch.randn on the GPU (sample nvfuser_report1)
 'nvfuser': ('nvfuser_none_f0_c0_r0_g0', None, 'kernel1', None, 135, 132),   # nvFuser/NVRTC names (sample nvfuser_report1)
 'tiny_mul': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, 2UL>>(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, 2UL>)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, at::detail::Array<char *, 2>>(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, at::detail::Array<char *, 2>)', 3, 1),
 'tiny_add': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char *, 3UL>>(int, at::native::CUDAFunctor_add<float>, std::array<char *, 3UL>)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)', 3, 1),
 'tiny_fill': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1UL>>(int, at::native::FillFunctor<float>, std::array<char *, 1UL>)', 'vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char *, 1>>(int, at::native::FillFunctor<float>, at::detail::Array<char *, 1>)', 2, 1),
 # FSDP-style copy-in / copy-out around a collective, on the NCCL stream (torch.cat / split_with_sizes_copy)
 'pack': ('CatArrayBatchedCopy_aligned16_contig', 'void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 1, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u> *, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)', 'CatArrayBatchedCopy', 'void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 1, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u> *, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)', 0, 1024),
 'unpack': ('split_with_sizes_copy_out_contiguous_no_cast_kernel', 'void at::native::(anonymous namespace)::split_with_sizes_copy_out_contiguous_no_cast_kernel(char **, const long *, const long *, long, long)', 'unrolled_elementwise_kernel', 'void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], at::detail::Array<char *, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>>(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], at::detail::Array<char *, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)', 0, 1024),
 'scale': ('multi_tensor_apply_kernel', 'void multi_tensor_apply_kernel<TensorListMetadata<2>, ScaleFunctor<float, float>, float *, float>(long, int volatile *, TensorListMetadata<2>, ScaleFunctor<float, float>, float *, float)', 'multi_tensor_apply_kernel', None, 180, 320),
}
FWD_LAYER = ['ln_f', 'qkv', 'attn_f', 'proj', 'TP', 'add', 'ln_f', 'fc1', 'gelu', 'fc2', 'TP', 'add']
BWD_LAYER = ['add', 'dgemm', 'wgemm', 'gelu_b', 'dgemm', 'wgemm', 'TP', 'ln_b', 'ln_gb',
             'dgemm', 'wgemm', 'attn_b', 'dgemm', 'wgemm', 'TP', 'ln_b', 'ln_gb']
# NCCL kernels: (collective, dtype) -> names for NCCL >= 2.19 and <= 2.18 (export notes 4.1)
NCCL_NEW = {('AllReduce', 'bf16'): 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL',
            ('AllReduce', 'f32'): 'ncclDevKernel_AllReduce_Sum_f32_RING_LL',
            ('ReduceScatter', 'f32'): 'ncclDevKernel_ReduceScatter_Sum_f32_RING_LL',
            ('AllGather', 'bf16'): 'ncclDevKernel_AllGather_RING_LL', ('SendRecv', ''): 'ncclDevKernel_SendRecv'}
NCCL_OLD = {('AllReduce', 'bf16'): 'ncclKernel_AllReduce_RING_LL_Sum_bf16',
            ('AllReduce', 'f32'): 'ncclKernel_AllReduce_RING_LL_Sum_float',
            ('ReduceScatter', 'f32'): 'ncclKernel_ReduceScatter_RING_LL_Sum_float',
            ('AllGather', 'bf16'): 'ncclKernel_AllGather_RING_LL_Sum_int8_t',
            ('SendRecv', ''): 'ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t'}
NVTX_API = {'AllReduce': 'ncclAllReduce', 'ReduceScatter': 'ncclReduceScatter', 'AllGather': 'ncclAllGather'}


class Job:
    def __init__(self, a):
        self.a = a
        self.tp, self.pp, self.dp = (int(x) for x in a.layout.lower().split('x'))
        self.n = self.tp * self.pp * self.dp
        self.G = a.gpus_per_host
        assert self.n % self.G == 0 or self.n < self.G, 'ranks must fill whole hosts (or one host in part)'
        self.H = -(-self.n // self.G)
        self.M = a.microbatches or (max(4, 2 * self.pp) if self.pp > 1 else 2)
        self.sched = getattr(a, 'schedule', '1f1b')
        self.V = getattr(a, 'virtual_stages', 1)
        if not hasattr(a, 'balanced_stages'):
            a.balanced_stages = False
        if self.sched == 'interleaved':
            if self.pp < 2 or self.V < 2:
                raise SystemExit('--schedule interleaved needs PP >= 2 and --virtual-stages >= 2')
            if self.M % self.pp:
                raise SystemExit('interleaved 1F1B: microbatches (%d) must be a multiple of PP (%d)' % (self.M, self.pp))
            if a.layers % self.V:
                raise SystemExit('interleaved 1F1B: --layers (%d per stage) must be a multiple of --virtual-stages' % a.layers)
        elif self.V != 1:
            raise SystemExit('--virtual-stages needs --schedule interleaved')
        if self.sched != 'gpipe':
            assert self.M >= self.pp, '1F1B needs microbatches >= pp'
        self.Lc = a.layers // self.V                 # transformer layers per model chunk
        self.rng = random.Random(a.seed)
        self.new = a.schema == '3.25'
        self.faults = [parse_fault(f, self.n, self.pp) for f in a.fault]
        self.comms = {}                              # commkey -> (kind, members)

    def coords(self, r):
        return r % self.tp, (r // self.tp) % self.dp, r // (self.tp * self.dp)   # tp, dp, pp

    def rank(self, t, d, p):
        return t + self.tp * (d + self.dp * p)

    def host(self, r):
        return r // self.G

    def on(self, kind, r):
        """Faults of this kind that apply to rank r (rank R or 'all')."""
        return [f for f in self.faults if f['kind'] == kind and f.get('rank') in (r, 'all')]


def parse_fault(s, n, pp=1):
    f = s.split(':')
    kind = f[0]

    def rank(x):
        if x == 'all':
            return 'all'
        r = int(x)
        if not 0 <= r < n:
            raise SystemExit('fault %s: rank %d outside 0..%d' % (s, r, n - 1))
        return r
    try:
        if kind in ('slow_gpu', 'extra_work'):
            return {'kind': kind, 'rank': rank(f[1]), 'iter': int(f[2]), 'factor': float(f[3])}
        if kind == 'host_delay':
            return {'kind': kind, 'rank': rank(f[1]), 'iter': int(f[2]), 'ms': float(f[3])}
        if kind == 'slow_link':
            return {'kind': kind, 'hosts': sorted([int(f[1]), int(f[2])]), 'factor': float(f[3]),
                    'iter': int(f[4]) if len(f) > 4 else 0}
        if kind in ('crash', 'stuck'):
            return {'kind': kind, 'rank': rank(f[1]), 'iter': int(f[2])}
        if kind == 'tiny_kernels':
            return {'kind': kind, 'rank': rank(f[1]), 'count': int(f[2]), 'iter': int(f[3]) if len(f) > 3 else 0}
        if kind in ('copy_bubbles', 'pageable_h2d'):
            return {'kind': kind, 'rank': rank(f[1]), 'mib': float(f[2]), 'iter': int(f[3]) if len(f) > 3 else 0}
        if kind == 'gc_pause':
            every = int(f[2])
            if every < 1:
                raise SystemExit('fault %s: EVERY must be >= 1' % s)
            return {'kind': kind, 'rank': rank(f[1]), 'every': every, 'ms': float(f[3]), 'iter': every}
        if kind == 'stage_imbalance':
            st = int(f[1])
            if not 0 <= st < pp:
                raise SystemExit('fault %s: stage %d outside 0..%d' % (s, st, pp - 1))
            return {'kind': kind, 'stage': st, 'factor': float(f[2]), 'iter': int(f[3]) if len(f) > 3 else 0}
        if kind == 'slow_p2p':
            return {'kind': kind, 'factor': float(f[1]), 'iter': int(f[2]) if len(f) > 2 else 0}
        if kind == 'nccl_bracketed':
            return {'kind': kind, 'rank': rank(f[1]) if len(f) > 1 else 'all', 'iter': 0}
    except (IndexError, ValueError):
        raise SystemExit('bad fault spec ' + s)
    raise SystemExit('unknown fault ' + s)


# ---------------------------------------------------------------- programs (what each rank issues)
def build_program(job, r):
    """The ordered list of CPU/GPU operations one rank issues, all iterations."""
    import indep_pipe as pipe
    tp_i, dp_i, pp_i = job.coords(r)
    P, M, L = job.pp, job.M, job.a.layers
    plan = None
    if job.sched != '1f1b':
        if getattr(job, 'plan', None) is None:
            job.plan = pipe.plan(job)
        plan = job.plan
    seq = {}
    ops = []
    extra = job.on('extra_work', r)
    storms = job.on('tiny_kernels', r)
    pcopy = job.on('pageable_h2d', r)
    bubbles = job.on('copy_bubbles', r)
    gcs = job.on('gc_pause', r)
    acc = [0.0]

    def coll(key, kind, members, coll_name, dtype, nbytes, api, asyn=False, code=None):
        job.comms.setdefault(key, (kind, tuple(members)))
        seq[key] = seq.get(key, 0) + 1
        code = code if code is not None else (ACOLL if asyn else COLL)
        ops.append((code, (key, seq[key]), coll_name, dtype, nbytes, api))
        return (key, seq[key])

    tp_key = ('tp', dp_i, pp_i)
    tp_members = [job.rank(t, dp_i, pp_i) for t in range(job.tp)]
    dp_key = ('dp', tp_i, pp_i)
    dp_members = [job.rank(tp_i, d, pp_i) for d in range(job.dp)]
    act = job.a.act_mb * (1 << 20)
    gb = job.a.grad_mb * (1 << 20)
    dp_coll = ('AllReduce', 'f32', 'ncclAllReduce') if job.a.dp_mode == 'ar' else ('ReduceScatter', 'f32', 'ncclReduceScatter')
    overlap = job.a.dp_overlap and job.dp > 1

    def kern(role, it, w=None):
        # w: (duration scale, (iteration, 'F'|'B', microbatch, chunk)) for the kernels of a microbatch's pass
        op = (K, role) if w is None else (K, role, w[0], w[1])
        ops.append(op)
        for f in extra:
            if it >= f['iter']:
                acc[0] += f['factor'] - 1.0
                while acc[0] >= 1.0:
                    ops.append(op); acc[0] -= 1.0

    def tp_ar():
        if job.tp > 1:
            coll(tp_key, 'tp', tp_members, 'AllReduce', 'bf16', act, 'ncclAllReduce')

    def fwd(it, m, c):
        for f in pcopy:                                # the microbatch built on the CPU, copied pageable
            if it >= f['iter']:
                ops.append((PCOPY, int(f['mib'] * (1 << 20)), 'pageable_h2d'))
        imb, tag = pipe.imbalance(job, pp_i, it), (it, 'F', m, c)
        lw = (imb * pipe.layer_scale(job, pp_i, c, True), tag)
        pre, post = pipe.extra_roles(job, pp_i, c, True)   # embedding on stage 0, output layer + loss on the last
        for role in pre: kern(role, it, (imb, tag))
        for _ in range(job.Lc):
            for role in FWD_LAYER:
                tp_ar() if role == 'TP' else kern(role, it, lw)
        for role in post: kern(role, it, (imb, tag))
        for f in storms:                               # loss.item(), then per-op metrics on tiny tensors
            if it >= f['iter']:
                ops.append((STORM, f['count']))

    def bwd(it, last, m, c):
        # DDP / Megatron overlap_grad_reduce: in the last microbatch's backward a bucket is reduced as soon as
        # its layers' gradients are final, on the DP communicator's own stream, while backward goes on
        # (interleaved: in the last microbatch's backward of each model chunk, for that chunk's layers)
        kb = max(1, job.a.dp_bucket_layers)
        buck = overlap and last
        imb, tag = pipe.imbalance(job, pp_i, it), (it, 'B', m, c)
        lw = (imb * pipe.layer_scale(job, pp_i, c, False), tag)
        pre, post = pipe.extra_roles(job, pp_i, c, False)
        for role in pre: kern(role, it, (imb, tag))
        done = 0
        for j in range(job.Lc):
            for role in BWD_LAYER:
                tp_ar() if role == 'TP' else kern(role, it, lw)
            done += 1
            final = j == job.Lc - 1
            if buck and (done == kb or final) and not (final and post):
                coll(dp_key, 'dp', dp_members, dp_coll[0], dp_coll[1], int(gb * done / L), dp_coll[2], asyn=True)
                done = 0
        if post:
            for role in post: kern(role, it, (imb, tag))
            if buck:                                   # the embedding gradient joins the last bucket
                coll(dp_key, 'dp', dp_members, dp_coll[0], dp_coll[1], int(gb * max(done, 1) / L), dp_coll[2], asyn=True)

    def p2p(peer_stage, api, link='pp', code=COLL):
        # one 2-rank communicator per stage link; 'ppw': the interleaved wrap-around link (last -> first stage)
        peer = job.rank(tp_i, dp_i, peer_stage)
        a, b = sorted((r, peer))
        return coll((link, a, b), 'pp', (a, b), 'SendRecv', '', act, api, code=code)

    for it in range(job.a.iters):
        ops.append((ITER, it))
        ops.append((CPU, 'iter'))                      # dataloader / host work at the step start
        if job.a.markers: ops.append((MSTART, it))
        ops.append((MCPY, 1, 4 * 4096 * 8 * 2))        # token ids + labels, pinned host -> device
        if it == 0 and job.a.one_shot:                 # inputs made on the GPU first on even seeds (as in the
            if job.a.seed % 2 == 0:                    # nvFuser sample), then the fused op's one-time compile
                ops += [(K, 'randn'), (K, 'randn')]
            ops.append((JIT,))                         # nvFuser/NVRTC compile + module loading, once
        for f in bubbles:                              # a large host-side array copied pageable each step
            if it >= f['iter']:
                ops.append((PCOPY, int(f['mib'] * (1 << 20)), 'copy_bubbles'))
        if job.sched == '1f1b':                         # the original hand-ordered 1F1B
            W = min(P - pp_i - 1, M)
            sched = []
            for i in range(W):
                sched += [('rf', i), ('F', i), ('sf', i)]
            for k in range(M - W):
                i = W + k
                sched += [('rf', i), ('F', i), ('rb', k), ('sf', i), ('B', k), ('sb', k)]
            for k in range(M - W, M):
                sched += [('rb', k), ('B', k), ('sb', k)]
        else:                                          # gpipe / interleaved: indep_pipe.plan
            sched = plan[pp_i]
        gc_at, recvs = {}, {}
        for f in gcs:                                  # a pause somewhere in the middle of the step
            if it > 0 and it % f['every'] == 0:
                g = random.Random(job.a.seed * 1000003 + r * 7919 + it)
                gc_at[g.randint(max(1, len(sched) // 5), max(1, (4 * len(sched)) // 5))] = f['ms']
        for pos, item in enumerate(sched):
            op, m = item[0], item[1]
            if pos in gc_at:
                ops.append((GC, gc_at[pos]))
            c = item[2] if len(item) > 2 and op in 'FB' else 0
            if len(item) > 3 and op in 'FB':
                for t in item[3]:                      # req.wait() of the irecv this pass needs
                    ops.append((PWAIT, recvs.pop(t)))
            if op == 'F': fwd(it, m, c)
            elif op == 'B': bwd(it, m == M - 1, m, c)
            elif op == 'S': p2p(item[2], 'ncclSend', m, APP)
            elif op == 'R': recvs[item[3]] = p2p(item[2], 'ncclRecv', m, APP)
            elif op == 'rf' and pp_i > 0: p2p(pp_i - 1, 'ncclRecv')
            elif op == 'sf' and pp_i < P - 1: p2p(pp_i + 1, 'ncclSend')
            elif op == 'rb' and pp_i < P - 1: p2p(pp_i + 1, 'ncclRecv')
            elif op == 'sb' and pp_i > 0: p2p(pp_i - 1, 'ncclSend')
        buckets = [gb * 0.4, gb * 0.35, gb * 0.25]
        if overlap:
            ops.append((WAIT,))                        # optimizer: work.wait() on every bucket
        elif job.dp > 1:
            for b in buckets:
                coll(dp_key, 'dp', dp_members, dp_coll[0], dp_coll[1], int(b), dp_coll[2])
        kern('l2norm', it); kern('scale', it); kern('adam', it); kern('adam', it)
        if job.dp > 1 and job.a.dp_mode == 'rsag':
            for b in buckets:
                coll(dp_key, 'dp', dp_members, 'AllGather', 'bf16', int(b / 2), 'ncclAllGather')
        if pp_i == P - 1:
            ops.append((MCPY, 2, 4))                   # loss.item()
        ops.append((SYNC,))
        if job.a.markers: ops.append((MEND, it))
    return ops
