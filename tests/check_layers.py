#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Where the layers stand against their goal (README, "Layout"), and a ratchet: it
fails when any figure grows past tests/layers_baseline.txt, and when one shrinks, so that
the baseline is lowered with the change that lowered it.
  - ND_API definitions outside src/nd and src/spi;
  - uses of NTSTATUS values (include/netdirect/status.h) in src/core, src/transports,
    src/verbs and src/rdmacm;
  - includes of include/netdirect/ headers in src/verbs and src/rdmacm;
  - files that import each other in a circle, per directory: a file uses a function or
    object another defines (nm of the build's objects; a file's own header does not
    count), and the strongly connected groups of that graph are listed.
Usage: check_layers.py SOURCE_DIR BUILD_DIR [--write]   (--write: record the figures now)
"""
import collections
import glob
import os
import re
import subprocess
import sys

src, build = sys.argv[1], sys.argv[2]
write = '--write' in sys.argv[3:]
baseline_path = os.path.join(src, 'tests', 'layers_baseline.txt')


def files(pattern):
    return sorted(glob.glob(os.path.join(src, pattern), recursive=True))


def count(regex, paths):
    return sum(len(regex.findall(open(p, encoding='utf-8').read())) for p in paths)


def nm(obj, *flags):
    out = subprocess.run(['nm', *flags, obj], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def circles(obj_dir):
    """The groups of object files of @obj_dir that use each other in a circle."""
    objs = sorted(glob.glob(os.path.join(build, obj_dir, '*.o')))
    name = {o: os.path.basename(o)[:-len('.c.o')] for o in objs}
    owner = {}
    for o in objs:
        for f in nm(o, '--defined-only'):
            if len(f) == 3 and f[1] in 'TDBR':
                owner[f[2]] = name[o]
    edges = collections.defaultdict(set)
    for o in objs:
        for f in nm(o, '-u'):
            if f[-1] in owner and owner[f[-1]] != name[o]:
                edges[name[o]].add(owner[f[-1]])
    # Tarjan's strongly connected components, iteratively.
    index, low, on, stack, groups, n = {}, {}, set(), [], [], 0
    for root in sorted(name.values()):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(' '.join(sorted(group)))
    return groups


status_names = re.findall(r'#define ((?:ND|STATUS)_[A-Z0-9_]+)\s+ND_STATUS_',
                          open(os.path.join(src, 'include/netdirect/status.h'), encoding='utf-8').read())
status_use = re.compile(r'\b(' + '|'.join(status_names) + r')\b')
figures = {}
figures['nd_api_outside_nd'] = count(re.compile(r'^ND_API\b', re.M),
                                     [p for p in files('src/**/*.c') if not re.search(r'/src/(nd|spi)/', p)])
for d in ('core', 'transports', 'verbs', 'rdmacm'):
    figures['ntstatus_uses_src_' + d] = count(status_use, files('src/%s/**/*.[ch]' % d))
# ND's front end is the only part of src/ that may name ND's public functions.
# ND's entry points: written out (ND_API ... nd_name() or made by ND_ENTRY(name, ...).
nd_text = ''.join(open(p, encoding='utf-8').read() for p in files('src/nd/*.c'))
nd_names = (re.findall(r'^ND_API\s+[^(]*?\bnd_(\w+)\(', nd_text, re.M) +
            re.findall(r'^ND_ENTRY\((\w+),', nd_text, re.M))
figures['nd_calls_outside_nd'] = count(re.compile(r'\bnd_(?:%s)\(' % '|'.join(nd_names)),
    [p for d in ('core', 'transports', 'verbs', 'rdmacm') for p in files('src/%s/**/*.[ch]' % d)])
figures['netdirect_includes_verbs_rdmacm'] = count(re.compile(r'#include [<"]netdirect/'),
                                                   files('src/verbs/**/*.[ch]') + files('src/rdmacm/**/*.[ch]'))
for label, obj_dir in (('core', 'src/CMakeFiles/nd_objects.dir/core'),
                       ('nd', 'src/CMakeFiles/nd_api_objects.dir/nd'),
                       ('iwarp', 'src/CMakeFiles/nd_objects.dir/transports/iwarp'),
                       ('shm', 'src/CMakeFiles/nd_objects.dir/transports/shm'),
                       ('verbs', 'src/verbs/CMakeFiles/netdirect-ibverbs.dir'),
                       ('rdmacm', 'src/rdmacm/CMakeFiles/netdirect-rdmacm.dir')):
    if not glob.glob(os.path.join(build, obj_dir, '*.o')):
        sys.exit('no objects in %s: build first' % os.path.join(build, obj_dir))
    groups = circles(obj_dir)
    figures['files_in_circles_' + label] = sum(len(g.split()) for g in groups)
    for g in groups:
        print('circle in %s: %s' % (label, g))

if write:
    with open(baseline_path, 'w', encoding='utf-8') as f:
        f.write('# tests/check_layers.py --write; each figure may only fall (README, "Layout")\n')
        for k in sorted(figures):
            f.write('%s %d\n' % (k, figures[k]))
    sys.exit(0)
baseline = {}
for line in open(baseline_path, encoding='utf-8'):
    if line.strip() and not line.startswith('#'):
        k, v = line.split()
        baseline[k] = int(v)
bad = 0
for k in sorted(figures):
    was = baseline.get(k)
    state = 'ok' if was == figures[k] else 'GREW' if was is None or figures[k] > was else 'fell: lower the baseline'
    print('%-36s %5d (baseline %s) %s' % (k, figures[k], was, state))
    bad += state != 'ok'
sys.exit(1 if bad else 0)
