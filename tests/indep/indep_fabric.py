"""Fabric cost model of tests/indep/indep_scaling.py: NCCL's tuner (ring / tree, LL / LL128 / SIMPLE) over link classes.

Derived from NVIDIA/nccl `src/graph/tuning.cc` (master of 2026-06, `ncclTopoTuneModel` and `ncclTopoGetAlgoTime`),
read independently of straggler-scan. The constants below are NCCL's own; the fabric (bandwidth per link class,
scale of the hardware latencies, network latency, cross-pod penalty) is this simulator's choice, drawn per seed.

time_us = lat + nBytes / (1000 * algBw)      (ncclTopoGetAlgoTime, numPipeOps 1)
ring:  algBw = busBw * nRanks / nsteps, nsteps = 2 (n-1) for AllReduce, i.e. the bandwidth term is
       nBytes * 2 (n-1) / n / busBw (nccl-tests busbw, doc/PERFORMANCE.md);
       lat = baseLat + (nsteps - nInterSteps) * intraLat + nInterSteps * interLat, nInterSteps = 2 (nNodes - 1),
       x 1.4 (SM80+) for multi-node SIMPLE when nBytes / (nChannels * nRanks) >= 64 ("plateau of the ring");
       intraLat = max(intraLat, netOverhead (x3 for SIMPLE)) when nNodes > 1;
       interLat = hwLat[NET][RING][p] + latencyInter (twice for SIMPLE: the flush).
tree:  algBw = busBw / 2; busBw = min(0.92 busBw, nCh * perChMaxTreeBw), LL: min(busBw / 3.8, llMaxBw),
       LL128: min(busBw * 120/128, nCh * perChMaxTreeLL128Bw), x treeCorrectionFactor[p][log2(nBytes >> 6)];
       lat = baseLat + 2 ((nRanks/nNodes - 1) intraLat + log2(nNodes) interLat).
ring LL: busBw = min(llMaxBw, 0.5 busBw); ring LL128: min(0.92 busBw, nCh * perChMaxRingLL128Bw).

This simulator's extension (not in NCCL, which sees one flat network): the ring's busBw is that of the slowest link
class it crosses (NVLink inside a node, the pod's network, the links between pods, a slowed link); the steps that
cross a pod boundary (2 (nPods - 1) of the 2 (nNodes - 1) inter-node steps, by analogy with nInterSteps) pay
`xpod_extra_us` more latency each; a tree that spans pods pays it on its top level (2 x, up and down).
"""
import math

PROTOS = ('LL', 'LL128', 'SIMPLE')
# tuning.cc ncclTunerConstantsDefaults (us); index LL, LL128, SIMPLE
BASE_LAT = {'TREE': (6.8, 14.0, 8.4), 'RING': (6.6, 14.0, 8.4)}
HW_LAT = {'NVLINK': {'TREE': (0.6, 1.25, 4.0), 'RING': (0.6, 1.9, 3.4)},
          'NET': {'TREE': (5.0, 8.5, 14.0), 'RING': (2.7, 4.0, 14.0)}}
LL_MAX_BW_MULTINODE = {'intel': {2: 39.0, 3: 20.4}, 'amd': {2: 22.5, 3: 19.0}}   # llMaxBws[cpu][N2 | N4]
NET_OVERHEAD = {'intel': 1.0, 'amd': 2.0}               # getNetOverhead, x3 for SIMPLE
HOPPER = {'perChMaxRingLL128Bw': 36.7, 'perChMaxTreeBw': {2: 41.4, 3: 36.0}, 'perChMaxTreeLL128Bw': {2: 36.7, 3: 29.0}}
PLATEAU_SM90 = 1.4
TREE_CORRECTION = {
    'LL': (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    'LL128': (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    'SIMPLE': (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9)}


def log2i(x):
    return x.bit_length() - 1 if x > 0 else -1


def hop_latencies(fab, algo, p, n_nodes):
    """(intraLat, interLat, cross-pod interLat) in us for algorithm algo, protocol index p"""
    s = fab['lat_scale']
    intra = HW_LAT['NVLINK'][algo][p] * s
    if algo == 'RING' and n_nodes > 1:
        intra = max(intra, NET_OVERHEAD[fab['cpu']] * (3 if PROTOS[p] == 'SIMPLE' else 1))
    inter = HW_LAT['NET'][algo][p] * s + fab['net_latency_us'] * (2 if PROTOS[p] == 'SIMPLE' else 1)
    return intra, inter, inter + fab['xpod_extra_us']


def ring_time(fab, n, n_nodes, n_pods, nbytes, bus, p):
    """(time_us, latency_us, bandwidth_us, busbw of the protocol) of a ring AllReduce; bus = SIMPLE busBw (GB/s)"""
    proto = PROTOS[p]
    nsteps = 2 * (n - 1)
    n_inter = 2 * (n_nodes - 1) if n_nodes > 1 else 0
    n_x = 2 * (n_pods - 1) if n_pods > 1 else 0
    intra, inter, xlat = hop_latencies(fab, 'RING', p, n_nodes)
    lat = BASE_LAT['RING'][p] + (nsteps - n_inter) * intra + (n_inter - n_x) * inter + n_x * xlat
    if proto == 'SIMPLE' and n_nodes > 1 and nbytes / (fab['nchannels'] * n) >= 64:
        lat *= PLATEAU_SM90
    if proto == 'LL':
        bw = min(0.5 * bus, LL_MAX_BW_MULTINODE[fab['cpu']][min(3, max(2, n_nodes))] if n_nodes > 1 else 141.0)
    elif proto == 'LL128':
        bw = min(0.92 * bus, fab['nchannels'] * HOPPER['perChMaxRingLL128Bw'])
    else:
        bw = bus
    bwt = nbytes * 2.0 * (n - 1) / n / (1000.0 * bw)
    return lat + bwt, lat, bwt, bw


def tree_time(fab, n, n_nodes, n_pods, nbytes, bus, p):
    proto = PROTOS[p]
    idx = min(3, max(2, n_nodes))
    bw = min(bus * 0.92, fab['nchannels'] * HOPPER['perChMaxTreeBw'][idx])
    if proto == 'LL':
        bw = min(bw / 3.8, LL_MAX_BW_MULTINODE[fab['cpu']][idx])
    elif proto == 'LL128':
        bw = min(bw * 120.0 / 128.0, fab['nchannels'] * HOPPER['perChMaxTreeLL128Bw'][idx])
    ls = log2i(nbytes >> 6)
    if 0 <= ls < 23:
        bw *= TREE_CORRECTION[proto][ls]
    intra, inter, xlat = hop_latencies(fab, 'TREE', p, n_nodes)
    lat = BASE_LAT['TREE'][p] + 2 * ((n // n_nodes - 1) * intra + log2i(n_nodes) * inter)
    if n_pods > 1:
        lat += 2 * (xlat - inter)
    bwt = 2.0 * nbytes / (1000.0 * bw)
    return lat + bwt, lat, bwt, bw


class Fabric:
    """Hosts in pods; the ring visits hosts in index order and closes from the last back to the first."""

    def __init__(self, fab, pod_of, slow=None):
        self.fab, self.pod_of, self.slow = fab, pod_of, slow   # slow: {'hosts': [a, b], 'factor': F, 'iter': I}
        self.cache = {}

    def ring_bus(self, hosts, it=0):
        """(busBw of the slowest link class the ring crosses, name of that class, pods spanned)"""
        f = self.fab
        pods = {self.pod_of[h] for h in hosts}
        if len(hosts) == 1:
            return f['intra_busbw'], 'nvlink', 1
        best, what = min(f['intra_busbw'], f['inter_busbw']), 'pod_network'
        for i, a in enumerate(hosts):
            b = hosts[(i + 1) % len(hosts)]
            x = self.pod_of[a] != self.pod_of[b]
            bw = f['xpod_busbw'] if x else f['inter_busbw']
            cls = 'cross_pod' if x else 'pod_network'
            if self.slow and it >= self.slow.get('iter', 0) and sorted((a, b)) == sorted(self.slow['hosts']):
                bw /= self.slow['factor']
                cls = 'slow_link'
            if bw < best:
                best, what = bw, cls
        return best, what, len(pods)

    def allreduce(self, n, hosts, nbytes, it=0, algos=('RING',)):
        """NCCL's choice among algos x protocols: dict with the chosen one and every candidate"""
        key = (n, tuple(hosts), nbytes, algos, bool(self.slow) and it >= self.slow.get('iter', 0))
        if key in self.cache:
            return self.cache[key]
        bus, cls, n_pods = self.ring_bus(list(hosts), it)
        n_nodes = len(hosts)
        cands = []
        for algo in algos:
            fn = ring_time if algo == 'RING' else tree_time
            tbus = bus if algo == 'RING' else self.tree_bus(hosts, it)
            for p in range(3):
                t, lat, bwt, bw = fn(self.fab, n, n_nodes, n_pods, nbytes, tbus, p)
                cands.append({'algorithm': algo, 'protocol': PROTOS[p], 'us': t, 'latency_us': lat, 'bandwidth_us': bwt,
                              'busbw_gbps_model': bw})
        best = min(cands, key=lambda c: c['us'])
        out = dict(best, bottleneck=cls, ring_busbw_gbps=bus, nodes=n_nodes, pods=n_pods, candidates=cands)
        self.cache[key] = out
        return out

    def tree_bus(self, hosts, it=0):
        """a tree's busBw: every node sends its data up and receives it back over its slowest link class"""
        return self.ring_bus(list(hosts), it)[0]


def fit_seed_fabric(fab, nbytes, targets_ms, gpn=8, pods_at=256):
    """Choose net_latency_us and inter_busbw (least squares of log time over the one-pod scales), then
    xpod_busbw so that the largest scale (two pods) takes its target. Returns the updated fabric."""
    scales = sorted(targets_ms)
    one_pod = [n for n in scales if n <= pods_at]
    big = [n for n in scales if n > pods_at]

    def model(f, n):
        hosts = list(range(n // gpn))
        pod_of = {h: h * gpn // pods_at for h in hosts}
        return Fabric(f, pod_of).allreduce(n, hosts, nbytes)['us'] / 1000.0

    def err(f):
        return sum(math.log(model(f, n) / targets_ms[n]) ** 2 for n in one_pod)

    best = None
    for lat in [x * 10.0 for x in range(0, 101)]:                       # latencyInter 0..1000 us
        for bw in [x * 0.5 for x in range(4, 161)]:                      # 2..80 GB/s
            f = dict(fab, net_latency_us=lat, inter_busbw=bw, xpod_busbw=bw)
            e = err(f)
            if best is None or e < best[0]:
                best = (e, lat, bw)
    _, lat, bw = best
    step_l, step_b = 5.0, 0.25
    for _ in range(30):                                                  # refine around the grid point
        improved = False
        for dl, db in ((step_l, 0), (-step_l, 0), (0, step_b), (0, -step_b)):
            l2, b2 = max(0.0, lat + dl), max(0.5, bw + db)
            f = dict(fab, net_latency_us=l2, inter_busbw=b2, xpod_busbw=b2)
            e = err(f)
            if e < best[0]:
                best, lat, bw, improved = (e, l2, b2), l2, b2, True
        if not improved:
            step_l, step_b = step_l / 2, step_b / 2
    f = dict(fab, net_latency_us=round(lat, 3), inter_busbw=round(bw, 4))
    if big:
        n = big[-1]
        lo, hi = 0.01, f['inter_busbw']
        for _ in range(80):                                             # time falls as xpod_busbw grows
            mid = (lo + hi) / 2
            if model(dict(f, xpod_busbw=mid), n) > targets_ms[n]:
                lo = mid
            else:
                hi = mid
        f['xpod_busbw'] = round((lo + hi) / 2, 4)
    else:
        f['xpod_busbw'] = f['inter_busbw']
    return f
