#!/usr/bin/python3
"""Compare a straggler-scan --summary JSON with the truth.json of tests/indep/indep_sim.py.

Prints one line per check: 'found', 'missed' or 'false' (plus 'tolerated' / 'skip' notes) and a last
line 'RESULT found=N missed=N false=N'. Exit 1 on any miss or false positive.
  check_verdict.py SUMMARY.json TRUTH.json [--h5 OUT.h5] [--json]
"""
import argparse, json, os, re, shutil, subprocess, sys


def host_aliases(truth):
    """Names a host may go by in a verdict: its Hostname, short name, per-host file stem, index."""
    al = {}
    for i, h in enumerate(truth['hosts']):
        names = {h, h.split('.')[0], str(i), 'node%02d' % i, 'node-%02d' % i, 'host%d' % i}
        for fn, info in truth.get('files', {}).items():
            if info.get('host') == h and len(info.get('ranks', [])) > 1:
                names.add(os.path.splitext(fn)[0])
        for n in names:
            al.setdefault(n, set()).add(i)
    return al


def read_h5_clock(path):
    """/clock/rank and /clock/offset_ms through h5dump (h5py is not needed)."""
    if not path or not os.path.exists(path) or not shutil.which('h5dump'):
        return None
    out = {}
    for ds in ('rank', 'offset_ms'):
        try:
            txt = subprocess.run(['h5dump', '-d', '/clock/' + ds, '-w', '0', path], capture_output=True, text=True,
                                 timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        m = re.search(r'DATA\s*\{(.*?)\}', txt, re.S)
        if not m:
            return None
        body = re.sub(r'\(\d+(,\d+)*\):', ' ', m.group(1))
        out[ds] = [float(x) for x in re.findall(r'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?', body)]
    if len(out['rank']) != len(out['offset_ms']):
        return None
    return {int(r): o for r, o in zip(out['rank'], out['offset_ms'])}


# names a verdict might use for the findings this simulator plants (book-of-root-causes headings)
FINDING_ALIASES = {'small_kernel': 'small_kernels', 'small_kernel_overhead': 'small_kernels',
                   'kernel_launch_overhead': 'small_kernels', 'tiny_kernels': 'small_kernels',
                   'module_loading_in_hot_path': 'module_loading', 'jit_compilation': 'module_loading',
                   'gc_pauses': 'gc_pause', 'h2d': 'excessive_h2d', 'excessive_h2d_transfers': 'excessive_h2d',
                   'excessive_host_to_device_transfers': 'excessive_h2d', 'h2d_transfers': 'excessive_h2d',
                   'nccl_serialisation': 'nccl_serialization'}


def check_findings(truth, summ, say):
    want = truth.get('findings')
    absent = truth.get('findings_absent') or []
    if want is None:
        return
    got = summ.get('findings')
    if not isinstance(got, list):
        print('%-9s findings: the summary has no findings list (%d expected, %d ruled out)' % ('skip', len(want), len(absent)))
        return
    rep = {}                                        # canonical name -> (ranks or None, names used)
    for x in got:
        if not isinstance(x, dict):
            continue
        raw = str(x.get('finding', '')).strip()
        name = FINDING_ALIASES.get(raw.lower(), raw.lower())
        rk, used = rep.get(name, (set(), set()))
        rs = x.get('ranks')
        if isinstance(rs, list):
            rk = (rk or set()) | {r for r in rs if isinstance(r, int)}
        elif rs is None and rk == set():
            rk = None                               # reported without ranks
        rep[name] = (rk, used | {raw})
    tol = {}
    for u in truth.get('findings_unobservable', []):
        tol.setdefault(u['finding'], set()).add(u['rank'])
    for w in want:
        name, ranks = w['finding'], set(w['ranks'])
        desc = 'finding %s ranks %s' % (name, sorted(ranks) if len(ranks) < 9 else '[%d ranks]' % len(ranks))
        if name not in rep:
            say('missed', desc + ': not reported')
            continue
        rk, used = rep[name]
        alias = '' if used == {name} else ' (as %s)' % ','.join(sorted(used))
        if rk is None:
            say('found', desc + alias + ' (reported without ranks)')
        elif ranks <= rk:
            say('found', desc + alias)
        else:
            say('missed', desc + alias + ': ranks %s not named' % sorted(ranks - rk))
        extra = (rk or set()) - ranks
        if extra:
            kind = 'tolerated' if extra <= tol.get(name, set()) else 'false'
            say(kind, 'finding %s also names ranks %s (nothing planted there%s)' % (
                name, sorted(extra)[:12], ' that passes the bar' if kind == 'tolerated' else ''))
    for name in absent:
        if name in rep:
            rk, used = rep[name]
            say('false', 'finding %s%s reported for ranks %s; the truth rules it out' % (
                name, '' if used == {name} else ' (as %s)' % ','.join(sorted(used)),
                'n/a' if rk is None else sorted(rk)[:12]))
        else:
            print('%-9s finding %s absent, as it should be' % ('ok', name))
    for name in sorted(set(rep) - {w['finding'] for w in want} - set(absent)):
        print('%-9s finding %s for ranks %s (not modelled by the simulator)' % (
            'note', name, 'n/a' if rep[name][0] is None else sorted(rep[name][0])[:12]))


PIPE_CAUSES = ('stage_imbalance', 'p2p_transfer', 'straggler', 'warmup_cooldown', 'unknown')


def check_pipeline(truth, summ, say):
    """truth `pipeline` (PP > 1) against the summary's `pipeline` object"""
    tp = truth.get('pipeline')
    if not tp:
        return
    sp = summ.get('pipeline')
    desc = 'pipeline %s P=%d M=%d V=%d' % (tp['schedule'], tp['pp'], tp['microbatches'], tp['virtual_stages'])
    if not isinstance(sp, dict):
        # A capture of 3 iterations or fewer has at most one complete steady flush on every stage
        # once the warm-up is left out: the analyser may decline it (its policy, as the verdict
        # declines to judge stragglers on too few iterations). Added by the analyser's author.
        if sp is None and 'pipeline' in summ and truth.get('iterations', 99) <= 3:
            print('%-9s %s: null on a %d-iteration capture (too short to measure)' % ('skip', desc, truth['iterations']))
            return
        say('missed', desc + ': the summary\'s pipeline is %s' % ('absent' if 'pipeline' not in summ else 'null'))
        return
    for k in ('schedule', 'microbatches', 'virtual_stages'):
        say('found' if sp.get(k) == tp[k] else 'missed', 'pipeline %s %s%s' % (
            k, tp[k], '' if sp.get(k) == tp[k] else ' (got %s)' % sp.get(k)))
    bt, bs = tp.get('bubble_theoretical'), sp.get('bubble_theoretical')
    ok = isinstance(bs, (int, float)) and abs(bs - bt) <= 1e-6
    say('found' if ok else 'missed', 'pipeline bubble_theoretical %.6f%s' % (bt, '' if ok else ' (got %s)' % bs))
    bm, got = tp.get('bubble_measured'), sp.get('bubble_measured')
    if bm is None:
        print('%-9s pipeline bubble_measured: no complete steady iteration in the truth' % 'skip')
    else:
        ok = isinstance(got, (int, float)) and abs(got - bm) <= 0.02
        b0 = tp.get('bubble_measured_tp0')              # the contract allows TP rank 0 alone as well (TP > 1)
        alt = not ok and isinstance(got, (int, float)) and b0 is not None and abs(got - b0) <= 0.02
        say('found' if ok or alt else 'missed', 'pipeline bubble_measured %.4f within 0.02 (got %s%s)%s' % (
            bm, got, '' if not isinstance(got, (int, float)) else ', off by %+.4f' % (got - bm),
            ' (matches the TP-rank-0 convention, %.4f)' % b0 if alt else ''))
    if tp.get('bottleneck_stage') is not None:
        ok = sp.get('bottleneck_stage') == tp['bottleneck_stage']
        say('found' if ok else 'missed', 'pipeline bottleneck_stage %d%s' % (
            tp['bottleneck_stage'], '' if ok else ' (got %s)' % sp.get('bottleneck_stage')))
    causes = sp.get('causes') if isinstance(sp.get('causes'), list) else []
    odd = [c for c in causes if c not in PIPE_CAUSES]
    if odd:
        print('%-9s pipeline causes %s are not contract names %s' % ('note', odd, list(PIPE_CAUSES)))
    for c in tp.get('expected_causes', []):
        say('found' if c in causes else 'missed', 'pipeline cause %s%s' % (c, '' if c in causes else ' (got %s)' % causes))
    faults = truth.get('faults', [])
    got_str = {x.get('rank') for x in summ.get('stragglers') or []}
    lay = truth['layout']
    for f in faults:
        if f['kind'] == 'stage_imbalance':
            st = f['stage']
            first = causes[0] if causes else None
            say('false' if first == 'straggler' else 'found', 'pipeline stage_imbalance stage %d: straggler %s first cause (causes %s)' % (
                st, 'is the' if first == 'straggler' else 'not the', causes))
            ranks = {r for r in got_str if isinstance(r, int) and r // (lay['tp'] * lay['dp']) == st}
            say('false' if ranks else 'found', 'pipeline stage_imbalance stage %d: %s' % (
                st, 'ranks %s of the stage named stragglers' % sorted(ranks) if ranks else 'no rank of the stage named a straggler'))
    exp = {e['rank'] for e in truth.get('stragglers', []) if e.get('fault', {}).get('kind') == 'slow_gpu'}
    for r in sorted(exp):
        if 'straggler' not in tp.get('expected_causes', []):
            print('%-9s pipeline slow_gpu rank %d: the bubble barely moves (%s), straggler cause not required' % (
                'note', r, tp.get('cause_deltas', {}).get('straggler')))
            continue
        ok = 'straggler' in causes and r in got_str
        say('found' if ok else 'missed', 'pipeline slow_gpu rank %d: straggler among causes and the rank among stragglers%s' % (
            r, '' if ok else ' (causes %s, stragglers %s)' % (causes, sorted(x for x in got_str if x is not None)[:8])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('summary'); ap.add_argument('truth')
    ap.add_argument('--h5', help='the -o output, for per-rank clock offsets')
    ap.add_argument('--json', help='also write the counts here')
    a = ap.parse_args()
    truth = json.load(open(a.truth))
    try:
        summ = json.load(open(a.summary))
    except (OSError, ValueError) as e:
        print('summary: missed (unreadable: %s)' % e)
        print('RESULT found=0 missed=1 false=0'); sys.exit(1)
    res = {'found': 0, 'missed': 0, 'false': 0}

    def say(kind, text):
        if kind in res: res[kind] += 1
        print('%-9s %s' % (kind, text))

    # ---- stragglers
    got = {s.get('rank'): s for s in summ.get('stragglers') or []}
    tolerated = {u['rank'] for u in truth.get('unobservable', []) if 'rank' in u}
    expected = {e['rank']: e for e in truth.get('stragglers', [])}
    for r, e in sorted(expected.items()):
        s = got.get(r)
        want = 'straggler rank %d %s onset %d' % (r, e['cause'], e['onset_iteration'])
        if s is None:
            say('missed', want + ': not reported')
            continue
        problems, notes = [], []
        causes = [e['cause']] + e.get('cause_alternatives', [])
        if s.get('cause') not in causes:
            problems.append('cause %s' % s.get('cause'))
        elif s.get('cause') != e['cause']:
            notes.append('cause %s accepted' % s.get('cause'))
        on = s.get('onset_iteration')
        if on is None and e['onset_iteration'] == 0:
            notes.append('onset null: present from the start')
        elif on is None or abs(on - e['onset_iteration']) > 1:
            problems.append('onset %s' % on)
        if problems and e.get('cost_pct') is not None and e['cost_pct'] < 2.0:
            notes.append('marginal: the step loses only %.2f%%' % e['cost_pct'])
        say('missed' if problems else 'found', want + (': reported with ' + ', '.join(problems) if problems else '')
            + (' (%s)' % '; '.join(notes) if notes else ''))
    for r, s in sorted(got.items(), key=lambda kv: (kv[0] is None, kv[0])):
        if r in expected:
            continue
        desc = 'straggler rank %s %s onset %s' % (r, s.get('cause'), s.get('onset_iteration'))
        if r in tolerated:
            say('tolerated', desc + ' (planted but below the observability bar)')
        else:
            say('false', desc + ' (nothing planted there)')

    # ---- slow links
    al = host_aliases(truth)

    def idx(names):
        out = set()
        for n in names or []:
            n = str(n)
            out |= al.get(n, al.get(n.split('.')[0], set()))
        return out

    # a report matches when it names a planted host and no host outside those that every slowed
    # communicator shares (a ring over 4 hosts with one slow edge cannot be narrowed further)
    want_links = [(set(l['host_index']), set(l.get('narrowest_host_index', l['host_index'])))
                  for l in truth.get('slow_links', [])]
    tol_links = [set(u['fault']['hosts']) for u in truth.get('unobservable', []) if u.get('fault', {}).get('kind') == 'slow_link']
    rows = [(l, idx(l.get('hosts'))) for l in summ.get('slow_links') or []]
    conv = truth.get('conventions', {})
    hosts_unknown = conv.get('format') == 'kineto' and not conv.get('hosts_in_file_names')
    for w, wide in want_links:
        hit = [l for l, h in rows if h & w and h <= wide]
        if not hit and hosts_unknown:              # a Kineto trace names no host: "hosts unknown" (empty list) is a hit
            hit = [l for l, h in rows if not l.get('hosts')]
        names = [truth['hosts'][i] for i in sorted(w)]
        say('found' if hit else 'missed', 'slow link %s' % '-'.join(names))
    for l, h in rows:
        if any(h & w and h <= wide for w, wide in want_links):
            continue
        if hosts_unknown and want_links and not l.get('hosts'):
            continue
        kind = 'tolerated' if any(h and h <= w for w in tol_links) else 'false'
        say(kind, 'slow link %s (%s)' % (','.join(map(str, l.get('hosts') or [])), l.get('collective')))

    # ---- desync (crash / hang)
    roots = truth.get('dead_ranks', [])
    allowed = set()
    for d in truth.get('desync', []):
        allowed |= set(d['missing_ranks'])
    srows = summ.get('desync') or []
    missing_all = set()
    for d in srows:
        missing_all |= set(d.get('missing_ranks') or [])
    for r in roots:
        say('found' if r in missing_all else 'missed', 'desync: rank %d missing' % r)
    for d in srows:
        extra = set(d.get('missing_ranks') or []) - allowed
        if extra or not roots:
            say('false', 'desync %s seq %s missing %s' % (d.get('communicator'), d.get('seq'), d.get('missing_ranks')))

    # ---- findings (summary `findings`: [{"finding", "ranks", ...}])
    check_findings(truth, summ, say)

    # ---- pipeline bubble (truth `pipeline`, PP > 1)
    check_pipeline(truth, summ, say)

    # ---- layout
    lay = summ.get('layout')
    tl = truth['layout']
    if lay:
        ok = all(lay.get(k) == tl[k] for k in ('tp', 'pp', 'dp'))
        say('found' if ok else 'missed', 'layout TP%dxPP%dxDP%d%s' % (tl['tp'], tl['pp'], tl['dp'],
            '' if ok else ' (got %sx%sx%s)' % (lay.get('tp'), lay.get('pp'), lay.get('dp'))))

    # ---- clocks
    tc = truth.get('clock', {}).get('rank_offset_ms')
    if tc:
        off = read_h5_clock(a.h5)
        if off is None:
            tmax = max(tc.values()) - min(tc.values())
            sm = (summ.get('clock') or {}).get('max_offset_ms')
            print('%-9s clock: no per-rank offsets (no h5 or h5dump); truth spread %.3f ms, summary max_offset_ms %s'
                  % ('skip', tmax, sm))
        else:
            ref = min(off)
            worst, wr = 0.0, None
            for r, o in off.items():
                if str(r) not in tc:
                    continue
                want = tc[str(r)] - tc[str(ref)]
                if abs(o - want) > worst:
                    worst, wr = abs(o - want), r
            miss = [r for r in map(int, tc) if r not in off and r not in roots]
            ok = worst <= 0.050 and not miss
            say('found' if ok else 'missed', 'clock offsets of %d ranks within 50 us (worst %.1f us at rank %s%s)'
                % (len(off), worst * 1e3, wr, ', no offset for %s' % miss[:5] if miss else ''))
    print('RESULT found=%d missed=%d false=%d' % (res['found'], res['missed'], res['false']))
    if a.json:
        json.dump(res, open(a.json, 'w'))
    sys.exit(1 if res['missed'] or res['false'] else 0)


if __name__ == '__main__':
    main()
