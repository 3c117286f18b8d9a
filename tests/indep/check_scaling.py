#!/usr/bin/python3
"""Compare the `scaling` rows of `straggler-scan scaling ... --summary OUT.json` with FAMILY_DIR/scaling_truth.json
of tests/indep/indep_scaling.py.

Considers the rows with collective AllReduce and group_size equal to each run's world size (the gradient
all-reduce). Prints one line per check, PASS or FAIL (and `note` lines), then 'RESULT pass=N fail=N'; exit 1 on
any failure.
  check_scaling.py OUT.json FAMILY_DIR/scaling_truth.json [--json RESULT.json]
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_verdict import host_aliases

TIME_TOL, BUSBW_TOL = 0.05, 0.02


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('summary')
    ap.add_argument('truth')
    ap.add_argument('--json', help='write {"pass": N, "fail": N, "checks": [...]} here')
    a = ap.parse_args()
    truth = json.load(open(a.truth))
    checks = []

    def say(ok, msg):
        checks.append({'ok': bool(ok), 'check': msg})
        print('%-4s %s' % ('PASS' if ok else 'FAIL', msg))

    def note(msg):
        print('note %s' % msg)

    def finish():
        p = sum(c['ok'] for c in checks)
        f = len(checks) - p
        print('RESULT pass=%d fail=%d  (%s seed %d%s)' % (p, f, truth['scenario'], truth['seed'],
                                                          ', payloads' if truth['payloads'] else ''))
        if a.json:
            with open(a.json, 'w') as fh:
                json.dump({'pass': p, 'fail': f, 'checks': checks, 'scenario': truth['scenario'],
                           'seed': truth['seed'], 'payloads': truth['payloads']}, fh, indent=1)
        sys.exit(1 if f else 0)

    try:
        summ = json.load(open(a.summary))
    except (OSError, ValueError) as e:
        say(False, 'no scaling key: summary %s unreadable (%s)' % (a.summary, e))
        finish()
    rows = summ.get('scaling') if isinstance(summ, dict) else None
    if not isinstance(rows, list):
        say(False, 'no scaling key (a list of rows) in %s' % a.summary)
        finish()
    rows = [x for x in rows if isinstance(x, dict)]
    exp = truth['expected']
    al = host_aliases({'hosts': truth['hosts'], 'files': {}})
    bw_causes = set(exp['bandwidth_causes'])
    payloads = truth['payloads']

    def host_idx(names):
        out = set()
        for h in names or []:
            out |= al.get(str(h), set()) | al.get(str(h).split('.')[0], set())
        return out

    runs = sorted(truth['runs'], key=lambda r: r['group_size'])
    largest = runs[-1]['group_size']
    picked = {}
    for run in runs:
        n = run['group_size']
        tag = 'n=%d' % n
        cand = [x for x in rows if x.get('collective') == 'AllReduce' and x.get('group_size') == n]
        if not cand:
            say(False, '%s: no row with collective AllReduce and group_size %d (rows: %s)' % (
                tag, n, sorted({(x.get('collective'), x.get('group_size')) for x in rows}, key=str)[:12]))
            continue
        if len(cand) > 1:                               # several size buckets / spans: take the planted one
            best = [x for x in cand if x.get('bytes') == run['bytes']] or \
                   [x for x in cand if x.get('nodes') == run['nodes']] or cand
            note('%s: %d AllReduce rows with group_size %d; checking the one with bytes %s nodes %s' % (
                tag, len(cand), n, best[0].get('bytes'), best[0].get('nodes')))
            cand = best
        row = picked[n] = cand[0]
        say(True, '%s: AllReduce row found (run %s)' % (tag, row.get('run')))
        # ---- span
        say(row.get('nodes') == run['nodes'], '%s: nodes %s (planted %d)' % (tag, row.get('nodes'), run['nodes']))
        if row.get('pods') is None:
            note('%s: pods null (planted %d; null is allowed only without --topology)' % (tag, run['pods']))
        else:
            say(row.get('pods') == run['pods'], '%s: pods %s (planted %d)' % (tag, row.get('pods'), run['pods']))
        # ---- the cliff
        want = exp['cliff_group_size'] == n
        cliff, cause = bool(row.get('cliff')), row.get('cause')
        if want:
            say(cliff and cause == exp['cause'], '%s: cliff %s cause %s (expected a cliff, cause %s)' % (
                tag, row.get('cliff'), cause, exp['cause']))
            if exp['cause'] == 'slow_link':
                got = host_idx(row.get('hosts'))
                need = set(exp['host_index'])
                say(need <= got, '%s: hosts %s contain both planted hosts %s' % (
                    tag, (row.get('hosts') or [])[:8] + (['...'] if len(row.get('hosts') or []) > 8 else []),
                    exp['hosts']))
                if need <= got and len(got) > 2:
                    note('%s: %d suspect hosts named for a slow link between 2' % (tag, len(got)))
        elif truth['scenario'] == 'small':            # latency growth may be called a cliff, never a bandwidth one
            if cliff and cause in bw_causes:
                say(False, '%s: cliff with bandwidth-type cause %s on a latency-bound ring' % (tag, cause))
            else:
                say(True, '%s: no bandwidth-type cliff (cliff %s, cause %s)' % (tag, row.get('cliff'), cause))
                if cliff:
                    note('%s: cliff reported with cause %s (latency growth; tolerated)' % (tag, cause))
        else:
            say(not cliff, '%s: no cliff (cliff %s, cause %s)' % (tag, row.get('cliff'), cause))
        # ---- time and bandwidth
        t = row.get('time_ms')
        refs = [run['time_ms'], run['time_ms_steady']]
        ok = isinstance(t, (int, float)) and any(abs(t - r) <= TIME_TOL * r for r in refs)
        say(ok, '%s: time_ms %s within %d%% of planted %.4f (steady %.4f)' % (
            tag, t, round(100 * TIME_TOL), refs[0], refs[1]))
        if payloads:
            say(row.get('bytes') == run['bytes'], '%s: bytes %s (planted %d)' % (tag, row.get('bytes'), run['bytes']))
            b = row.get('busbw_gbps')
            brefs = [run['busbw_gbps'], run['busbw_gbps_steady']]
            ok = isinstance(b, (int, float)) and any(abs(b - r) <= BUSBW_TOL * r for r in brefs)
            say(ok, '%s: busbw_gbps %s within %d%% of planted %.3f (steady %.3f)' % (
                tag, b, round(100 * BUSBW_TOL), brefs[0], brefs[1]))
        else:
            say(row.get('bytes') is None and row.get('busbw_gbps') is None,
                '%s: bytes %s and busbw_gbps %s null without payloads' % (tag, row.get('bytes'), row.get('busbw_gbps')))
        if row.get('bound') is not None and row.get('bound') != run['bound']:
            note('%s: bound %s (planted model says %s: latency %.3f ms vs bandwidth %.3f ms)' % (
                tag, row.get('bound'), run['bound'], run['latency_ms'], run['bandwidth_ms']))
    # ---- family-wide
    if exp.get('no_bandwidth_cliff'):
        bad = [x for x in rows if x.get('cliff') and x.get('cause') in bw_causes]
        say(not bad, 'no row in the whole table has a bandwidth-type cliff (%s)' % (
            ', '.join('%s n=%s %s' % (x.get('collective'), x.get('group_size'), x.get('cause')) for x in bad[:4]) or 'none'))
    if exp.get('largest_bound'):
        row = picked.get(largest)
        say(row is not None and row.get('bound') == exp['largest_bound'], 'n=%d (largest scale): bound %s (expected %s)' % (
            largest, None if row is None else row.get('bound'), exp['largest_bound']))
        for run in runs[:-1]:
            r2 = picked.get(run['group_size'])
            if r2 is not None:
                note('n=%d: bound %s (planted %s)' % (run['group_size'], r2.get('bound'), run['bound']))
    extra = [x for x in rows if x.get('cliff') and not any(x is p for p in picked.values())]
    for x in extra[:6]:
        note('other row with a cliff: %s n=%s bytes=%s cause %s' % (x.get('collective'), x.get('group_size'),
                                                                    x.get('bytes'), x.get('cause')))
    finish()


if __name__ == '__main__':
    main()
