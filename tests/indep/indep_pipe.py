"""Pipeline schedules and the pipeline-bubble truth of tests/indep/indep_sim.py.

Schedules (per stage, the order of forward and backward passes of (microbatch, model chunk)):
  1f1b         Megatron forward_backward_pipelining_without_interleaving: P-s-1 warm-up forwards, then
               one forward and one backward at a time, then the remaining backwards.
  gpipe        all M forwards, then all M backwards (microbatch 0 first, as torch.distributed.pipelining's
               ScheduleGPipe), then the flush.
  interleaved  Megatron forward_backward_pipelining_with_interleaving, microbatch_group_size_per_vp_stage
               = P: get_schedule_table (groups of P microbatches, chunk by chunk), (P-s-1)*2 + (V-1)*P
               warm-up forwards, steady forward then backward, backward chunk = V-1-chunk(k).
The 1f1b program keeps the simulator's original hand-written p2p order (indep_model.build_program). For
gpipe and interleaved the p2p order of every stage comes from an ideal timeline (see plan()).
"""
from indep_model import KERNELS, FWD_LAYER, BWD_LAYER

SCHEDULES = {'1f1b': '1f1b', 'gpipe': 'gpipe', 'interleaved': 'interleaved_1f1b'}
HEAD_F = ['ln_f', 'logits', 'xent_f']            # output layer + loss on the last (virtual) stage
HEAD_B = ['xent_b', 'dgemm', 'wgemm', 'ln_b']
# fault kinds that can stretch the bubble -> pipeline cause (summary contract `pipeline.causes`)
STRAGGLER_FAULTS = ('slow_gpu', 'host_delay', 'extra_work', 'tiny_kernels', 'copy_bubbles', 'pageable_h2d', 'gc_pause')


def layer_us(roles):
    return sum(KERNELS[r][4] for r in roles if r != 'TP')


def extra_roles(job, s, c, fwd):
    """(before, after) the layers of chunk c on stage s: embedding on the first virtual stage, head on the last"""
    first, last = s == 0 and c == 0, s == job.pp - 1 and c == job.V - 1
    if fwd:
        return (['embed_f'] if first else []), (HEAD_F if last else [])
    return (HEAD_B if last else []), (['embed_b'] if first else [])


def layer_scale(job, s, c, fwd):
    """--balanced-stages: layer kernels shortened so that embedding / head do not make their stage heavier"""
    if not job.a.balanced_stages:
        return 1.0
    pre, post = extra_roles(job, s, c, fwd)
    lay = job.Lc * layer_us(FWD_LAYER if fwd else BWD_LAYER)
    sc = (lay - layer_us(pre + post)) / lay
    if sc < 0.2:
        raise SystemExit('--balanced-stages: the embedding/head of stage %d chunk %d outweigh its %d layers' % (s, c, job.Lc))
    return sc


def imbalance(job, s, it):
    f = 1.0
    for x in job.faults:
        if x['kind'] == 'stage_imbalance' and x['stage'] == s and it >= x['iter']:
            f *= x['factor']
    return f


def nominal_pass_ns(job, s, c, fwd):
    """base compute time of one forward / backward pass of chunk c on stage s (no TP, no faults)"""
    pre, post = extra_roles(job, s, c, fwd)
    lay = job.Lc * layer_us(FWD_LAYER if fwd else BWD_LAYER) * layer_scale(job, s, c, fwd)
    return 1000 * (lay + layer_us(pre + post))


def compute_order(job, s):
    """[('F'|'B', microbatch, chunk)] of stage s, in issue order"""
    P, M, V = job.pp, job.M, job.V
    if job.sched == 'gpipe':
        return [('F', i, 0) for i in range(M)] + [('B', i, 0) for i in range(M)]
    if job.sched == '1f1b':
        W = min(P - s - 1, M)
        out = [('F', i, 0) for i in range(W)]
        for k in range(M - W):
            out += [('F', W + k, 0), ('B', k, 0)]
        return out + [('B', k, 0) for k in range(M - W, M)]
    table = []                                   # get_schedule_table(M, V, group = P)
    for g0 in range(0, M, P):
        g1 = M if g0 + P >= M else g0 + P
        table += [(mb, c) for c in range(V) for mb in range(g0, g1)]
    total = M * V
    W = min((P - s - 1) * 2 + (V - 1) * P, total)
    fw = lambda k: ('F', table[k][0], table[k][1])
    bw = lambda k: ('B', table[k][0], V - 1 - table[k][1])
    out = [fw(k) for k in range(W)]
    for k in range(total - W):
        out += [fw(k + W), bw(k)]
    return out + [bw(k) for k in range(total - W, total)]


def producer(job, s, op):
    """(stage, op, link kind) whose output op at stage s consumes, or None"""
    kind, mb, c = op
    P, V = job.pp, job.V
    if kind == 'F':
        if s > 0: return s - 1, ('F', mb, c), 'pp'
        if c > 0: return P - 1, ('F', mb, c - 1), 'ppw'       # wrap-around: chunk c-1 on the last stage
        return None
    if s < P - 1: return s + 1, ('B', mb, c), 'pp'
    if c < V - 1: return 0, ('B', mb, c + 1), 'ppw'
    return None                                                 # the loss: its own forward


def ideal_timeline(job):
    """Stage orders and start/end (ns) of every pass with nominal kernel sums and free, instant transfers."""
    P = job.pp
    orders = [compute_order(job, s) for s in range(P)]
    dur = {(s, 'F' if fwd else 'B', c): int(imbalance(job, s, 1) * nominal_pass_ns(job, s, c, fwd))
           for s in range(P) for c in range(job.V) for fwd in (True, False)}
    end, start = {}, {}
    ptr, free = [0] * P, [0] * P
    left = sum(len(o) for o in orders)
    while left:
        moved = False
        for s in range(P):
            while ptr[s] < len(orders[s]):
                op = orders[s][ptr[s]]
                dep = producer(job, s, op)
                t = free[s]
                if dep is not None:
                    if (dep[0], dep[1]) not in end:
                        break
                    t = max(t, end[(dep[0], dep[1])])
                if op[0] == 'B' and dep is None:
                    t = max(t, end[(s, ('F', op[1], op[2]))])
                start[(s, op)] = t
                end[(s, op)] = free[s] = t + dur[(s, op[0], op[2])]
                ptr[s] += 1; left -= 1; moved = True
        if not moved:
            raise SystemExit('internal error: schedule %s deadlocks (P=%d M=%d V=%d)' % (job.sched, P, job.M, job.V))
    return orders, start, end


def ideal_bubble(job):
    """the contract's bubble of the ideal timeline (what the schedule itself costs with these stage times)"""
    orders, start, end = ideal_timeline(job)
    t0 = min(start[(0, op)] for op in orders[0] if op[0] == 'F')
    t1 = max(end[(0, op)] for op in orders[0] if op[0] == 'B')
    work = sum(end[(s, op)] - start[(s, op)] for s in range(job.pp) for op in orders[s])
    return (job.pp * (t1 - t0) - work) / work


def plan(job):
    """Per stage, the program of one iteration: ('F'|'B', mb, chunk, [transfer ids to wait for]) and
    ('S'|'R', link kind, peer stage, transfer id).

    Sends and receives are isend / irecv (Megatron's overlap_p2p_comm path, _p2p_ops: one NCCL op and one
    SendRecv kernel per send or receive, one peer each) on the link's own stream; the compute stream waits
    for a receive (req.wait()) right before the pass that needs it and never for a send. Order: an ideal
    timeline (nominal kernel sums, free transfers) places each transfer at the moment its data is produced;
    every stage sorts its passes and transfers by that timeline with one global key, so the n-th op of a link
    is the same transfer at both ends. A receive is then moved earlier, as Megatron prefetches it, to just
    after the last pass of the same direction before the pass that needs it (never past an op of its link).
    """
    P = job.pp
    orders, start, end = ideal_timeline(job)
    items = [[] for _ in range(P)]
    tid = 0
    for s in range(P):
        for op in orders[s]:
            dep = producer(job, s, op)
            waits = []
            if dep is not None:
                ps, pop, link = dep
                t = end[(ps, pop)]
                tie = -ps if op[0] == 'F' else ps              # forward: downstream first; backward: upstream first
                key = (t, 0, 0 if op[0] == 'F' else 1, tie, tid)
                items[ps].append((key, ('S', link, s, tid)))
                items[s].append((key, ('R', link, ps, tid)))
                waits.append(tid)
                tid += 1
            items[s].append(((start[(s, op)], 1, 0, 0, 0), op + (waits,)))
    out = []
    for lst in items:
        seq = [x[1] for x in sorted(lst, key=lambda kv: kv[0])]
        consumer = {w: j for j, x in enumerate(seq) if x[0] in 'FB' for w in x[3]}
        pos, last_on_link = {}, {}
        for i, x in enumerate(seq):
            p = float(i)
            if x[0] == 'R':
                j = consumer[x[3]]
                comp = [k for k in range(j) if seq[k][0] in 'FB']
                same = [k for k in comp if seq[k][0] == seq[j][0]]
                t = same[-1] if same else (comp[-1] if comp else -1)
                p = min(float(i), t + 0.5)
                if (x[1], x[2]) in last_on_link:
                    p = max(p, last_on_link[(x[1], x[2])])
            if x[0] in 'SR':
                last_on_link[(x[1], x[2])] = p
            pos[i] = p
        out.append([seq[i] for i in sorted(range(len(seq)), key=lambda i: (pos[i], i))])
    links = {}                                   # the n-th op of a link must be the same transfer at both ends
    for s, prog in enumerate(out):
        for x in prog:
            if x[0] in 'SR':
                links.setdefault((x[1],) + tuple(sorted((s, x[2]))), {}).setdefault(s, []).append((x[3], x[0]))
    for key, ends in links.items():
        (s1, a1), (s2, a2) = sorted(ends.items())
        if [t for t, _ in a1] != [t for t, _ in a2] or any(d1 == d2 for (_, d1), (_, d2) in zip(a1, a2)):
            raise SystemExit('internal error: p2p ops of link %s do not pair up' % (key,))
    return out


# ---------------------------------------------------------------- truth: the bubble as the contract defines it
def union_len(ivs, lo, hi):
    tot, cur0, cur1 = 0, None, None
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in ivs if b > lo and a < hi):
        if cur1 is None or a > cur1:
            if cur1 is not None: tot += cur1 - cur0
            cur0, cur1 = a, b
        else:
            cur1 = max(cur1, b)
    return tot + (cur1 - cur0 if cur1 is not None else 0)


def measure(job, st, lanes=None):
    """Flush span per pipeline and steady iteration; each stage's work. A pipeline is one DP replica's stages
    seen from one TP rank t (its own span from stage 0's TP rank t); lanes: the TP ranks pooled (default all)."""
    P = job.pp
    lanes = list(range(job.tp)) if lanes is None else lanes
    hang = min((s.it for s in st if s.dead), default=None)
    its = [i for i in range(1, job.a.iters) if hang is None or i < hang]
    bub, work, mbwork, p2p, spans = [0] * P, [0] * P, [0] * P, [0] * P, []
    by_pipe = []
    for d, t in ((d, t) for d in range(job.dp) for t in lanes):
        ranks = [job.rank(t, d, p) for p in range(P)]
        idx = []
        for r in ranks:
            comp, net = {}, {}
            for (a, b, tag) in st[r].pwork:
                comp.setdefault(tag[0], []).append((a, b, tag[1]))
            for (a, b, it, kind) in st[r].pnet:
                net.setdefault((it, kind), []).append((a, b))
            idx.append((comp, net))
        pb = pw = 0
        for it in its:
            c0 = idx[0][0].get(it, [])
            fs = [a for a, b, k in c0 if k == 'F']
            bs = [b for a, b, k in c0 if k == 'B']
            if not fs or not bs:
                continue
            t0, t1 = min(fs), max(bs)
            spans.append((t1 - t0) / 1e6)
            for p in range(P):
                comp, net = idx[p]
                ivs = [(a, b) for a, b, k in comp.get(it, [])] + net.get((it, 'tp'), [])
                w = union_len(ivs, t0, t1)
                bub[p] += (t1 - t0) - w; work[p] += w; pb += (t1 - t0) - w; pw += w
                mbwork[p] += sum(b - a for a, b, k in comp.get(it, []))
                p2p[p] += union_len(net.get((it, 'pp'), []), t0, t1)
        if t == lanes[0]:
            by_pipe.append([pb, pw])
        else:
            by_pipe[-1][0] += pb; by_pipe[-1][1] += pw
    if not sum(work):
        return None
    n = len(spans)
    return {'bubble': sum(bub) / sum(work),
            'per_stage': [round(bub[p] / work[p], 4) if work[p] else None for p in range(P)],
            'by_pipeline': [round(b / w, 4) if w else None for b, w in by_pipe], 'iterations': its, 'span_ms': round(sum(spans) / n, 3),
            'stage_work_ms_per_microbatch': [round(mbwork[p] / n / job.M / 1e6, 3) for p in range(P)],
            'stage_p2p_ms_per_step': [round(p2p[p] / n / 1e6, 3) for p in range(P)]}   # n: pipelines x iterations


def cause_groups(job):
    """pipeline cause -> the planted faults that could stretch the bubble"""
    groups = {}
    for i, f in enumerate(job.faults):
        k = f['kind']
        if k == 'stage_imbalance':
            groups.setdefault('stage_imbalance', []).append(i)
        elif k == 'slow_p2p':
            groups.setdefault('p2p_transfer', []).append(i)
        elif k == 'slow_link':
            crosses = False
            for key, (kind, members) in job.comms.items():
                hs = sorted({job.host(m) for m in members})
                edges = {tuple(sorted((hs[j], hs[(j + 1) % len(hs)]))) for j in range(len(hs))} if len(hs) > 1 else set()
                crosses |= kind == 'pp' and tuple(f['hosts']) in edges
            if crosses:
                groups.setdefault('p2p_transfer', []).append(i)
        elif k in STRAGGLER_FAULTS and f.get('rank') != 'all':
            groups.setdefault('straggler', []).append(i)
    return groups


def pipeline_truth(job, st):
    """truth.json `pipeline`: the measured bubble and, by replaying without them, what planted faults add"""
    import argparse, copy
    from indep_model import Job
    from indep_replay import simulate
    P, M, V = job.pp, job.M, job.V
    theo = (P - 1) / (V * M)
    m = measure(job, st)
    out = {'pp': P, 'microbatches': M, 'virtual_stages': V, 'schedule': SCHEDULES[job.sched],
           'layers_per_chunk': job.Lc, 'balanced_stages': bool(job.a.balanced_stages),
           'bubble_theoretical': round(theo, 6),
           'bubble_measured': round(m['bubble'], 4) if m else None,
           'bubble_measured_tp0': None,
           'inflation': round(m['bubble'] / theo, 4) if m else None,
           'per_stage': m['per_stage'] if m else None,
           'bottleneck_stage': None, 'expected_causes': [], 'causes_tolerated': [],
           'definition': 'per pipeline (one DP replica\'s stages seen from TP rank t, every t pooled) and steady '
                         'iteration (not 0): span = stage 0\'s first forward kernel start .. its last backward kernel '
                         'end; work = union of the stage\'s forward/backward compute kernels and TP collective kernels '
                         'inside the span; bubble = sum(span - work) / sum(work) over stages, pipelines and iterations; '
                         'bubble_measured_tp0: the same over TP rank 0 only'}
    if m is None:
        out['note'] = 'no complete steady iteration'
        return out
    for k in ('by_pipeline', 'iterations', 'span_ms', 'stage_work_ms_per_microbatch', 'stage_p2p_ms_per_step'):
        out[k] = m[k]
    out['bubble_measured_tp0'] = round(measure(job, st, [0])['bubble'], 4) if job.tp > 1 else out['bubble_measured']
    imb = [f for f in job.faults if f['kind'] == 'stage_imbalance']
    wk = m['stage_work_ms_per_microbatch']
    if imb:
        out['bottleneck_stage'] = max(range(P), key=lambda p: wk[p])
    out['stage_work_ratio'] = round(max(wk) / min(wk), 4) if min(wk) > 0 else None
    groups = cause_groups(job)
    deltas = {}

    def without(drop):
        a2 = copy.copy(job.a)
        a2.fault = [x for i, x in enumerate(job.a.fault) if i not in drop]
        j2 = Job(a2)
        st2 = simulate(j2)[0]
        m2 = measure(j2, st2)
        return m2['bubble'] if m2 else None
    for cause, idx in sorted(groups.items()):
        b2 = without(set(idx))
        if b2 is None:
            continue
        d = m['bubble'] - b2
        deltas[cause] = {'bubble_without': round(b2, 4), 'delta': round(d, 4),
                         'faults': [job.a.fault[i] for i in idx]}
        if d >= max(0.03, 0.1 * b2):
            out['expected_causes'].append(cause)
        elif d > 0.005:
            out['causes_tolerated'].append(cause)
    if groups:
        allidx = set(i for idx in groups.values() for i in idx)
        b0 = deltas[next(iter(groups))]['bubble_without'] if len(groups) == 1 and deltas else without(allidx)
        out['bubble_without_faults'] = round(b0, 4) if b0 is not None else None
    out['cause_deltas'] = deltas
    # the order the contract suggests: the largest contribution first
    out['expected_causes'].sort(key=lambda c: -deltas[c]['delta'])
    nominal = [sum(nominal_pass_ns(job, p, c, fwd) for c in range(V) for fwd in (True, False)) for p in range(P)]
    out['model_stage_ratio'] = round(max(nominal) / min(nominal), 4)
    if not imb and out['stage_work_ratio'] and out['stage_work_ratio'] >= 1.05:
        out['causes_tolerated'].append('stage_imbalance')
        if out['model_stage_ratio'] >= 1.05:
            out['note'] = ('stages differ by %.0f%% in nominal work per microbatch (embedding / output layer and loss; '
                           'see --balanced-stages): stage_imbalance is not planted but may be reported' % (
                               100 * (out['model_stage_ratio'] - 1)))
    out['causes_tolerated'].append('warmup_cooldown')
    return out
