#!/usr/bin/python3
"""sim3: an independent simulator of Megatron-style TP x PP x DP training runs, written as
per-rank (or per-host) Nsight Systems SQLite exports, with planted faults and a counterfactual.

Usage: sim3.py RUN_DIR [--seed S] [--layout TPxPPxDP] [--gpus-per-host G] [--schedule S]
               [--microbatches M] [--iterations N] [--layers L] [--fault SPEC]... [--conventions random|plain]
               [--no-fault] [--with-counterfactual CF_DIR]
Fault specs (fields after the class may be '?' = drawn from the seed):
  slow_gpu:RANK:ONSET:F        one GPU's kernels x F from iteration ONSET
  node:HOST:ONSET:F            every GPU of host index HOST x F
  slow_link:HOSTS:ONSET:F      transfers of communicators that cross HOSTS (h1+h2+...) / F (slower by F)
  host_delay:RANK:ONSET:MS     CPU stall of MS per step (dataloader, before one microbatch's batch copy)
  extra_work:RANK:ONSET:F      the rank runs (F-1) x its compute as extra kernels (recompute)
  stall:PERIOD:MS:ONSET        every rank pauses its host ~MS every PERIOD-th step, each at its own moment
  crash:RANK:ITER              the rank's process dies in iteration ITER
  hang:RANK:ITER               the rank stops launching in ITER; its capture runs on
See README.md for the model and the conventions.
"""
import argparse, json, math, os, random, re, sqlite3, sys, time
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
DDL_DIR = '/work/shared/docs/nsys-ddl'
REAL_ENUM_SRC = '/work/shared/data/real/nsysai_mfu_2gpu_before.sqlite'
SCHEMAS = {
    '3.0.0': ('nsys-2022.4.2_schema-3.0.0_full.sql', '2022.4.2.1'),
    '3.11.1': ('nsys-2024.2.3_schema-3.11.1_full.sql', '2024.2.3.38'),
    '3.25.0': ('nsys-2026.2.1_schema-3.25.0_lazy-partial.sql', '2026.2.1.210'),
}
MS = 1e6  # ns per ms
US = 1e3

# ----------------------------------------------------------------------------------------------
# layout


def parse_layout(s):
    m = re.match(r'^(\d+)x(\d+)x(\d+)$', s)
    if not m:
        raise SystemExit('bad --layout %r' % s)
    return tuple(int(x) for x in m.groups())


class Layout:
    def __init__(self, tp, pp, dp, order):
        self.tp, self.pp, self.dp, self.order = tp, pp, dp, order
        self.n = tp * pp * dp
        dims = {'tp': tp, 'pp': pp, 'dp': dp}
        names = order.split('-')
        self.coord = [None] * self.n
        self.rank_of = {}
        for t in range(tp):
            for d in range(dp):
                for p in range(pp):
                    c = {'tp': t, 'dp': d, 'pp': p}
                    r = c[names[0]] + dims[names[0]] * (c[names[1]] + dims[names[1]] * c[names[2]])
                    self.coord[r] = (t, d, p)
                    self.rank_of[(t, d, p)] = r

# ----------------------------------------------------------------------------------------------
# names


GEMM_NAMES = [
    ('sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas',
     'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas'),
    ('sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas',
     'sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas'),
    ('ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn', 'ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn'),
    ('Kernel2', 'void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nt_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nt_align8::Params)'),
]
K = {
    'ln_f': ('ln_fwd_tuned_kernel', 'void transformer_engine::normalization::ln_fwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u, transformer_engine::normalization::Kernel_traits_base<4096u, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 128u> > >(transformer_engine::normalization::FwdParams)'),
    'ln_b': ('ln_bwd_tuned_kernel', 'void transformer_engine::normalization::ln_bwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u> >(transformer_engine::normalization::BwdParams)'),
    'fa_f': ('flash_fwd_kernel', 'void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)'),
    'fa_b1': ('flash_bwd_dot_do_o_kernel', 'void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > >(Flash_bwd_params)'),
    'fa_b2': ('flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel', 'void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, true, true, false>(Flash_bwd_params)'),
    'fa_b3': ('flash_bwd_convert_dq_kernel', 'void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > >(Flash_bwd_params, int)'),
    'add': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)'),
    'gelu': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)'),
    'gelu_b': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)'),
    'loss': ('cunn_SoftMaxForward', 'void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)'),
    'loss_b': ('cunn_SoftMaxBackward', 'void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, long)'),
    'zero': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)'),
    'adam': ('multi_tensor_apply_kernel', 'void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>&, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float)'),
    'l2norm': ('multi_tensor_apply_kernel', 'void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<float, float>, float*, float*, bool, int>(long, int volatile*, TensorListMetadata<1>&, L2NormFunctor<float, float>, float*, float*, bool, int)'),
    'recomp': ('vectorized_elementwise_kernel', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)'),
}


def nccl_name(style, coll, dtype='bf16'):
    """style: 'dev_args' (NCCL >= 2.19, ncclDevKernelArgsStorage), 'dev_comm' (>= 2.19 names with
    the old signature, as in the brief), 'old' (<= 2.18 ncclKernel_*)."""
    old_ty = {'bf16': '__nv_bfloat16', 'f32': 'float'}[dtype]
    if style == 'old':
        if coll == 'SendRecv':
            short = 'ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t'
        elif coll == 'AllGather':
            short = 'ncclKernel_AllGather_RING_LL_Sum_int8_t'
        else:
            short = 'ncclKernel_%s_RING_LL_Sum_%s' % (coll, old_ty)
        return short, short + '(ncclDevComm*, unsigned long, ncclWork*)'
    if coll == 'SendRecv':
        short = 'ncclDevKernel_SendRecv'
    elif coll == 'AllGather':
        short = 'ncclDevKernel_AllGather_RING_LL'
    else:
        short = 'ncclDevKernel_%s_Sum_%s_RING_LL' % (coll, dtype)
    if style == 'dev_args':
        return short, short + '(ncclDevKernelArgsStorage<(unsigned long)4096>)'
    return short, short + '(ncclDevComm*, unsigned long, ncclWork*)'

# ----------------------------------------------------------------------------------------------
# the event model


class Part:
    """One NCCL transfer every member takes part in: a collective, or one p2p message (its send and
    receive). It completes when every member's kernel holding it has started (NCCL: all members of a
    collective finish together; a send finishes when its receive is posted) plus the transfer."""
    __slots__ = ('n', 'nst', 'tmax', 'xfer', 'done', 'ranks', 'hosts', 'kind', 'it', 'key')

    def __init__(self, n, xfer, ranks, kind, it, key):
        self.n, self.nst, self.tmax, self.xfer, self.done = n, 0, 0.0, xfer, None
        self.ranks, self.kind, self.it, self.key = ranks, kind, it, key
        self.hosts = None


class Op:
    __slots__ = ('k', 'st', 'dur', 'nm', 'parts', 'deps', 'pre', 'ad', 'it', 'cat', 's', 'e', 'h',
                 'coll', 'nv', 'jit', 'bytes')

    def __init__(self, k, st=None, dur=0.0, nm=None, pre=0.0, ad=0.0, it=0, cat='w'):
        self.k, self.st, self.dur, self.nm, self.pre, self.ad, self.it, self.cat = k, st, dur, nm, pre, ad, it, cat
        self.parts = None
        self.deps = None
        self.s = self.e = self.h = None
        self.coll = None
        self.nv = None
        self.jit = 0.0
        self.bytes = 0


class RankState:
    __slots__ = ('prog', 'i', 'h', 'L', 'launched', 'sq', 'tail', 'open', 'lastend', 'stop_at', 'dead_t',
                 'marks', 'watch', 'watch_h', 'depth')


def lognorm(rng, sigma):
    return math.exp(rng.gauss(0.0, sigma))


class Job:
    def __init__(self, a, faults, cfg, apply_faults):
        self.a, self.cfg, self.faults = a, cfg, faults
        self.apply = apply_faults
        L = self.lay = cfg['layout_obj']
        self.G = cfg['gpus_per_host']
        self.host_of = [r // self.G for r in range(L.n)]
        self.parts = {}
        self.part_rng = random.Random('%d:parts' % cfg['seed'])

    # fault lookups ---------------------------------------------------------------
    def compute_factor(self, r, it):
        f = 1.0
        if not self.apply:
            return f
        for x in self.faults:
            if x['class'] == 'slow_gpu' and x['rank'] == r and it >= x['onset']:
                f *= x['factor']
            elif x['class'] == 'node' and self.host_of[r] == x['host_index'] and it >= x['onset']:
                f *= x['factor']
        return f

    def link_factor(self, hosts, it):
        f = 1.0
        if not self.apply or len(hosts) < 2:
            return f
        for x in self.faults:
            if x['class'] == 'slow_link' and it >= x['onset'] and (set(x['host_indices']) & hosts):
                f *= x['factor']
        return f

    def part(self, key, n, xfer_base, ranks, kind, it):
        p = self.parts.get(key)
        if p is None:
            hosts = set(self.host_of[r] for r in ranks)
            x = xfer_base * lognorm(self.part_rng, 0.03)
            if len(hosts) > 1:
                x *= self.cfg['inter_host_factor']
            x *= self.link_factor(hosts, it)
            p = Part(n, x, ranks, kind, it, key)
            p.hosts = hosts
            self.parts[key] = p
        return p

    # program ----------------------------------------------------------------------
    def units(self, s):
        cfg = self.cfg
        p, m, v, sch = self.lay.pp, cfg['microbatches'], cfg['vstages'], cfg['schedule']
        if sch == 'gpipe':
            return [('F', 0, j) for j in range(m)] + [('B', 0, j) for j in range(m)]
        if sch == '1f1b':
            w = min(p - s - 1, m)
            u = [('F', 0, j) for j in range(w)]
            for i in range(m - w):
                u.append(('F', 0, w + i))
                u.append(('B', 0, i))
            u += [('B', 0, j) for j in range(m - w, m)]
            return u
        # interleaved 1F1B (Megatron-Core's order)
        total = m * v

        def unit(k, fwd):
            kg = k % (p * v)
            c = kg // p
            if not fwd:
                c = v - c - 1
            j = (k // (p * v)) * p + kg % p
            return ('F' if fwd else 'B', c, j)
        if m == p:
            w = total
        else:
            w = min((p - s - 1) * 2 + (v - 1) * p, total)
        u = [unit(k, True) for k in range(w)]
        for k in range(total - w):
            u.append(unit(k + w, True))
            u.append(unit(k, False))
        u += [unit(k, False) for k in range(total - w, total)]
        return u

    def build(self, r):
        cfg, L = self.cfg, self.lay
        t, d, s = L.coord[r]
        tp, pp, dp = L.tp, L.pp, L.dp
        m, v = cfg['microbatches'], cfg['vstages']
        rng = random.Random('%d:rank:%d' % (cfg['seed'], r))        # every draw the faults do not change
        frng = random.Random('%d:fault:%d' % (cfg['seed'], r))      # draws of fault-only ops
        xrng = random.Random('%d:extra:%d' % (cfg['seed'], r))
        speed = 1.0 + cfg['gpu_speed_spread'] * (2.0 * rng.random() - 1.0)   # per-GPU speed, within +-2%
        jsig = cfg['jitter_sigma']
        conv = cfg['conv']
        prog = []
        tp_ranks = tuple(L.rank_of[(tt, d, s)] for tt in range(tp))
        dp_ranks = tuple(L.rank_of[(t, dd, s)] for dd in range(dp))
        uf = cfg['u_layer_ms'] * MS     # one layer's forward on one microbatch (ns)
        layers = cfg['layers_per_chunk']
        tp_xfer = cfg['tp_xfer_ms'] * MS
        p2p_xfer = cfg['p2p_xfer_ms'] * MS
        nccl_style = conv['nccl_names']
        ncl_api = conv['nccl_launch_api']
        seq = {'tp': 0, 'dp': 0}
        gemms = cfg['gemm_names']
        host_base = cfg['host_launch_us'] * US

        def pre():
            return host_base * lognorm(rng, 0.3)

        def apid():
            return (3.0 + 4.0 * rng.random()) * US

        def kern(key, frac, it, cat='w', gemm=None):
            dur = frac * uf * speed * lognorm(rng, jsig)
            if rng.random() < cfg['outlier_p']:
                dur *= 1.5 + 2.0 * rng.random()
            nm = gemm if gemm is not None else K[key]
            o = Op('K', 'compute', dur, nm, pre(), apid(), it, cat)
            o.jit = self.compute_factor(r, it)
            return o

        def tp_ar(it, deps):
            seq['tp'] += 1
            o = Op('N', 'tp', 0.0, nccl_name(nccl_style, 'AllReduce'), pre() + 8 * US, apid(), it, 'w')
            o.parts = [self.part(('tp', d, s, seq['tp']), tp, tp_xfer, tp_ranks, 'AllReduce', it)]
            o.coll = 'AllReduce'
            o.nv = ['ncclAllReduce']
            o.deps = deps
            return o

        def layer_fwd(it, out, c):
            g = gemms
            seqk = [('ln_f', 0.03, None), (None, 0.18, g[0]), ('fa_f', 0.20, None), (None, 0.08, g[1])]
            last = None
            for key, fr, gn in seqk:
                last = kern(key, fr, it, gemm=gn)
                out.append(last)
            if tp > 1:
                a = tp_ar(it, [last])
                out.append(a)
            for key, fr, gn in [('add', 0.02, None), ('ln_f', 0.03, None), (None, 0.20, g[0]), ('gelu', 0.04, None), (None, 0.20, g[1])]:
                last = kern(key, fr, it, gemm=gn)
                if tp > 1 and key == 'add':
                    last.deps = [out[-1]]
                out.append(last)
            if tp > 1:
                a = tp_ar(it, [last])
                out.append(a)
            k2 = kern('add', 0.02, it)
            if tp > 1:
                k2.deps = [out[-1]]
            out.append(k2)

        def layer_bwd(it, out, c, last_mb):
            g = gemms
            seqk = [('add', 0.02, None), (None, 0.20, g[2]), (None, 0.20, g[3]), ('gelu_b', 0.05, None),
                    (None, 0.20, g[2]), (None, 0.20, g[3])]
            last = None
            for key, fr, gn in seqk:
                last = kern(key, fr, it, gemm=gn)
                out.append(last)
            if tp > 1:
                out.append(tp_ar(it, [last]))
            for key, fr, gn in [('ln_b', 0.05, None), (None, 0.08, g[2]), (None, 0.08, g[3]), ('fa_b1', 0.04, None),
                                ('fa_b2', 0.34, None), ('fa_b3', 0.03, None), (None, 0.18, g[2]), (None, 0.18, g[3])]:
                last = kern(key, fr, it, gemm=gn)
                if key == 'ln_b' and tp > 1:
                    last.deps = [out[-1]]
                out.append(last)
            if tp > 1:
                out.append(tp_ar(it, [last]))
            k2 = kern('ln_b', 0.05, it)
            if tp > 1:
                k2.deps = [out[-1]]
            out.append(k2)

        units = self.units(s)
        last_b = max([i for i, uu in enumerate(units) if uu[0] == 'B'] or [-1])
        # exchange slots: one unit each, but the steady (forward, backward) pairs of interleaved 1F1B
        slots = []
        if cfg['schedule'] == 'interleaved':
            nf = 0
            i = 0
            while i < len(units):
                if units[i][0] == 'F' and i + 1 < len(units) and units[i + 1][0] == 'B':
                    slots.append([i, i + 1])
                    i += 2
                else:
                    slots.append([i])
                    i += 1
        else:
            slots = [[i] for i in range(len(units))]
        slot_of = {}
        for si, sl in enumerate(slots):
            for q in sl:
                slot_of[q] = si
        # p2p message keys
        def msg_in(u):
            kind, c, j = u
            if kind == 'F':
                if s == 0 and c == 0:
                    return None
                src = (s - 1, c) if s > 0 else (pp - 1, c - 1)
                return ('A', src, (s, c), j)
            if s == pp - 1 and c == v - 1:
                return None
            src = (s + 1, c) if s < pp - 1 else (0, c + 1)
            return ('G', src, (s, c), j)

        def msg_out(u):
            kind, c, j = u
            if kind == 'F':
                if s == pp - 1 and c == v - 1:
                    return None
                dst = (s + 1, c) if s < pp - 1 else (0, c + 1)
                return ('A', (s, c), dst, j)
            if s == 0 and c == 0:
                return None
            dst = (s - 1, c) if s > 0 else (pp - 1, c - 1)
            return ('G', (s, c), dst, j)

        def peer_rank(stage):
            return L.rank_of[(t, d, stage)]

        p2p_mode = conv['p2p']

        def msg_part(msg, it):
            kind, src, dst, j = msg
            sr, dr = peer_rank(src[0]), peer_rank(dst[0])
            return self.part(('pp', t, d, kind, src, dst, j, it), 2, p2p_xfer, (sr, dr), 'SendRecv', it), sr, dr

        def p2p_op(msgs_send, msgs_recv, it, deps):
            """one NCCL p2p kernel holding the given sends and receives."""
            parts = []
            nv = []
            for mm in msgs_send:
                pt, sr, dr = msg_part(mm, it)
                parts.append(pt)
                nv.append('ncclSend')
            for mm in msgs_recv:
                pt, sr, dr = msg_part(mm, it)
                parts.append(pt)
                nv.append('ncclRecv')
            if p2p_mode == 'batched':
                st = 'pp'
            else:
                mm = (msgs_send or msgs_recv)[0]
                # one stream (communicator) per directed link and payload kind
                st = ('ps' if msgs_send else 'pr', mm[0], mm[1], mm[2])
            o = Op('N', st, 0.0, nccl_name(nccl_style, 'SendRecv'), pre() + 10 * US, apid(), it, 'p2p')
            o.parts = parts
            o.coll = 'SendRecv'
            o.nv = (['ncclGroupStart'] + nv + ['ncclGroupEnd']) if (len(nv) > 1 or conv['group_single']) else nv
            o.deps = deps
            return o

        # faults that add host time ------------------------------------------------
        hd = [x for x in self.faults if x['class'] == 'host_delay' and x['rank'] == r] if self.apply else []
        ew = [x for x in self.faults if x['class'] == 'extra_work' and x['rank'] == r] if self.apply else []
        stl = [x for x in self.faults if x['class'] == 'stall'] if self.apply else []
        hd_unit = 0 if frng.random() < 0.6 else frng.randrange(len(self.units(s)))
        n_it = cfg['iterations']
        for it in range(n_it):
            prog.append(Op('B', it=it))
            z = kern('zero', 0.05, it, 'o')
            prog.append(z)
            # stall points: at a random op position of this step (chosen after building the step)
            step_start = len(prog)
            pending_recv = {}
            unit_last = {}
            if p2p_mode == 'batched' and units:
                first = [msg_in(units[q]) for q in slots[0] if msg_in(units[q]) is not None]
                if first:
                    prog.append(p2p_op([], first, it, None))
                    for q in slots[0]:
                        pending_recv[q] = prog[-1]
            for ui, u in enumerate(units):
                kind, c, j = u
                # host delay (dataloader / CPU contention) before this rank's unit hd_unit: unit 0 follows
                # the previous step's synchronize (nothing queued: fully exposed); later ones may be absorbed
                for x in hd:
                    if it >= x['onset'] and ui == hd_unit:
                        prog.append(Op('C', dur=x['ms'] * MS, it=it, cat='host_delay'))
                if kind == 'F' and s == 0 and c == 0:
                    # the batch of this microbatch copied to the GPU
                    cp = Op('M', 'compute', (0.05 + 0.02 * rng.random()) * MS, None, pre(), apid(), it, 'copy')
                    cp.bytes = 4 * 1024 * 1024
                    prog.append(cp)
                mi = msg_in(u)
                recv_op = None
                if mi is not None:
                    if p2p_mode == 'batched':
                        recv_op = pending_recv.get(ui)
                    elif p2p_mode == 'early' and ui > 0 and ui in pending_recv:
                        recv_op = pending_recv[ui]
                    else:
                        recv_op = p2p_op([], [mi], it, None)
                        prog.append(recv_op)
                # early receive of the next unit's input, posted before this unit's compute
                if p2p_mode == 'early' and ui + 1 < len(units):
                    mn = msg_in(units[ui + 1])
                    if mn is not None:
                        pending_recv[ui + 1] = p2p_op([], [mn], it, None)
                        prog.append(pending_recv[ui + 1])
                body = []
                for li in range(layers):
                    if kind == 'F':
                        layer_fwd(it, body, c)
                    else:
                        layer_bwd(it, body, c, False)
                    if ew:
                        for x in ew:
                            if it >= x['onset']:
                                # activation recompute: extra forward-like kernels
                                nextra = 6
                                tot = (x['factor'] - 1.0) * (1.0 if kind == 'F' else 2.0) * uf * speed
                                for q in range(nextra):
                                    o = Op('K', 'compute', tot / nextra * lognorm(xrng, jsig),
                                           (None if q % 2 else gemms[0]) or K['recomp'], host_base, 4 * US, it, 'w')
                                    o.jit = self.compute_factor(r, it)
                                    body.append(o)
                if kind == 'F' and s == pp - 1 and c == v - 1:
                    body.append(kern('loss', 0.15, it))
                    body.append(kern('loss_b', 0.05, it))
                if recv_op is not None and body:
                    body[0].deps = (body[0].deps or []) + [recv_op]
                # DP gradient buckets overlapped with the last backward
                is_last_b = (kind == 'B' and ui == last_b)
                if is_last_b and dp > 1 and conv['dp_overlap']:
                    nb = cfg['dp_buckets']
                    cut = [int(len(body) * (q + 1) / nb) for q in range(nb)]
                    nbody = []
                    q = 0
                    for bi, o in enumerate(body):
                        nbody.append(o)
                        while q < nb and bi + 1 == cut[q]:
                            nbody.append(self.dp_op(r, it, q, seq, dp_ranks, d, t, s, pre, apid, [o], conv))
                            q += 1
                    body = nbody
                prog.extend(body)
                mo = msg_out(u)
                last_compute = None
                for o in reversed(body):
                    if o.k == 'K':
                        last_compute = o
                        break
                unit_last[ui] = last_compute
                if p2p_mode == 'batched':
                    si = slot_of[ui]
                    if ui == slots[si][-1]:
                        # one grouped kernel per exchange (batch_isend_irecv): this slot's sends and
                        # the next slot's receives, as Megatron's send_forward_recv_backward & co.
                        sends = [msg_out(units[q]) for q in slots[si] if msg_out(units[q]) is not None]
                        deps = [unit_last[q] for q in slots[si] if msg_out(units[q]) is not None and unit_last.get(q) is not None]
                        nxt = slots[si + 1] if si + 1 < len(slots) else []
                        recvs = [msg_in(units[q]) for q in nxt if msg_in(units[q]) is not None]
                        if sends or recvs:
                            o = p2p_op(sends, recvs, it, deps or None)
                            prog.append(o)
                            for q in nxt:
                                pending_recv[q] = o
                elif mo is not None:
                    prog.append(p2p_op([mo], [], it, [last_compute] if last_compute else None))
            # DP gradient reduction (not overlapped) and optimizer
            dpops = [o for o in prog[step_start:] if o.k == 'N' and o.st == 'dp']
            if dp > 1 and not conv['dp_overlap']:
                for q in range(cfg['dp_buckets']):
                    o = self.dp_op(r, it, q, seq, dp_ranks, d, t, s, pre, apid, [prog[-1]], conv)
                    prog.append(o)
                    dpops.append(o)
            n1 = kern('l2norm', 0.3, it, 'o')
            n1.deps = dpops or None
            prog.append(n1)
            for q in range(cfg['opt_kernels']):
                prog.append(kern('adam', 1.5 / cfg['opt_kernels'], it, 'o'))
            if dp > 1 and conv['dp_kind'] == 'rs_ag':
                seq['dp'] += 1
                o = Op('N', 'dp', 0.0, nccl_name(nccl_style, 'AllGather'), pre() + 8 * US, apid(), it, 'dp')
                o.parts = [self.part(('dp', t, s, seq['dp']), dp, cfg['dp_xfer_ms'] * MS * 0.5, dp_ranks, 'AllGather', it)]
                o.coll = 'AllGather'
                o.nv = ['ncclAllGather']
                o.deps = [prog[-1]]
                prog.append(o)
            # loss .item(): a copy to the host and a synchronize
            cp = Op('M', 'compute', 0.01 * MS, None, pre(), apid(), it, 'd2h')
            cp.bytes = 4
            prog.append(cp)
            prog.append(Op('S', it=it, pre=pre()))
            prog.append(Op('E', it=it))
            # GC stalls at this rank's own moment of the step
            for x in stl:
                if it >= x['onset'] and (it - x['onset']) % x['period'] == 0:
                    pos = frng.randrange(step_start, len(prog) - 2)
                    prog.insert(pos, Op('C', dur=x['ms'] * MS * (0.8 + 0.4 * frng.random()), it=it, cat='gc'))
        return prog, speed

    def dp_op(self, r, it, q, seq, dp_ranks, d, t, s, pre, apid, deps, conv):
        seq['dp'] += 1
        coll = 'AllReduce' if conv['dp_kind'] == 'allreduce' else 'ReduceScatter'
        dt = 'f32' if conv['dp_fp32'] else 'bf16'
        o = Op('N', 'dp', 0.0, nccl_name(conv['nccl_names'], coll, dt), pre() + 8 * US, apid(), it, 'dp')
        x = self.cfg['dp_xfer_ms'] * MS / self.cfg['dp_buckets'] * (1.0 if coll == 'AllReduce' else 0.5)
        o.parts = [self.part(('dp', t, s, seq['dp']), len(dp_ranks), x, dp_ranks, coll, it)]
        o.coll = coll
        o.nv = ['ncclAllReduce' if coll == 'AllReduce' else 'ncclReduceScatter']
        o.deps = deps
        return o

    # simulation ---------------------------------------------------------------------
    def run(self, stop=None, dead=None, watch=None):
        """stop: {rank: op index where its host stops}; dead: {rank: time after which its GPU does nothing}."""
        L = self.lay
        n = L.n
        self.states = []
        self.speeds = []
        for r in range(n):
            prog, sp = self.build(r)
            R = RankState()
            R.prog, R.i, R.h, R.L = prog, 0, self.cfg['t0_ns'][r], 0
            R.launched, R.sq, R.tail = [], {}, {}
            R.open, R.lastend = 0, 0.0
            R.stop_at = (stop or {}).get(r, -1)
            R.dead_t = (dead or {}).get(r)
            R.marks = {}
            R.watch = (watch or {}).get(r, -1)
            R.watch_h = None
            R.depth = self.cfg['queue_depth'][r]
            self.states.append(R)
            self.speeds.append(sp)
        # rank -> parts membership for wake-ups
        queue = deque(range(n))
        inq = [True] * n
        states = self.states
        jr = random.Random('%d:endjitter' % self.cfg['seed'])

        def advance(r):
            R = states[r]
            woke = []
            progress = True
            while progress:
                progress = False
                for st, q in R.sq.items():
                    while q:
                        op = q[0]
                        if op.s is None:
                            tt = max(op.h + op.ad * 0.5 + 2 * US, R.tail.get(st, 0.0))
                            ok = True
                            if op.deps:
                                for dd in op.deps:
                                    if dd.e is None:
                                        ok = False
                                        break
                                    if dd.e > tt:
                                        tt = dd.e
                            if not ok:
                                break
                            if R.dead_t is not None and tt >= R.dead_t:
                                break
                            op.s = tt
                            if op.k == 'N':
                                for p in op.parts:
                                    p.nst += 1
                                    if tt > p.tmax:
                                        p.tmax = tt
                                    if p.nst == p.n:
                                        p.done = p.tmax + p.xfer
                                        woke.extend(p.ranks)
                            else:
                                op.e = tt + op.dur * op.jit
                        if op.e is None:
                            dn = 0.0
                            for p in op.parts:
                                if p.done is None:
                                    dn = None
                                    break
                                if p.done > dn:
                                    dn = p.done
                            if dn is None:
                                break
                            op.e = max(dn, op.s + 3 * US) + ((int(dn) * 2654435761 + r * 40503) % 2000) * 1.0
                        R.tail[st] = op.e
                        R.open -= 1
                        if op.e > R.lastend:
                            R.lastend = op.e
                        q.popleft()
                        progress = True
                # host
                prog = R.prog
                while R.i < len(prog):
                    if R.i == R.watch and R.watch_h is None:
                        R.watch_h = R.h
                    if R.i == R.stop_at:
                        break
                    op = prog[R.i]
                    k = op.k
                    if k == 'K' or k == 'N' or k == 'M':
                        if R.L >= R.depth:
                            x = R.launched[R.L - R.depth]
                            if x.e is None:
                                break
                            if x.e > R.h:
                                R.h = x.e
                        R.h += op.pre
                        op.h = R.h
                        R.h += op.ad
                        R.L += 1
                        R.launched.append(op)
                        R.open += 1
                        q = R.sq.get(op.st)
                        if q is None:
                            q = R.sq[op.st] = deque()
                        q.append(op)
                        progress = True
                    elif k == 'S':
                        if R.open > 0:
                            break
                        R.h += op.pre
                        op.h = R.h
                        if R.lastend > R.h:
                            R.h = R.lastend
                        op.e = R.h + 5 * US
                        R.h = op.e
                    elif k == 'C':
                        op.h = R.h
                        R.h += op.dur
                        op.e = R.h
                    elif k == 'B':
                        R.marks[('B', op.it)] = R.h
                        op.h = R.h
                        R.h += 2 * US
                    elif k == 'E':
                        R.marks[('E', op.it)] = R.h
                        op.h = R.h
                        R.h += self.cfg['step_gap_us'] * US * (0.5 + self.cfg['host_rng'][r].random())
                    R.i += 1
                    if progress and (k == 'K' or k == 'N' or k == 'M'):
                        break   # resolve the stream first
            return woke

        while queue:
            r = queue.popleft()
            inq[r] = False
            for w in advance(r):
                if not inq[w]:
                    inq[w] = True
                    queue.append(w)
        return self

# ----------------------------------------------------------------------------------------------
# truth from a simulated job


def step_times(job, n_it):
    """job step i = (latest rank's end of iteration i) - (latest rank's end of i-1); iteration 0 from
    the earliest begin."""
    ends = []
    for it in range(n_it):
        v = [R.marks.get(('E', it)) for R in job.states]
        if any(x is None for x in v):
            break
        ends.append(max(v))
    b0 = min(R.marks.get(('B', 0), 0) for R in job.states)
    st = []
    prev = b0
    for e in ends:
        st.append((e - prev) / MS)
        prev = e
    return st


def bubble(job, cfg, upto):
    """docs/pipeline.md's definition: per pipeline and steady flush, span = stage 0's first forward
    compute start .. last backward compute end; work = union of compute kernels and microbatch (TP)
    collectives of the stage in that flush; bubble = sum(span - work) / sum(work)."""
    L = job.lay
    if L.pp < 2:
        return None
    tot_b = tot_w = 0.0
    per_stage_b = [0.0] * L.pp
    per_stage_w = [0.0] * L.pp
    for t in range(L.tp):
        for d in range(L.dp):
            for it in range(1, upto):
                ranks = [L.rank_of[(t, d, s)] for s in range(L.pp)]
                ops0 = [o for o in job.states[ranks[0]].prog if o.it == it and o.cat == 'w' and o.k == 'K' and o.e is not None]
                if not ops0:
                    continue
                span = max(o.e for o in ops0) - min(o.s for o in ops0)
                for s, rr in enumerate(ranks):
                    iv = sorted((o.s, o.e) for o in job.states[rr].prog
                                if o.it == it and o.cat == 'w' and o.e is not None and o.k in ('K', 'N'))
                    work = 0.0
                    cs = ce = None
                    for a, b in iv:
                        if cs is None:
                            cs, ce = a, b
                        elif a <= ce:
                            ce = max(ce, b)
                        else:
                            work += ce - cs
                            cs, ce = a, b
                    if cs is not None:
                        work += ce - cs
                    tot_b += span - work
                    tot_w += work
                    per_stage_b[s] += span - work
                    per_stage_w[s] += work
    if tot_w <= 0:
        return None
    return {'job': tot_b / tot_w, 'per_stage': [per_stage_b[s] / per_stage_w[s] if per_stage_w[s] else None for s in range(L.pp)]}

# ----------------------------------------------------------------------------------------------
# writing the exports


class DDL:
    def __init__(self, ver):
        fn, prod = SCHEMAS[ver]
        text = open(os.path.join(DDL_DIR, fn)).read()
        self.stmts = {}
        for m in re.finditer(r'CREATE TABLE (\w+) \((.*?)\n\);', text, re.S):
            self.stmts[m.group(1)] = m.group(0)
        self.ver, self.prod = ver, prod
        self.cols = {}
        self.notnull = {}
        db = sqlite3.connect(':memory:')
        for name, sql in self.stmts.items():
            db.execute(sql)
            info = db.execute('PRAGMA table_info(%s)' % name).fetchall()
            self.cols[name] = [c[1] for c in info]
            self.notnull[name] = {c[1]: (c[2] or '') for c in info if c[3]}
        db.close()

    def has(self, t):
        return t in self.stmts


def enum_rows():
    out = {}
    if os.path.exists(REAL_ENUM_SRC):
        db = sqlite3.connect('file:%s?mode=ro' % REAL_ENUM_SRC, uri=True)
        for t in ('ENUM_NSYS_EVENT_TYPE', 'ENUM_NSYS_EVENT_CLASS', 'ENUM_CUPTI_SYNC_TYPE', 'ENUM_CUDA_MEMCPY_OPER'):
            try:
                out[t] = db.execute('SELECT * FROM %s' % t).fetchall()
            except sqlite3.Error:
                pass
        db.close()
    return out


class Writer:
    """One SQLite file: any number of processes."""

    def __init__(self, path, ddl, rng, conv):
        self.path, self.ddl, self.rng, self.conv = path, ddl, rng, conv
        if os.path.exists(path):
            os.remove(path)
        self.db = sqlite3.connect(path)
        self.db.execute('PRAGMA journal_mode=OFF')
        self.db.execute('PRAGMA synchronous=OFF')
        self.rows = {}
        self.strings = {}
        self.created = set()

    def sid(self, s):
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings)
        return i

    def add(self, table, row):
        self.rows.setdefault(table, []).append(row)

    def finish(self):
        ddl, rng, conv = self.ddl, self.rng, self.conv
        # string ids: order varies (first use, sorted, shuffled), base varies
        items = list(self.strings.items())
        if conv['string_order'] == 'sorted':
            items.sort()
        elif conv['string_order'] == 'shuffled':
            rng.shuffle(items)
        base = conv['string_base']
        remap = {}
        for k, (s, old) in enumerate(items):
            remap[old] = base + k
        strcols = {'CUPTI_ACTIVITY_KIND_KERNEL': ('shortName', 'demangledName', 'mangledName'),
                   'CUPTI_ACTIVITY_KIND_RUNTIME': ('nameId',), 'NVTX_EVENTS': ('textId',), 'ThreadNames': ('nameId',)}
        tables = dict(self.rows)
        tables['StringIds'] = [{'id': remap[old], 'value': s} for s, old in items]
        for t, rows in tables.items():
            if not ddl.has(t):
                continue
            cols = ddl.cols[t]
            nn = ddl.notnull[t]
            sc = strcols.get(t, ())
            out = []
            for row in rows:
                for c in sc:
                    if row.get(c) is not None:
                        row[c] = remap[row[c]]
                vals = []
                for c in cols:
                    v = row.get(c)
                    if v is None and c in nn:
                        v = '[]' if c == 'tensorSizeMinusOneElements' else (0 if c not in ('devStateName', 'name', 'value') else '')
                    vals.append(v)
                out.append(vals)
            if conv['row_order'] == 'shuffled' and t.startswith(('CUPTI', 'NVTX')):
                rng.shuffle(out)
            self.db.execute(ddl.stmts[t])
            self.db.executemany('INSERT INTO %s VALUES (%s)' % (t, ','.join('?' * len(cols))), out)
        self.db.commit()
        self.db.close()


def write_run(out_dir, job, cfg, truth, crash_info):
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith('.sqlite') or f == 'truth.json':
            os.remove(os.path.join(out_dir, f))
    L = job.lay
    ddl = DDL(cfg['schema'])
    enums = enum_rows()
    conv = cfg['conv']
    G = cfg['gpus_per_host']
    nhost = (L.n + G - 1) // G
    crng = random.Random('%d:write' % cfg['seed'])
    epoch0 = 1_779_000_000_000_000_000 + crng.randrange(10 ** 15)
    # capture window per rank (true time)
    cap_end = {}
    for r in range(L.n):
        R = job.states[r]
        last = R.h
        for o in R.prog:
            if o.e is not None and o.e > last:
                last = o.e
        cap_end[r] = last + (1 + 20 * crng.random()) * MS
    if crash_info:
        kill = crash_info['kill_t']
        for r in range(L.n):
            if r == crash_info['rank'] and crash_info['class'] == 'crash':
                cap_end[r] = crash_info['t'] + crash_info['tail_ms'] * MS
            else:
                cap_end[r] = kill + crng.random() * 5 * MS
    files = []
    if conv['naming'] == 'host':
        for h in range(nhost):
            files.append((list(range(h * G, min(L.n, (h + 1) * G))), h))
    else:
        for r in range(L.n):
            files.append(([r], r // G))
    rep_ids = list(range(1, len(files) + 1))
    crng.shuffle(rep_ids)
    for fi, (ranks, h) in enumerate(files):
        host = cfg['hostnames'][h]
        nm = conv['naming']
        pid0 = cfg['pids'][ranks[0]]
        if nm == 'rank':
            fname = conv['rank_fmt'] % ranks[0]
        elif nm == 'pid':
            fname = '%s.%d.sqlite' % (host, pid0)
        elif nm == 'report':
            fname = 'report%d.sqlite' % rep_ids[fi]
        else:
            fname = conv['host_fmt'] % host
        w = Writer(os.path.join(out_dir, fname), ddl, random.Random('%d:file:%d' % (cfg['seed'], fi)), conv)
        write_file(w, job, cfg, ranks, h, host, cap_end, epoch0, enums, crash_info)
        w.finish()
    return files


def write_file(w, job, cfg, ranks, h, host, cap_end, epoch0, enums, crash_info):
    L = job.lay
    conv = cfg['conv']
    ddl = w.ddl
    frng = w.rng
    t_origin = min(cfg['t0_ns'][r] for r in ranks) - (2 + 3 * frng.random()) * MS   # capture start (true time)
    base = int((50 + 250 * frng.random()) * MS)                                      # report-relative offset
    host_off = cfg['clock_offset_ns'][h]
    # local timestamp = true - t_origin + base; UTC = utcEpochNs + local = epoch0 + true + host_off
    utc = int(epoch0 + t_origin - base + host_off)
    end_true = max(cap_end[r] for r in ranks)

    def T(x):
        return int(round(x - t_origin + base))
    vm = 1 << 48
    w.add('TARGET_INFO_SESSION_START_TIME', {'utcEpochNs': utc, 'utcTime': time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(utc // 10 ** 9)),
                                             'localTime': time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(utc // 10 ** 9)),
                                             'systemClockNs': base})
    w.add('ANALYSIS_DETAILS', {'globalVid': vm, 'duration': T(end_true) - base, 'startTime': base, 'stopTime': T(end_true)})
    envs = ['NCCL_VERSION=%s' % conv['nccl_version'], 'MASTER_ADDR=%s' % cfg['hostnames'][0], 'WORLD_SIZE=%d' % L.n,
            'NNODES=%d' % len(cfg['hostnames'])]
    if len(ranks) == 1:
        r = ranks[0]
        if conv['rank_env'] in ('torchrun', 'both'):
            envs += ['RANK=%d' % r, 'LOCAL_RANK=%d' % (r % cfg['gpus_per_host']), 'GROUP_RANK=%d' % h]
        if conv['rank_env'] in ('slurm', 'both'):
            envs += ['SLURM_PROCID=%d' % r, 'SLURM_LOCALID=%d' % (r % cfg['gpus_per_host']), 'SLURM_NODEID=%d' % h]
        if conv['cvd']:
            envs.append('CUDA_VISIBLE_DEVICES=%d' % (r % cfg['gpus_per_host']))
    else:
        envs += ['GROUP_RANK=%d' % h, 'SLURM_NODEID=%d' % h]
    sysenv = [('CpuCores', 1, '112'), ('NvDriverVersion', 205, '550.90.07'), ('OsDescription', 605, 'Ubuntu 22.04.4 LTS'),
              ('DeviceEnvironment', 610, ';'.join(envs)), ('CudaDriverVersion', 611, '12040'), ('Hostname', 619, host)]
    for n_, e_, v_ in sysenv:
        w.add('TARGET_INFO_SYSTEM_ENV', {'globalVid': vm, 'devStateName': 'Local (CLI)', 'name': n_, 'nameEnum': e_, 'value': v_})
    meta = [('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems'), ('EXPORT_PRODUCT_VERSION', ddl.prod),
            ('EXPORT_SCHEMA_VERSION', ddl.ver)] + list(zip(('EXPORT_SCHEMA_VERSION_MAJOR', 'EXPORT_SCHEMA_VERSION_MINOR', 'EXPORT_SCHEMA_VERSION_MICRO'), ddl.ver.split('.'))) + \
        [('EXPORT_PARAM_LAZY', 'true'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false'), ('EXPORT_PARAM_TIME_SHIFT', '0')]
    mt = 'META_DATA_EXPORT' if ddl.has('META_DATA_EXPORT') else 'EXPORT_META_DATA'
    for k_, v_ in meta:
        w.add(mt, {'name': k_, 'value': v_})
    if ddl.has('META_DATA_CAPTURE'):
        if len(ranks) == 1:
            cmd, args = 'python3', ['pretrain_gpt.py', '--tensor-model-parallel-size', str(L.tp), '--pipeline-model-parallel-size', str(L.pp)]
        else:
            cmd, args = 'torchrun', ['--nnodes=%d' % len(cfg['hostnames']), '--nproc_per_node=%d' % cfg['gpus_per_host'], 'pretrain_gpt.py']
        w.add('META_DATA_CAPTURE', {'name': 'PROCESS_0:COMMAND', 'value': cmd})
        for i, a_ in enumerate(args):
            w.add('META_DATA_CAPTURE', {'name': 'PROCESS_0:ARGUMENT_%d' % i, 'value': a_})
        for e_ in envs:
            k_, v_ = e_.split('=', 1)
            w.add('META_DATA_CAPTURE', {'name': 'PROCESS_0:ENVIRONMENT_VARIABLE', 'value': '%s="%s"' % (k_, v_)})
    for t_, rows in enums.items():
        if ddl.has(t_):
            cols = ddl.cols[t_]
            for row in rows:
                w.add(t_, dict(zip(cols, row)))
    G = cfg['gpus_per_host']
    if ddl.has('TARGET_INFO_GPU') and conv['gpu_table']:
        for g in range(G):
            w.add('TARGET_INFO_GPU', {'vmId': vm, 'id': g, 'name': 'NVIDIA H100 80GB HBM3', 'busLocation': '0000:%02x:00.0' % cfg['pci_bus'][g],
                                      'uuid': 'GPU-%08x-%04x-%04x-%04x-%012x' % (h * 97 + g, h, g, 7, h * 1000 + g), 'cuDevice': g,
                                      'smCount': 132, 'clockRate': 1980000000, 'totalMemory': 85520809984, 'isDiscrete': 1,
                                      'computeMajor': 9, 'computeMinor': 0, 'chipName': 'GH100'})
    # processes: launcher + ranks
    lpid = cfg['pids'][ranks[0]] - 3
    w.add('PROCESSES', {'globalPid': vm | (lpid << 24), 'pid': lpid, 'name': 'torchrun' if len(ranks) > 1 else 'nsys'})
    for r in ranks:
        write_rank(w, job, cfg, r, T, cap_end, crash_info, vm)


def write_rank(w, job, cfg, r, T, cap_end, crash_info, vm):
    conv = cfg['conv']
    R = job.states[r]
    pid = cfg['pids'][r]
    gpid = vm | (pid << 24)
    tid = pid if conv['main_tid_is_pid'] else pid + 7
    gtid = gpid | tid
    G = cfg['gpus_per_host']
    dev = 0 if (conv['cvd'] and conv['naming'] != 'host') else r % G
    ctx = 1 + (r % 3 if conv['vary_ids'] else 0)
    w.add('PROCESSES', {'globalPid': gpid, 'pid': pid, 'name': 'python3' if conv['proc_name'] == 'python3' else 'pt_main_thread'})
    w.add('ThreadNames', {'nameId': w.sid('pt_main_thread' if conv['proc_name'] != 'python3' else 'python3'), 'priority': 0, 'globalTid': gtid})
    w.add('ThreadNames', {'nameId': w.sid('pt_autograd_0'), 'priority': 0, 'globalTid': gpid | (tid + 11)})
    srng = random.Random('%d:streams:%d' % (cfg['seed'], r))
    sids = {}
    used = set()

    def stream_id(st):
        v = sids.get(st)
        if v is None:
            if conv['vary_ids']:
                while True:
                    v = srng.randrange(7, 400)
                    if v not in used:
                        break
            else:
                v = 7 + 4 * len(sids)
            used.add(v)
            sids[st] = v
        return v
    stream_id('compute')
    corr = cfg['corr_base'][r]
    end_cap = cap_end[r]
    dead_t = crash_info['t'] if (crash_info and crash_info['class'] == 'crash' and crash_info['rank'] == r) else None
    nccl_dom = conv['nccl_domain_id']
    if conv['nccl_nvtx'] and conv['domain_create_row']:
        w.add('NVTX_EVENTS', {'start': T(cfg['t0_ns'][r]) - 1000000, 'eventType': 75, 'text': 'NCCL', 'globalTid': gtid, 'domainId': nccl_dom})
    name_style = conv['iter_marker']
    n_it = cfg['iterations']
    sync_id = w.sid('cudaStreamSynchronize_v3020')
    memcpy_id = w.sid('cudaMemcpyAsync_v3020')
    rt_launch = w.sid('cudaLaunchKernel_v7000')
    nccl_launch = w.sid(conv['nccl_launch_api'])
    nccl_class = 1 if conv['nccl_launch_api'].startswith('cu') and not conv['nccl_launch_api'].startswith('cuda') else 0
    for o in R.prog:
        if o.h is None:
            continue
        if o.h > end_cap or (dead_t is not None and o.h >= dead_t):
            continue
        k = o.k
        if k == 'B':
            if name_style == 'none':
                continue
            e_op = R.marks.get(('E', o.it))
            label = {'profiler': 'ProfilerStep#%d', 'iteration': 'iteration %d', 'step': 'step %d'}[name_style] % (o.it + cfg['iter_base'])
            endv = None
            if e_op is not None and e_op <= end_cap and (dead_t is None or e_op < dead_t):
                endv = T(e_op)
            elif dead_t is not None:
                continue   # the dying process never closed it and its unfinished range is lost
            w.add('NVTX_EVENTS', {'start': T(o.h), 'end': endv, 'eventType': 59, 'text': label, 'globalTid': gtid, 'domainId': 0})
            continue
        if k in ('E', 'C'):
            continue
        if k == 'S':
            if o.e is None or o.e > end_cap:
                continue   # a call that never returned writes no record
            corr += 1
            w.add('CUPTI_ACTIVITY_KIND_RUNTIME', {'start': T(o.h), 'end': T(o.e), 'eventClass': 0, 'globalTid': gtid,
                                                  'correlationId': corr, 'nameId': sync_id, 'returnValue': 0})
            w.add('CUPTI_ACTIVITY_KIND_SYNCHRONIZATION', {'start': T(o.h + 1000), 'end': T(o.e - 1000), 'deviceId': dev, 'contextId': ctx,
                                                          'streamId': stream_id('compute'), 'correlationId': corr, 'globalPid': gpid,
                                                          'syncType': 3, 'eventId': 0})
            continue
        corr += conv['corr_step']
        api_s, api_e = o.h, o.h + o.ad
        if k == 'N':
            nccl_range(w, o, api_s, api_e, T, gtid, conv, nccl_dom)
            w.add('CUPTI_ACTIVITY_KIND_RUNTIME', {'start': T(api_s), 'end': T(api_e), 'eventClass': nccl_class, 'globalTid': gtid,
                                                  'correlationId': corr, 'nameId': nccl_launch, 'returnValue': 0})
        elif k == 'M':
            w.add('CUPTI_ACTIVITY_KIND_RUNTIME', {'start': T(api_s), 'end': T(api_e), 'eventClass': 0, 'globalTid': gtid,
                                                  'correlationId': corr, 'nameId': memcpy_id, 'returnValue': 0})
        else:
            w.add('CUPTI_ACTIVITY_KIND_RUNTIME', {'start': T(api_s), 'end': T(api_e), 'eventClass': 0, 'globalTid': gtid,
                                                  'correlationId': corr, 'nameId': rt_launch, 'returnValue': 0})
        # the GPU record exists only for work that completed inside the capture
        if o.e is None or o.e > end_cap or (dead_t is not None and o.e > dead_t):
            continue
        if k == 'M':
            w.add('CUPTI_ACTIVITY_KIND_MEMCPY', {'start': T(o.s), 'end': T(o.e), 'deviceId': dev, 'contextId': ctx, 'streamId': stream_id('compute'),
                                                 'correlationId': corr, 'globalPid': gpid, 'bytes': o.bytes,
                                                 'copyKind': 1 if o.cat == 'copy' else 2, 'srcKind': 1 if o.cat == 'copy' else 2,
                                                 'dstKind': 2 if o.cat == 'copy' else 1, 'srcDeviceId': dev, 'dstDeviceId': dev})
            continue
        short, dem = o.nm
        sh = w.sid(short)
        dm = w.sid(dem)
        w.add('CUPTI_ACTIVITY_KIND_KERNEL', {'start': T(o.s), 'end': T(o.e), 'deviceId': dev, 'contextId': ctx,
                                             'streamId': stream_id(o.st), 'correlationId': corr, 'globalPid': gpid,
                                             'demangledName': dm, 'shortName': sh, 'launchType': 0, 'cacheConfig': 0,
                                             'registersPerThread': 128, 'gridX': 132, 'gridY': 1, 'gridZ': 1, 'blockX': 256, 'blockY': 1, 'blockZ': 1,
                                             'staticSharedMemory': 0, 'dynamicSharedMemory': 49152, 'localMemoryPerThread': 0,
                                             'localMemoryTotal': 0, 'gridId': corr * 3 + 11, 'sharedMemoryExecuted': 0,
                                             'tensorSizeMinusOneElements': '[]'})


def nccl_range(w, o, api_s, api_e, T, gtid, conv, dom):
    if not conv['nccl_nvtx']:
        return
    names = o.nv
    inside = conv['launch_inside_range']
    # ranges are laid out backwards from the launch: the last range holds the launch (inside) or
    # ends right before it
    d = 2500.0
    t_end = api_e + 800 if inside else api_s - 300
    if len(names) == 1:
        s0 = t_end - (api_e - api_s) - 6000 if inside else t_end - 6000
        w.add('NVTX_EVENTS', {'start': T(s0), 'end': T(t_end), 'eventType': 59, 'textId': w.sid(names[0]), 'globalTid': gtid, 'domainId': dom})
        return
    # GroupStart, Send/Recv..., GroupEnd (the launch happens in GroupEnd)
    ge_s = (api_s - 1500) if inside else (t_end - 4000)
    tcur = ge_s - 500
    mids = names[1:-1]
    spans = []
    for nm in reversed(mids):
        spans.append((tcur - d, tcur, nm))
        tcur -= d + 300
    spans.append((tcur - 1200, tcur, 'ncclGroupStart'))
    for a, b, nm in reversed(spans):
        w.add('NVTX_EVENTS', {'start': T(a), 'end': T(b), 'eventType': 59, 'textId': w.sid(nm), 'globalTid': gtid, 'domainId': dom})
    w.add('NVTX_EVENTS', {'start': T(ge_s), 'end': T(t_end), 'eventType': 59, 'textId': w.sid('ncclGroupEnd'), 'globalTid': gtid, 'domainId': dom})

# ----------------------------------------------------------------------------------------------
# configuration


def draw_conventions(rng, mode, over):
    if mode == 'plain':
        c = dict(naming='rank', rank_fmt='rank_%d.sqlite', host_fmt='%s.sqlite', nccl_names='dev_args', nccl_launch_api='cuLaunchKernelEx',
                 nccl_version='2.21.5-1', nccl_nvtx=True, domain_create_row=True, launch_inside_range=True, nccl_domain_id=1,
                 p2p='batched', group_single=True, dp_kind='allreduce', dp_overlap=True, dp_fp32=False, iter_marker='profiler',
                 string_order='first', string_base=1, row_order='time', vary_ids=False, cvd=True, gpu_table=True,
                 rank_env='torchrun', proc_name='python3', main_tid_is_pid=True, corr_step=1)
    else:
        c = dict(
            naming=rng.choice(['rank'] * 10 + ['host'] * 4 + ['pid'] * 3 + ['report'] * 3),
            rank_fmt=rng.choice(['rank_%d.sqlite', 'profile_rank%d.sqlite', 'trace.rank-%d.sqlite', 'rank%d.sqlite']),
            host_fmt=rng.choice(['%s.sqlite', 'report-%s.sqlite']),
            nccl_names=rng.choice(['dev_args', 'dev_comm', 'old']),
            nccl_nvtx=rng.random() < 0.7,
            domain_create_row=rng.random() < 0.6,
            launch_inside_range=rng.random() < 0.5,
            nccl_domain_id=rng.choice([1, 2, 3, 5]),
            p2p=rng.choice(['batched', 'separate', 'early']),
            group_single=rng.random() < 0.5,
            dp_kind=rng.choice(['allreduce', 'rs_ag']),
            dp_overlap=rng.random() < 0.6,
            dp_fp32=rng.random() < 0.5,
            iter_marker=rng.choice(['profiler', 'iteration', 'step', 'none', 'profiler']),
            string_order=rng.choice(['first', 'sorted', 'shuffled']),
            string_base=rng.choice([0, 1, 1000, 77]),
            row_order=rng.choice(['time', 'shuffled']),
            vary_ids=rng.random() < 0.8,
            cvd=rng.random() < 0.8,
            gpu_table=rng.random() < 0.8,
            rank_env=rng.choice(['torchrun', 'slurm', 'both', 'none']),
            proc_name=rng.choice(['python3', 'pt_main_thread']),
            main_tid_is_pid=rng.random() < 0.7,
            corr_step=rng.choice([1, 1, 2, 3]),
        )
        c['nccl_launch_api'] = 'cudaLaunchKernel_v7000' if c['nccl_names'] == 'old' else rng.choice(['cuLaunchKernelEx', 'cuLaunchKernelEx', 'cudaLaunchKernelExC_v11060'])
        c['nccl_version'] = '2.18.5-1' if c['nccl_names'] == 'old' else rng.choice(['2.21.5-1', '2.23.4-1', '2.27.3-1'])
    for k, v in over.items():
        c[k] = v
    return c


def parse_fault(spec, rng, cfg):
    f = spec.split(':')
    cls = f[0]
    L = cfg['layout_obj']
    n_it = cfg['iterations']
    G = cfg['gpus_per_host']
    nh = len(cfg['hostnames'])

    def fld(i, default):
        return f[i] if len(f) > i and f[i] not in ('', '?') else default

    def onset(i):
        v = fld(i, None)
        if v is not None:
            return int(v)
        # include onsets in the last quarter of the capture
        late_lo = max(2, n_it - max(2, n_it // 4))
        return rng.choice([rng.randrange(1, max(2, n_it // 2)), rng.randrange(late_lo, max(late_lo + 1, n_it - 1))])
    if cls == 'slow_gpu':
        return {'class': cls, 'rank': int(fld(1, rng.randrange(L.n))), 'onset': onset(2), 'factor': float(fld(3, 1.25 + 0.3 * rng.random()))}
    if cls == 'node':
        return {'class': cls, 'host_index': int(fld(1, rng.randrange(nh))), 'onset': onset(2), 'factor': float(fld(3, 1.2 + 0.2 * rng.random()))}
    if cls == 'slow_link':
        hs = fld(1, None)
        hi = [int(x) for x in hs.split('+')] if hs else [rng.randrange(nh)]
        return {'class': cls, 'host_indices': hi, 'onset': onset(2), 'factor': float(fld(3, 3.0 + 2.0 * rng.random()))}
    if cls == 'host_delay':
        return {'class': cls, 'rank': int(fld(1, rng.randrange(L.n))), 'onset': onset(2), 'ms': float(fld(3, cfg['step_ms'] * (0.08 + 0.1 * rng.random())))}
    if cls == 'extra_work':
        return {'class': cls, 'rank': int(fld(1, rng.randrange(L.n))), 'onset': onset(2), 'factor': float(fld(3, 1.25 + 0.2 * rng.random()))}
    if cls == 'stall':
        per = int(fld(1, rng.choice([2, 3, 4])))
        ms = float(fld(2, cfg['step_ms'] * (0.3 + 0.3 * rng.random())))
        on = fld(3, None)
        on = int(on) if on is not None else rng.randrange(1, per + 1)
        return {'class': cls, 'period': per, 'ms': ms, 'onset': on}
    if cls in ('crash', 'hang'):
        it = fld(2, None)
        it = int(it) if it is not None else rng.randrange(max(1, n_it // 2), n_it - 1)
        return {'class': cls, 'rank': int(fld(1, rng.randrange(L.n))), 'iteration': it}
    raise SystemExit('unknown fault class %r' % cls)


HOSTNAME_STYLES = ['node-%02d', 'gpu-node-%03d', 'dgx-h100-%d', 'hpc-r%d-n%d', 'ip-10-0-%d-%d']


def make_config(a):
    seed = a.seed
    rng = random.Random('%d:config' % seed)
    tp, pp, dp = parse_layout(a.layout)
    order = a.order
    if order == 'random':
        order = rng.choice(['tp-dp-pp', 'tp-dp-pp', 'tp-pp-dp', 'dp-tp-pp'])
    L = Layout(tp, pp, dp, order)
    G = a.gpus_per_host or (8 if (L.n % 8 == 0 and rng.random() < 0.5) else 4)
    if tp > G:
        G = tp
    nh = (L.n + G - 1) // G
    over = {}
    for kv in a.conv or []:
        k, v = kv.split('=', 1)
        v = {'true': True, 'false': False}.get(v, v)
        if isinstance(v, str) and v.isdigit():
            v = int(v)
        over[k] = v
    # conventions: drawn from the seed and the case (class, layout), so one seed varies them across classes
    crng = random.Random('%d:conv:%s:%s:%s' % (seed, a.layout, a.schedule, '+'.join(f.split(':')[0] for f in a.fault)))
    conv = draw_conventions(crng, a.conventions, over)
    hs = a.hostname_style if a.hostname_style else rng.choice(HOSTNAME_STYLES)
    base_idx = rng.randrange(0, 40) if '%d-n%d' not in hs and '%d-%d' not in hs else 0
    hostnames = []
    for h in range(nh):
        if hs.count('%d') == 2:
            hostnames.append(hs % (1 + h // 8, 1 + h % 8 + rng.randrange(0, 1)))
        elif hs == 'node-%02d':
            hostnames.append(hs % h)
        else:
            hostnames.append(hs % (base_idx + h))
    if len(set(hostnames)) != nh:
        hostnames = ['node-%02d' % h for h in range(nh)]
    schedule = a.schedule if a.schedule != 'random' else rng.choice(['1f1b', 'interleaved', 'gpipe'])
    if pp == 1:
        schedule = 'none'
    v = a.virtual_stages if schedule == 'interleaved' else 1
    m = a.microbatches
    if schedule == 'interleaved' and m % pp:
        m = pp * max(1, round(m / pp))
    if pp == 1:
        m = a.microbatches
    n_it = a.iterations
    step_ms = a.step_ms if a.step_ms else 100 + 200 * rng.random()
    layers = a.layers
    # one layer-forward (ns) so that the flush lasts about 75% of the step
    n_chunk_steps = m * v + pp - 1
    u = 0.70 * step_ms / (n_chunk_steps * 3.0 * layers)
    cfg = dict(seed=seed, layout_obj=L, gpus_per_host=G, hostnames=hostnames, schedule=schedule, vstages=v, microbatches=m,
               iterations=n_it, layers_per_chunk=layers, conv=conv, step_ms=step_ms, u_layer_ms=u,
               tp_xfer_ms=min(0.4, 0.03 + 0.05 * u), p2p_xfer_ms=0.05 + 0.05 * u, dp_xfer_ms=step_ms * (0.04 + 0.04 * rng.random()),
               dp_buckets=rng.choice([1, 2, 3]), opt_kernels=rng.choice([2, 4, 6]), inter_host_factor=1.6,
               gpu_speed_spread=0.01 + 0.01 * rng.random(), jitter_sigma=0.01 + 0.02 * rng.random(), outlier_p=0.002,
               host_launch_us=8 + 10 * rng.random(), step_gap_us=200 + 800 * rng.random(), schema=a.schema if a.schema != 'random' else crng.choice(['3.0.0', '3.11.1', '3.25.0', '3.25.0']),
               iter_base=rng.choice([0, 1, 37, 1200]))
    cfg['queue_depth'] = [rng.randrange(256, 1025)] * L.n
    qd = cfg['queue_depth'][0]
    cfg['queue_depth'] = [qd] * L.n
    cfg['t0_ns'] = [1.0 * MS + rng.random() * 0.5 * MS for _ in range(L.n)]
    cfg['host_rng'] = [random.Random('%d:hostgap:%d' % (seed, r)) for r in range(L.n)]
    cfg['clock_offset_ns'] = [int((rng.random() - 0.5) * 2 * a.clock_skew_ms * MS) for _ in range(nh)]
    pids = []
    for h in range(nh):
        b = rng.randrange(1000, 4000000)
        for g in range(G):
            # distinct and increasing on a host (two local ranks with one pid would write one file)
            step = rng.choice([1, 2, 17])  # drawn for every g, as before: the other draws stay
            b += step if g else 0
            pids.append(b)
    cfg['pids'] = pids[:L.n]
    cfg['corr_base'] = [rng.randrange(0, 10 ** 6) if conv['vary_ids'] else 0 for _ in range(L.n)]
    bus = list(range(0x18, 0x18 + 0x10 * G, 0x10))
    cfg['pci_bus'] = bus
    gem = list(GEMM_NAMES)
    rng.shuffle(gem)
    cfg['gemm_names'] = gem
    return cfg, rng


def simulate(cfg, faults, apply):
    job = Job(None, faults, cfg, apply)
    n_it = cfg['iterations']
    crash = [f for f in faults if f['class'] in ('crash', 'hang')] if apply else []
    crash_info = None
    if crash:
        x = crash[0]
        # first pass without the crash: where is the rank's host when it dies (the run is identical until then)
        r = x['rank']
        others = [f for f in faults if f['class'] not in ('crash', 'hang')]
        # the op index where it stops: a seeded position inside iteration x['iteration']
        prog, _ = Job(None, others, cfg, True).build(r)
        pre = Job(None, others, cfg, True)
        idx = [i for i, o in enumerate(prog) if o.it == x['iteration'] and o.k in ('K', 'N', 'M')]
        crng = random.Random('%d:crashpos' % cfg['seed'])
        k = idx[crng.randrange(len(idx) // 6, (5 * len(idx)) // 6)]
        pre.run(watch={r: k})
        t_die = pre.states[r].watch_h
        stop = {r: k}
        dead = {r: t_die} if x['class'] == 'crash' else None
        job.run(stop=stop, dead=dead)
        crash_info = {'class': x['class'], 'rank': r, 't': t_die, 'op_index': k,
                      'tail_ms': 20 + 480 * crng.random(), 'kill_t': t_die + (30 + 90 * crng.random()) * 1e9}
    else:
        job.run()
    return job, crash_info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('run_dir')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--layout', default='2x2x4')
    ap.add_argument('--order', default='tp-dp-pp', help='tp-dp-pp | tp-pp-dp | dp-tp-pp | random')
    ap.add_argument('--gpus-per-host', type=int, default=0)
    ap.add_argument('--schedule', default='1f1b', help='1f1b | interleaved | gpipe | random')
    ap.add_argument('--virtual-stages', type=int, default=2)
    ap.add_argument('--microbatches', type=int, default=8)
    ap.add_argument('--iterations', type=int, default=10)
    ap.add_argument('--layers', type=int, default=2, help='layers per model chunk')
    ap.add_argument('--step-ms', type=float, default=0)
    ap.add_argument('--clock-skew-ms', type=float, default=3.0)
    ap.add_argument('--fault', action='append', default=[])
    ap.add_argument('--conventions', default='random', help='random | plain')
    ap.add_argument('--conv', action='append', help='override one convention: key=value')
    ap.add_argument('--schema', default='random', help='3.0.0 | 3.11.1 | 3.25.0 | random')
    ap.add_argument('--hostname-style', default=None)
    ap.add_argument('--no-fault', '--counterfactual', dest='no_fault', action='store_true')
    ap.add_argument('--with-counterfactual', default=None, metavar='CF_DIR')
    a = ap.parse_args()
    t_start = time.time()
    cfg, rng = make_config(a)
    faults = [parse_fault(s, random.Random('%d:faults:%d:%s:%s' % (a.seed, i, s, a.layout)), cfg) for i, s in enumerate(a.fault)]
    L = cfg['layout_obj']
    job, crash_info = simulate(cfg, faults, not a.no_fault)
    n_it = cfg['iterations']
    # counterfactual (always simulated for the truth; written when asked)
    cf = None
    nonfatal = [f for f in faults if f['class'] not in ('crash', 'hang')]
    if nonfatal:
        cf, _ = simulate(cfg, faults, False)
    st = step_times(job, n_it)
    st_cf = step_times(cf, n_it) if cf else st
    # a hang other than the planted one is a simulator bug
    if not crash_info:
        for r, R in enumerate(job.states):
            if R.i < len(R.prog):
                raise SystemExit('sim3: deadlock at rank %d op %d (%s) — simulator bug' % (r, R.i, R.prog[R.i].k))
    truth = {
        'simulator': 'sim3', 'seed': a.seed, 'argv': sys.argv[1:],
        'layout': {'tp': L.tp, 'pp': L.pp, 'dp': L.dp, 'order': L.order},
        'ranks': L.n, 'gpus_per_host': cfg['gpus_per_host'],
        'hosts': [{'name': cfg['hostnames'][h], 'ranks': list(range(h * cfg['gpus_per_host'], min(L.n, (h + 1) * cfg['gpus_per_host'])))}
                  for h in range(len(cfg['hostnames']))],
        'iterations': n_it, 'microbatches': cfg['microbatches'] if L.pp > 1 else None,
        'schedule': cfg['schedule'], 'virtual_stages': cfg['vstages'],
        'step_ms_target': cfg['step_ms'], 'queue_depth': cfg['queue_depth'][0],
        'conventions': dict(cfg['conv'], schema=cfg['schema'], hostname_example=cfg['hostnames'][0], iter_base=cfg['iter_base']),
        'step_ms': st, 'step_ms_counterfactual': st_cf if faults else None,
        'no_fault': bool(a.no_fault),
        'clock_offset_ms': [x / MS for x in cfg['clock_offset_ns']],
        'faults': [],
    }
    hosts_of = lambda ranks: sorted(set(cfg['hostnames'][r // cfg['gpus_per_host']] for r in ranks))
    for f in faults:
        e = dict(f)
        if f['class'] in ('slow_gpu', 'host_delay', 'extra_work'):
            e['place'] = {'kind': 'rank', 'name': str(f['rank'])}
            e['ranks'] = [f['rank']]
            e['cause'] = f['class']
        elif f['class'] == 'node':
            hn = cfg['hostnames'][f['host_index']]
            e['place'] = {'kind': 'host', 'name': hn}
            e['ranks'] = truth['hosts'][f['host_index']]['ranks']
            e['cause'] = 'slow_gpu'
        elif f['class'] == 'slow_link':
            hn = [cfg['hostnames'][h] for h in f['host_indices']]
            e['place'] = {'kind': 'hosts', 'names': hn}
            e['cause'] = 'slow_link'
            # the narrowest set of hosts the data can point at: the hosts every slowed communicator shares
            inter = None
            for p in job.parts.values():
                if len(p.hosts) > 1 and set(f['host_indices']) & p.hosts and p.it >= f['onset']:
                    inter = set(p.hosts) if inter is None else inter & p.hosts
            e['hosts_identifiable'] = sorted(cfg['hostnames'][h] for h in (inter or []))
            e['ranks'] = sorted(r for r in range(L.n) if r // cfg['gpus_per_host'] in f['host_indices'])
        elif f['class'] == 'stall':
            e['place'] = {'kind': 'every_rank'}
            e['cause'] = 'stall'
            e['period_iterations'] = f['period']
            e['ranks'] = list(range(L.n))
        elif f['class'] in ('crash', 'hang'):
            e['place'] = {'kind': 'rank', 'name': str(f['rank'])}
            e['cause'] = f['class']
            e['ranks'] = [f['rank']]
            e['onset'] = f['iteration']
            if crash_info:
                e['capture_end_after_ms'] = crash_info['tail_ms'] if f['class'] == 'crash' else None
                e['kill_after_s'] = (crash_info['kill_t'] - crash_info['t']) / 1e9
                e['host'] = cfg['hostnames'][f['rank'] // cfg['gpus_per_host']]
        if f['class'] not in ('crash', 'hang'):
            on = max(1, f['onset'])
            if f['class'] == 'stall':
                on = f['onset']
            a_ = st[on:]
            b_ = st_cf[on:]
            if len(nonfatal) > 1:
                # several faults: what fixing this one buys = the run with only this one removed
                wo, _ = simulate(cfg, [g for g in faults if g is not f], True)
                b_ = step_times(wo, n_it)[on:]
                e['step_ms_without_this'] = step_times(wo, n_it)
            e['cost_ms_per_step'] = (sum(a_) / len(a_) - sum(b_) / len(b_)) if a_ else None
            e['cost_window'] = [on, n_it - 1]
            e['hosts'] = hosts_of(e['ranks']) if f['class'] != 'slow_link' else e['place']['names']
        truth['faults'].append(e)
    if len(nonfatal) > 1:
        truth['note'] = 'several faults: each cost_ms_per_step is the faulty run minus the run with only that fault removed'
    upto = n_it
    if crash_info:
        upto = faults[0]['iteration'] if faults[0]['class'] in ('crash', 'hang') else n_it
    b = bubble(job, cfg, upto)
    truth['pipeline'] = None
    if L.pp > 1:
        truth['pipeline'] = {'pp': L.pp, 'microbatches': cfg['microbatches'], 'virtual_stages': cfg['vstages'],
                             'schedule': cfg['schedule'], 'bubble_theoretical': (L.pp - 1) / (cfg['vstages'] * cfg['microbatches']),
                             'bubble_measured': b['job'] if b else None, 'bubble_per_stage': b['per_stage'] if b else None,
                             'bubble_without_faults': (bubble(cf, cfg, n_it) or {}).get('job') if cf else None}
    write_run(a.run_dir, job, cfg, truth, crash_info)
    with open(os.path.join(a.run_dir, 'truth.json'), 'w') as fh:
        json.dump(truth, fh, indent=1)
    if a.with_counterfactual:
        write_run(a.with_counterfactual, cf if cf else job, cfg, truth, None)
        t2 = dict(truth, no_fault=True, counterfactual_of=os.path.abspath(a.run_dir), step_ms=st_cf)
        with open(os.path.join(a.with_counterfactual, 'truth.json'), 'w') as fh:
            json.dump(t2, fh, indent=1)
    sys.stderr.write('sim3: %d ranks, %s, %.1f s\n' % (L.n, a.run_dir, time.time() - t_start))


if __name__ == '__main__':
    main()
