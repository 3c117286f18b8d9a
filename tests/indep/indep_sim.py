#!/usr/bin/python3
"""Independent Megatron-style 1F1B training replay that writes Nsight Systems SQLite exports.

Written without reading straggler-scan's analyser or its own generator (src/sim). Only the nsys
DDL dumps, the export notes, the verdict contract and the real sample exports were used.
See tests/indep/README.md for what is modelled and why.
"""
import argparse, json, math, os, random, sqlite3, datetime
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DDL_DIR = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared', 'docs', 'nsys-ddl'))
DDL = {'3.25': ('nsys-2026.2.1_schema-3.25.0_lazy-partial.sql', '2026.2.1.210', True),
       '3.0': ('nsys-2022.4.2_schema-3.0.0_full.sql', '2022.4.2.1-46ef1aa', False)}
VM = 1 << 48                     # <hw:8><vm:8><pid:24><tid:24>; the samples use vm 1, hw 0
K, COLL, CPU, MCPY, SYNC, MSTART, MEND, ITER = range(8)

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
        assert self.n % self.G == 0, 'ranks must fill whole hosts'
        self.H = self.n // self.G
        self.M = a.microbatches or (max(4, 2 * self.pp) if self.pp > 1 else 2)
        assert self.M >= self.pp, '1F1B needs microbatches >= pp'
        self.rng = random.Random(a.seed)
        self.new = a.schema == '3.25'
        self.faults = [parse_fault(f) for f in a.fault]
        self.comms = {}                              # commkey -> (kind, members)

    def coords(self, r):
        return r % self.tp, (r // self.tp) % self.dp, r // (self.tp * self.dp)   # tp, dp, pp

    def rank(self, t, d, p):
        return t + self.tp * (d + self.dp * p)

    def host(self, r):
        return r // self.G


def parse_fault(s):
    f = s.split(':')
    kind = f[0]
    if kind in ('slow_gpu', 'extra_work'):
        return {'kind': kind, 'rank': int(f[1]), 'iter': int(f[2]), 'factor': float(f[3])}
    if kind == 'host_delay':
        return {'kind': kind, 'rank': int(f[1]), 'iter': int(f[2]), 'ms': float(f[3])}
    if kind == 'slow_link':
        return {'kind': kind, 'hosts': sorted([int(f[1]), int(f[2])]), 'factor': float(f[3]),
                'iter': int(f[4]) if len(f) > 4 else 0}
    if kind in ('crash', 'stuck'):
        return {'kind': kind, 'rank': int(f[1]), 'iter': int(f[2])}
    raise SystemExit('unknown fault ' + s)


# ---------------------------------------------------------------- programs (what each rank issues)
def build_program(job, r):
    """The ordered list of CPU/GPU operations one rank issues, all iterations."""
    tp_i, dp_i, pp_i = job.coords(r)
    P, M, L = job.pp, job.M, job.a.layers
    seq = {}
    ops = []
    extra = [f for f in job.faults if f['kind'] == 'extra_work' and f['rank'] == r]
    acc = [0.0]

    def coll(key, kind, members, coll_name, dtype, nbytes, api):
        job.comms.setdefault(key, (kind, tuple(members)))
        seq[key] = seq.get(key, 0) + 1
        ops.append((COLL, (key, seq[key]), coll_name, dtype, nbytes, api))

    tp_key = ('tp', dp_i, pp_i)
    tp_members = [job.rank(t, dp_i, pp_i) for t in range(job.tp)]
    dp_key = ('dp', tp_i, pp_i)
    dp_members = [job.rank(tp_i, d, pp_i) for d in range(job.dp)]
    act = job.a.act_mb * (1 << 20)

    def kern(role, it):
        ops.append((K, role))
        for f in extra:
            if it >= f['iter']:
                acc[0] += f['factor'] - 1.0
                while acc[0] >= 1.0:
                    ops.append((K, role)); acc[0] -= 1.0

    def tp_ar():
        if job.tp > 1:
            coll(tp_key, 'tp', tp_members, 'AllReduce', 'bf16', act, 'ncclAllReduce')

    def fwd(it):
        if pp_i == 0: kern('embed_f', it)
        for _ in range(L):
            for role in FWD_LAYER:
                tp_ar() if role == 'TP' else kern(role, it)
        if pp_i == P - 1:
            kern('ln_f', it); kern('logits', it); kern('xent_f', it)

    def bwd(it):
        if pp_i == P - 1:
            kern('xent_b', it); kern('dgemm', it); kern('wgemm', it); kern('ln_b', it)
        for _ in range(L):
            for role in BWD_LAYER:
                tp_ar() if role == 'TP' else kern(role, it)
        if pp_i == 0: kern('embed_b', it)

    def p2p(peer_stage, api):
        peer = job.rank(tp_i, dp_i, peer_stage)
        a, b = sorted((r, peer))
        coll(('pp', a, b), 'pp', (a, b), 'SendRecv', '', act, api)

    for it in range(job.a.iters):
        ops.append((ITER, it))
        ops.append((CPU, 'iter'))                      # dataloader / host work at the step start
        if job.a.markers: ops.append((MSTART, it))
        ops.append((MCPY, 1, 4 * 4096 * 8 * 2))        # token ids + labels, pinned host -> device
        W = min(P - pp_i - 1, M)
        sched = []
        for i in range(W):
            sched += [('rf', i), ('F', i), ('sf', i)]
        for k in range(M - W):
            i = W + k
            sched += [('rf', i), ('F', i), ('rb', k), ('sf', i), ('B', k), ('sb', k)]
        for k in range(M - W, M):
            sched += [('rb', k), ('B', k), ('sb', k)]
        for op, _m in sched:
            if op == 'F': fwd(it)
            elif op == 'B': bwd(it)
            elif op == 'rf' and pp_i > 0: p2p(pp_i - 1, 'ncclRecv')
            elif op == 'sf' and pp_i < P - 1: p2p(pp_i + 1, 'ncclSend')
            elif op == 'rb' and pp_i < P - 1: p2p(pp_i + 1, 'ncclRecv')
            elif op == 'sb' and pp_i > 0: p2p(pp_i - 1, 'ncclSend')
        gb = job.a.grad_mb * (1 << 20)
        buckets = [gb * 0.4, gb * 0.35, gb * 0.25]
        if job.dp > 1:
            for b in buckets:
                if job.a.dp_mode == 'ar':
                    coll(dp_key, 'dp', dp_members, 'AllReduce', 'f32', int(b), 'ncclAllReduce')
                else:
                    coll(dp_key, 'dp', dp_members, 'ReduceScatter', 'f32', int(b), 'ncclReduceScatter')
        kern('l2norm', it); kern('scale', it); kern('adam', it); kern('adam', it)
        if job.dp > 1 and job.a.dp_mode == 'rsag':
            for b in buckets:
                coll(dp_key, 'dp', dp_members, 'AllGather', 'bf16', int(b / 2), 'ncclAllGather')
        if pp_i == P - 1:
            ops.append((MCPY, 2, 4))                   # loss.item()
        ops.append((SYNC,))
        if job.a.markers: ops.append((MEND, it))
    return ops


# ---------------------------------------------------------------- the replay
class RankState:
    __slots__ = ('c', 'g', 'pc', 'it', 'dead', 'rng', 'speed', 'kern', 'rt', 'nvtx', 'mcpy',
                 'sync', 'corr', 'streams', 'next_stream', 'stopped_at', 'blocked', 'iter_t')


def transfer_ns(job, kind_coll, members, nbytes, it):
    hosts = sorted({job.host(m) for m in members})
    n = len(members)
    inter = len(hosts) > 1
    bw = (job.a.inter_gbps if inter else job.a.intra_gbps) * 1e9
    lat = 20e3 if inter else 8e3
    if inter:
        edges = {tuple(sorted((hosts[i], hosts[(i + 1) % len(hosts)]))) for i in range(len(hosts))}
        for f in job.faults:
            if f['kind'] == 'slow_link' and it >= f['iter'] and tuple(f['hosts']) in edges:
                bw /= f['factor']
    if kind_coll == 'AllReduce':
        vol = 2.0 * (n - 1) / n * nbytes
    elif kind_coll in ('ReduceScatter', 'AllGather'):
        vol = (n - 1) / n * nbytes
    else:
        vol = nbytes
    return lat + vol / bw * 1e9


def simulate(job):
    a = job.a
    progs = [build_program(job, r) for r in range(job.n)]
    st = []
    for r in range(job.n):
        s = RankState()
        s.c = job.rng.randint(0, 300000); s.g = 0; s.pc = 0; s.it = -1; s.dead = None
        s.rng = random.Random(a.seed * 7919 + r)
        s.speed = min(1.02, max(0.98, s.rng.gauss(1.0, 0.007)))   # GPUs of one model differ a little
        s.kern, s.rt, s.nvtx, s.mcpy, s.sync = [], [], [], [], []
        s.corr = s.rng.randint(1000, 90000); s.streams = {}; s.stopped_at = None; s.blocked = None
        s.iter_t = {}
        st.append(s)
    fby = {}
    for f in job.faults:
        if 'rank' in f: fby.setdefault(f['rank'], []).append(f)
    pending = {}                                   # (commkey, seq) -> {rank: arrival record}
    hold = {}                                      # (rank, iter) -> ns others waited on it (last arriver)
    crng = random.Random(a.seed * 31 + 5)

    def stream_of(s, r, key):
        if key not in s.streams:                   # lazy communicator creation: first-use order
            s.next_stream += s.rng.randint(1, 6)
            s.streams[key] = s.next_stream
        return s.streams[key]

    for r, s in enumerate(st):
        s.next_stream = 12 + (200 * (r % job.G) if a.files == 'host' else 0)
        s.streams['compute'] = 7 + (8 * (r % job.G) if a.files == 'host' else 0)

    def gpu_factor(r, s):
        f = s.speed * (1.25 if s.it == 0 else 1.0)
        for x in fby.get(r, ()):
            if x['kind'] == 'slow_gpu' and s.it >= x['iter']:
                f *= x['factor']
        return f

    def launch(s, api, cls):
        s.corr += s.rng.randint(1, 3)
        t0 = s.c
        d = s.rng.randint(3500, 9000) if cls == 0 else s.rng.randint(6000, 14000)
        s.rt.append((t0, t0 + d, s.corr, api, cls))
        s.c = t0 + d
        return s.corr

    def resolve(key):
        arr = pending.pop(key)
        kind, members = job.comms[key[0]]
        any_rec = next(iter(arr.values()))
        it = max(st[m].it for m in members)
        tr = transfer_ns(job, any_rec[4], members, any_rec[5], it) * crng.gauss(1.0, 0.01)
        amax = max(v[0] for v in arr.values())
        order = sorted(arr.items(), key=lambda kv: kv[1][0])
        if len(order) > 1:
            last, prev = order[-1], order[-2]
            hk = (last[0], st[last[0]].it)
            hold[hk] = hold.get(hk, 0) + (last[1][0] - prev[1][0])
        for m, (arrival, corr, stream, kname, _c, _b) in arr.items():
            end = int(amax + tr + crng.randint(0, 2000))
            sm = st[m]
            sm.kern.append((arrival, end, stream, corr, kname, 'nccl'))
            sm.g = end
            sm.pc += 1
            sm.blocked = None
        return members

    def run(r, queue):
        s = st[r]; ops = progs[r]; rng = s.rng
        while s.pc < len(ops):
            op = ops[s.pc]; code = op[0]
            if code == K:
                corr = launch(s, 'cuLaunchKernelEx' if KERNELS[op[1]][0].startswith('nvjet') and job.new
                              else 'cudaLaunchKernel_v7000', 1 if KERNELS[op[1]][0].startswith('nvjet') and job.new else 0)
                start = max(s.g, s.c + rng.randint(1000, 3000))
                dur = KERNELS[op[1]][4] * 1000 * gpu_factor(r, s) * math.exp(rng.gauss(0, 0.02))
                s.kern.append((start, start + int(dur), s.streams['compute'], corr, op[1], 'k'))
                s.g = start + int(dur)
                s.c += rng.randint(8000, 30000)     # python/framework time between launches
                s.pc += 1
            elif code == COLL:
                if s.blocked is not None:
                    return                        # still waiting for the others
                key, cname, dtype, nbytes, api = op[1], op[2], op[3], op[4], op[5]
                t0 = s.c
                s.c += rng.randint(4000, 12000)
                corr = launch(s, 'cuLaunchKernelEx' if job.new else 'cudaLaunchKernelExC_v11060', 1 if job.new else 0)
                s.c += rng.randint(1500, 4000)
                s.nvtx.append((t0, s.c, api, 1))
                arrival = max(s.g, s.c + rng.randint(1000, 4000))
                kname = (NCCL_NEW if job.new else NCCL_OLD)[(cname, dtype)]
                pend = pending.setdefault(key, {})
                pend[r] = (arrival, corr, stream_of(s, r, key[0]), kname, cname, nbytes)
                s.blocked = key
                s.c += rng.randint(5000, 20000)
                if len(pend) == len(job.comms[key[0]][1]):
                    for m in resolve(key):
                        if m != r: queue.append(m)
                else:
                    return
            elif code == CPU:
                base = rng.uniform(0.4e6, 1.6e6) + (30e6 if s.it == 0 else 0)
                for x in fby.get(r, ()):
                    if x['kind'] == 'host_delay' and s.it >= x['iter']:
                        base += x['ms'] * 1e6
                s.c += int(base)
                s.pc += 1
            elif code == MCPY:
                api = 'cudaMemcpyAsync_v3020'
                corr = launch(s, api, 0)
                start = max(s.g, s.c + rng.randint(1000, 3000))
                dur = int(op[2] / 20e9 * 1e9) + rng.randint(1500, 3000)
                s.mcpy.append((start, start + dur, s.streams['compute'], corr, op[2], op[1]))
                s.g = start + dur
                s.c += rng.randint(3000, 8000)
                s.pc += 1
            elif code == SYNC:
                t0 = s.c
                s.corr += 1
                end = max(s.c, s.g) + rng.randint(2000, 6000)
                s.rt.append((t0, end, s.corr, 'cudaStreamSynchronize_v3020', 0))
                s.sync.append((max(t0, s.g - 1000), end - 1000, s.streams['compute'], s.corr))
                s.c = end + rng.randint(5000, 20000)
                s.pc += 1
            elif code == MSTART:
                s.iter_t[op[1]] = [s.c, None]
                s.pc += 1
            elif code == MEND:
                s.iter_t[op[1]][1] = s.c
                s.pc += 1
            elif code == ITER:
                s.it = op[1]
                for x in fby.get(r, ()):
                    if x['kind'] in ('crash', 'stuck') and s.it >= x['iter']:
                        s.dead = x['kind']; s.stopped_at = s.c
                        return
                s.pc += 1
        s.stopped_at = max(s.c, s.g)

    queue = deque(range(job.n))
    while queue:
        run(queue.popleft(), queue)
    blocked = sorted(r for r, s in enumerate(st) if s.blocked is not None)
    dead = sorted(r for r, s in enumerate(st) if s.dead)
    if pending and not dead:
        raise SystemExit('internal error: deadlock without a planted hang (%d ops pending)' % len(pending))
    # ranks blocked on the GPU: their CPU goes on launching until the step's stream synchronize
    for r in blocked:
        s = st[r]; ops = progs[r]; rng = s.rng
        s.pc += 1
        while s.pc < len(ops) and ops[s.pc][0] != SYNC:
            code = ops[s.pc][0]
            if code == K:
                launch(s, 'cudaLaunchKernel_v7000', 0); s.c += rng.randint(8000, 30000)
            elif code == COLL:
                t0 = s.c; s.c += rng.randint(4000, 12000)
                launch(s, 'cuLaunchKernelEx' if job.new else 'cudaLaunchKernelExC_v11060', 1 if job.new else 0)
                s.c += rng.randint(1500, 4000)
                s.nvtx.append((t0, s.c, ops[s.pc][5], 1))
            elif code == MCPY:
                launch(s, 'cudaMemcpyAsync_v3020', 0)
            s.pc += 1
        s.stopped_at = s.c
    return st, pending, hold, blocked, dead, progs


# ---------------------------------------------------------------- writing nsys exports
META_KEYS = ['EXPORT_PRODUCT_NAME', 'EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION']
ENUMS = {
 'ENUM_CUPTI_SYNC_TYPE': [(0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'), (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'), (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'), (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'), (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync')],
 'ENUM_CUDA_MEMCPY_OPER': [(0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer')],
 'ENUM_CUDA_MEM_KIND': [(0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device')],
 'ENUM_NSYS_EVENT_CLASS': [(0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'), (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver')],
 'ENUM_NSYS_EVENT_TYPE': [(59, 'NvtxPushPopRange', 'NvtxPushPopRange'), (60, 'NvtxStartEndRange', 'NvtxStartEndRange'), (75, 'NvtxDomainCreate', 'NvtxDomainCreate')],
}


class Export:
    """One SQLite file made from a DDL dump; inserts by column name, defaults for NOT NULL columns."""

    def __init__(self, path, ddl_path):
        if os.path.exists(path): os.remove(path)
        self.db = sqlite3.connect(path)
        self.db.execute('PRAGMA journal_mode=OFF'); self.db.execute('PRAGMA synchronous=OFF')
        with open(ddl_path) as f:
            self.db.executescript(f.read())
        self.cols = {}
        for (t,) in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            self.cols[t] = [(c[1], c[2].upper(), c[3]) for c in self.db.execute('PRAGMA table_info(%s)' % t)]
        self.strings = {}

    def sid(self, s):
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings) + 1
        return i

    def insert(self, table, keys, rows, rng):
        if table not in self.cols or not rows:
            return
        present = {c[0] for c in self.cols[table]}
        idx = [i for i, k in enumerate(keys) if k in present]
        extra = [(c[0], '[]' if c[0] == 'tensorSizeMinusOneElements' else ('' if 'TEXT' in c[1] else 0))
                 for c in self.cols[table] if c[2] and c[0] not in keys]
        names = [keys[i] for i in idx] + [e[0] for e in extra]
        tail = tuple(e[1] for e in extra)
        rows = [tuple(row[i] for i in idx) + tail for row in rows]
        rng.shuffle(rows)                                  # nsys promises no row order
        self.db.executemany('INSERT INTO %s (%s) VALUES (%s)' % (table, ','.join('"%s"' % n for n in names),
                                                                ','.join('?' * len(names))), rows)

    def finish(self, lazy):
        if lazy:                                           # lazy export: only tables that have rows
            for t in list(self.cols):
                if not t.startswith('ENUM_') and self.db.execute('SELECT count(*) FROM %s' % t).fetchone()[0] == 0:
                    self.db.execute('DROP TABLE %s' % t)
        self.db.commit(); self.db.close()


KCOLS = ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId', 'globalPid', 'demangledName',
         'shortName', 'mangledName', 'launchType', 'cacheConfig', 'registersPerThread', 'gridX', 'gridY', 'gridZ',
         'blockX', 'blockY', 'blockZ', 'staticSharedMemory', 'dynamicSharedMemory', 'localMemoryPerThread',
         'localMemoryTotal', 'gridId', 'sharedMemoryExecuted', 'sharedMemoryLimitConfig', 'greenContextId']


def nccl_names(job, kname):
    if job.new:
        return kname + '(ncclDevKernelArgsStorage<(unsigned long)4096>)', '_Z%d%s24ncclDevKernelArgsStorageILm4096EE' % (len(kname), kname)
    return kname + '(ncclDevComm *, unsigned long, ncclWork *)', '_Z%d%sP11ncclDevCommmP8ncclWork' % (len(kname), kname)


def write_process(job, ex, r, s, proc, t0, wrng, nccl_domain_row):
    """Rows of one rank process; t0 = capture start on the true timeline (subtracted from every time)."""
    pid, dev, ctx = proc['pid'], proc['device'], proc['context']
    gpid = VM | (pid << 24); gtid = gpid | pid
    krows = []
    grid = 0
    for (a, b, stream, corr, what, typ) in s.kern:
        grid += 1
        if typ == 'nccl':
            dem, mang = nccl_names(job, what)
            krows.append((a - t0, b - t0, dev, ctx, stream, corr, gpid, ex.sid(dem), ex.sid(what), ex.sid(mang),
                          1, 1, 96, 16 if job.new else 24, 1, 1, 640 if job.new else 512, 1, 1, 21568, 82240, 0,
                          787218432, grid, 135168, 1, 0))
        else:
            kd = KERNELS[what]
            short = kd[0] if job.new else kd[2]
            dem = (kd[1] if job.new else kd[3]) or short
            krows.append((a - t0, b - t0, dev, ctx, stream, corr, gpid, ex.sid(dem), ex.sid(short), None,
                          1, 1, 128, kd[5], 1, 1, 256, 1, 1, 0, 49152 if 'gemm' in short or 'nvjet' in short else 0,
                          0, 0, grid, 65536, 0, 0))
    ex.insert('CUPTI_ACTIVITY_KIND_KERNEL', KCOLS, krows, wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_RUNTIME', ['start', 'end', 'eventClass', 'globalTid', 'correlationId', 'nameId', 'returnValue'],
              [(a - t0, b - t0, cls, gtid, corr, ex.sid(api), 0) for (a, b, corr, api, cls) in s.rt], wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_MEMCPY', ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId', 'globalPid',
                                             'bytes', 'copyKind', 'srcKind', 'dstKind', 'greenContextId', 'copyCount'],
              [(a - t0, b - t0, dev, ctx, st_, corr, gpid, nb, kind, 1 if kind == 1 else 2, 2 if kind == 1 else 1, 0, 1)
               for (a, b, st_, corr, nb, kind) in s.mcpy], wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_SYNCHRONIZATION', ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId',
                                                      'globalPid', 'syncType', 'eventId', 'eventSyncId'],
              [(a - t0, b - t0, dev, ctx, st_, corr, gpid, 3, 4294967295, 0) for (a, b, st_, corr) in s.sync], wrng)
    nv = []
    if job.a.nccl_nvtx:
        if nccl_domain_row:
            first = min((a for a, *_ in s.nvtx), default=t0 + 1000)
            nv.append((first - 2000000 - t0, None, 75, None, 'NCCL', gtid, None, 1))
        nv += [(a - t0, b - t0, 59, None, None, gtid, ex.sid(name), dom) for (a, b, name, dom) in s.nvtx]
    if job.a.markers:
        nv += [(a - t0, b - t0, 59, None, 'ProfilerStep#%d' % i, gtid, None, 0)
               for i, (a, b) in s.iter_t.items() if b is not None]
    ex.insert('NVTX_EVENTS', ['start', 'end', 'eventType', 'rangeId', 'text', 'globalTid', 'textId', 'domainId'], nv, wrng)
    ex.insert('PROCESSES', ['globalPid', 'pid', 'name'], [(gpid, pid, 'python3')], wrng)
    tn = [(ex.sid('python3'), 20, gtid), (ex.sid('pt_nccl_watchdg'), 20, gtid + 37), (ex.sid('pt_nccl_heartbt'), 20, gtid + 38),
          (ex.sid('cuda-EvtHandlr'), 20, gtid + 9), (ex.sid('[NSys]'), 20, gtid + 2)]
    ex.insert('ThreadNames', ['nameId', 'priority', 'globalTid'], tn, wrng)
    strm = [(sid, 0, 1, pid, ctx, 0 if k == 'compute' else 4294967295, 2) for k, sid in s.streams.items()]
    ex.insert('TARGET_INFO_CUDA_STREAM', ['streamId', 'hwId', 'vmId', 'processId', 'contextId', 'priority', 'flag'], strm, wrng)
    ex.insert('TARGET_INFO_CUDA_NULL_STREAM', ['streamId', 'hwId', 'vmId', 'processId', 'deviceId', 'contextId'],
              [(s.streams['compute'], 0, 1, pid, dev, ctx)], wrng)


def write_file(job, path, host, procs, st, t0, t_end, wrng, clock_err_ns, epoch, nccl_domain_row):
    fname, prod, lazy = DDL[job.a.schema]
    ex = Export(path, os.path.join(job.a.ddl_dir, fname))
    for r, proc in procs:
        write_process(job, ex, r, st[r], proc, t0, wrng, nccl_domain_row)
    launcher = wrng.randint(40, 90)
    ex.insert('PROCESSES', ['globalPid', 'pid', 'name'], [(VM | (launcher << 24), launcher, 'torchrun' if len(procs) > 1 else 'bash'),
                                                          (VM | ((launcher - 9) << 24), launcher - 9, 'nsys')], wrng)
    utc = epoch + t0 + clock_err_ns
    ts = datetime.datetime.fromtimestamp(utc // 10**9, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')
    syskey = wrng.randint(10**11, 5 * 10**14)
    ex.insert('TARGET_INFO_SESSION_START_TIME', ['utcEpochNs', 'utcTime', 'localTime', 'systemClockNs'], [(utc, ts, ts, syskey)], wrng)
    dur = t_end - t0
    start = syskey if job.new else wrng.randint(150, 200) * 10**6
    ex.insert('ANALYSIS_DETAILS', ['globalVid', 'duration', 'startTime', 'stopTime'], [(VM, dur, start, start + dur)], wrng)
    env = [('Hostname', 619, host), ('CpuCores', 1, '224'), ('NvDriverVersion', 205, '570.124.06' if job.new else '515.65.01'),
           ('CudaDriverVersion', 611, '12080' if job.new else '11070'), ('OsDescription', 3, 'Ubuntu 22.04.4 LTS'),
           ('HasNvtxEvents', 5, '1'), ('HasCudaEvents', 6, '1'), ('SupportsNCCL', 700, '1')]
    ex.insert('TARGET_INFO_SYSTEM_ENV', ['globalVid', 'devStateName', 'name', 'nameEnum', 'value'],
              [(VM, 'Local (CLI)', n, e, v) for n, e, v in env], wrng)
    ver = '3.25.0' if job.new else '3.0.0'
    meta = [('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems'), ('EXPORT_PRODUCT_VERSION', prod),
            ('EXPORT_SCHEMA_VERSION', ver)] + [('EXPORT_SCHEMA_VERSION_' + k, v) for k, v in zip(('MAJOR', 'MINOR', 'MICRO'), ver.split('.'))] + \
           [('EXPORT_PARAM_EXPORT_TYPE', 'SQLite'), ('EXPORT_PARAM_LAZY', 'true' if lazy else 'false'),
            ('EXPORT_PARAM_TIME_NORMALIZE', 'false'), ('EXPORT_PARAM_TIME_SHIFT', '0'), ('EXPORT_CONFIG_TIME_SHIFT', '0'),
            ('EXPORT_PARAM_INPUT_FILE', os.path.basename(path).replace('.sqlite', '.nsys-rep'))]
    ex.insert('META_DATA_EXPORT' if job.new else 'EXPORT_META_DATA', ['name', 'value'], meta, wrng)
    if 'TARGET_INFO_GPU' in ex.cols:
        ex.insert('TARGET_INFO_GPU', ['vmId', 'id', 'name', 'busLocation', 'totalMemory', 'smCount', 'cuDevice', 'uuid'],
                  [(VM, i, 'NVIDIA A100-SXM4-80GB', '0000:%02x:00.0' % (0x07 + 0x10 * i), 85899345920, 108, i,
                    'GPU-%08x-0000-0000-0000-%012x' % (wrng.getrandbits(32), wrng.getrandbits(48))) for i in range(job.G)], wrng)
    for t, rows in ENUMS.items():
        ex.insert(t, ['id', 'name', 'label'], rows, wrng)
    ex.insert('ENUM_CUDA_KERNEL_LAUNCH_TYPE' if job.new else 'ENUM_CUDA_KRENEL_LAUNCH_TYPE', ['id', 'name', 'label'],
              [(0, 'CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN', 'Unknown'), (1, 'CUDA_KERNEL_LAUNCH_TYPE_REGULAR', 'Regular')], wrng)
    sids = list(ex.strings.items())
    ex.insert('StringIds', ['id', 'value'], [(i, v) for v, i in sids], wrng)
    ex.finish(lazy)


# ---------------------------------------------------------------- truth and driver
HOST_STYLES = ['gpu-st-p5-48xlarge-%d', 'dgx-h100-%03d', 'hgx%04d', 'node%02d.cluster.local']


def observable_straggler(job, f, hold, step_ms):
    """A fault is observable when the rank really holds others back after onset (truth, not a guess)."""
    r, I, N = f['rank'], f['iter'], job.a.iters
    if I > N - 3:
        return False, 'onset %d leaves fewer than 3 iterations' % I
    before = [hold.get((r, i), 0) for i in range(1, I)]
    after = [hold.get((r, i), 0) for i in range(I, N)]
    b = sum(before) / len(before) if before else 0.0
    d = (sum(after) / len(after) - b) / 1e6
    need = max(1.0, 0.02 * step_ms)
    if d < need:
        return False, 'holds peers back only %.2f ms per step more after onset (< %.2f ms)' % (d, need)
    return True, 'holds peers back %.2f ms per step more after onset' % d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--layout', default='2x2x4', help='TPxPPxDP')
    ap.add_argument('--gpus-per-host', type=int, default=4, choices=(4, 8))
    ap.add_argument('--iters', type=int, default=12)
    ap.add_argument('--microbatches', type=int, default=0)
    ap.add_argument('--layers', type=int, default=2, help='transformer layers per stage')
    ap.add_argument('--act-mb', type=float, default=16.0, help='activation / TP all-reduce / p2p message, MiB')
    ap.add_argument('--grad-mb', type=float, default=300.0, help='gradient bytes per DP rank, MiB')
    ap.add_argument('--intra-gbps', type=float, default=180.0)
    ap.add_argument('--inter-gbps', type=float, default=45.0)
    ap.add_argument('--dp-mode', choices=('ar', 'rsag'), default='ar')
    ap.add_argument('--schema', choices=('3.25', '3.0'), default='3.25')
    ap.add_argument('--files', choices=('rank', 'host'), default='rank')
    ap.add_argument('--naming', choices=('plain', 'hostname'), default='plain',
                    help='per-rank names: report_rank{r} or nsys_{hostname}_rank{r}')
    ap.add_argument('--markers', action='store_true', help='ProfilerStep#N NVTX ranges')
    ap.add_argument('--no-nccl-nvtx', dest='nccl_nvtx', action='store_false')
    ap.add_argument('--clock-error-ms', type=float, default=2.0)
    ap.add_argument('--fault', action='append', default=[],
                    help='slow_gpu:R:I:F host_delay:R:I:MS extra_work:R:I:F slow_link:H1:H2:F[:I] crash:R:I stuck:R:I')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--ddl-dir', default=DEFAULT_DDL_DIR)
    a = ap.parse_args()
    job = Job(a)
    st, pending, hold, blocked, dead, progs = simulate(job)
    rng = random.Random(a.seed * 104729 + 17)
    style = HOST_STYLES[a.seed % len(HOST_STYLES)]
    hbase = rng.randint(1, 60)
    hosts = [style % (hbase + h) for h in range(job.H)]
    err = [rng.choice((-1, 1)) * rng.uniform(0.02, max(0.03, a.clock_error_ms)) * 1e6 for _ in range(job.H)]
    err = [int(e) for e in err]
    epoch = 1_780_000_000 * 10**9 + a.seed * 86_400 * 10**9
    t_last = max(s.stopped_at for s in st)
    t_kill = t_last + int(60e9) + rng.randint(0, int(2e9)) if dead else None
    crashed = {f['rank'] for f in job.faults if f['kind'] == 'crash' and f['rank'] in dead}
    cap_end = []
    for r, s in enumerate(st):
        if r in crashed: cap_end.append(s.stopped_at + rng.randint(int(2e8), int(9e8)))
        elif dead: cap_end.append(t_kill)
        else: cap_end.append(s.stopped_at + rng.randint(int(5e8), int(2e9)))
    cap_start = [-rng.randint(int(4e9), int(25e9)) for _ in range(job.n)]
    os.makedirs(a.out, exist_ok=True)
    files = {}
    domain_row = rng.random() < 0.5
    wrng = random.Random(a.seed * 13 + 1)
    if a.files == 'rank':
        for r in range(job.n):
            h = job.host(r)
            name = 'report_rank%d.sqlite' % r if a.naming == 'plain' else 'nsys_%s_rank%d.sqlite' % (hosts[h].split('.')[0], r)
            proc = {'pid': rng.randint(1000, 4000000), 'device': 0, 'context': 1}
            write_file(job, os.path.join(a.out, name), hosts[h], [(r, proc)], st, cap_start[r], cap_end[r], wrng,
                       err[h], epoch, domain_row)
            files[name] = {'ranks': [r], 'host': hosts[h]}
    else:
        for h in range(job.H):
            rs = list(range(h * job.G, (h + 1) * job.G))
            base = rng.randint(1000, 400000)
            procs, pid = [], base
            for i, r in enumerate(rs):                     # torchrun children: increasing, unique pids
                pid += rng.randint(1, 4)
                procs.append((r, {'pid': pid, 'device': i, 'context': i + 1}))
            name = 'node%02d.sqlite' % h
            write_file(job, os.path.join(a.out, name), hosts[h], procs, st, min(cap_start[r] for r in rs),
                       max(cap_end[r] for r in rs), wrng, err[h], epoch, domain_row)
            files[name] = {'ranks': rs, 'host': hosts[h]}
    truth = build_truth(job, st, pending, hold, blocked, dead, hosts, err, files, domain_row)
    with open(os.path.join(a.out, 'truth.json'), 'w') as f:
        json.dump(truth, f, indent=1)
    print('%s: %d ranks, %d files, step %.2f ms, stragglers %s, desync %d ops' % (
        a.out, job.n, len(files), truth['step_ms_true'], [x['rank'] for x in truth['stragglers']], len(truth['desync'])))


def build_truth(job, st, pending, hold, blocked, dead, hosts, err, files, domain_row):
    a = job.a
    # true step time from the stream-synchronize ends of rank 0's pipeline peers (all ranks finish together)
    ends = {}
    for r, s in enumerate(st):
        for i, (t0, t1, _c, _s) in enumerate(s.sync):
            ends.setdefault(i, []).append(t1)
    it_end = [max(ends[i]) for i in sorted(ends)]
    steps = [(it_end[i] - it_end[i - 1]) / 1e6 for i in range(2, len(it_end))]
    step_ms = sorted(steps)[len(steps) // 2] if steps else 0.0
    stragglers, unobs, slow_links = [], [], []
    for f in job.faults:
        if f['kind'] in ('slow_gpu', 'host_delay', 'extra_work'):
            ok, why = observable_straggler(job, f, hold, step_ms)
            if f['rank'] in dead or (dead and f['iter'] >= min(s.it for s in st if s.dead)):
                ok, why = False, 'the run hangs before enough iterations follow the onset'
            row = {'rank': f['rank'], 'cause': f['kind'], 'onset_iteration': f['iter'],
                   'host': hosts[job.host(f['rank'])], 'fault': f, 'why': why}
            (stragglers if ok else unobs).append(row)
        elif f['kind'] == 'slow_link':
            ha, hb = f['hosts']
            used, alike, narrow = [], [], None
            for key, (kind, members) in job.comms.items():
                hs = sorted({job.host(m) for m in members})
                if len(hs) < 2: continue
                edges = {tuple(sorted((hs[i], hs[(i + 1) % len(hs)]))) for i in range(len(hs))}
                (used if (ha, hb) in edges else alike).append((kind, len(hs)))
                if (ha, hb) in edges:
                    narrow = set(hs) if narrow is None else narrow & set(hs)
            comparable = any(x[:2] in [y[:2] for y in alike] for x in used)
            row = {'hosts': [hosts[ha], hosts[hb]], 'host_index': [ha, hb], 'factor': f['factor'], 'fault': f,
                   'narrowest_host_index': sorted(narrow or {ha, hb})}   # hosts every slowed communicator shares
            if used and comparable and f['factor'] >= 1.5:
                slow_links.append(row)
            else:
                row['why'] = ('no communicator crosses the link' if not used else
                              'no comparable communicator avoids the link' if not comparable else 'factor < 1.5')
                unobs.append(row)
        else:
            if f['rank'] not in dead:
                unobs.append({'fault': f, 'why': 'iteration beyond the run'})
    desync = []
    for (key, seq), arr in sorted(pending.items(), key=lambda kv: str(kv[0])):
        kind, members = job.comms[key]
        missing = sorted(m for m in members if m not in arr)
        desync.append({'communicator': kind, 'key': list(map(str, key)), 'seq': seq, 'members': list(members),
                       'missing_ranks': missing, 'arrived_ranks': sorted(arr),
                       'root': all(m in dead for m in missing)})
    ref = min(r for r in range(job.n))
    return {
        'generator': 'tests/indep/indep_sim.py', 'seed': a.seed, 'ranks': job.n,
        'layout': {'tp': job.tp, 'pp': job.pp, 'dp': job.dp, 'order': 'tp-dp-pp'},
        'gpus_per_host': job.G, 'hosts': hosts, 'iterations': a.iters, 'microbatches': job.M,
        'layers_per_stage': a.layers, 'dp_mode': a.dp_mode, 'step_ms_true': round(step_ms, 3),
        'conventions': {'schema': a.schema, 'files': a.files, 'naming': a.naming, 'iteration_markers': a.markers,
                        'nccl_nvtx': a.nccl_nvtx, 'nccl_domain_create_row': domain_row and a.nccl_nvtx,
                        'device_id': 'local rank' if a.files == 'host' else 0},
        'files': files,
        'faults': job.faults,
        'stragglers': stragglers, 'unobservable': unobs, 'slow_links': slow_links,
        'desync': desync, 'dead_ranks': dead, 'blocked_ranks': blocked,
        'clock': {'host_error_ms': {hosts[h]: err[h] / 1e6 for h in range(job.H)},
                  'reference_rank': ref,
                  'rank_offset_ms': {str(r): (err[job.host(r)] - err[job.host(ref)]) / 1e6 for r in range(job.n)}},
    }


if __name__ == '__main__':
    main()
