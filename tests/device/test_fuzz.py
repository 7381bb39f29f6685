"""Fuzz every native entry point (built-in module and x64 natmod) with random
shapes, lengths and types on the unix build. Only Python exceptions are
acceptable: the subprocess must finish normally, whatever it was fed."""

import pytest
from mp_helpers import run_script

FUZZ = r"""
import sys, random
from array import array
sys.path.append({natmod_dir!r})
import {module} as k
random.seed({seed})
R = random.randrange

def farr(n):
    return array('f', [random.uniform(-3, 3) for _ in range(n)])

def layout(valid):
    L = R(1, 5) if valid else R(0, 40)
    sizes = [R(1, 20) if valid else random.choice([0, 1, 2, 3, 4, 5, 17, 255, 4096, 65535]) for _ in range(L + 1)]
    acts = [R(0, 3) if valid else R(0, 7) for _ in range(L)]
    items = [L] + sizes + acts
    if not valid and random.random() < 0.3:
        items = items[:R(0, len(items) + 1)] + [R(0, 65536) for _ in range(R(0, 3))]
    return array('H', items), sizes, L

def junk():
    c = R(0, 16)
    if c == 0: return None
    if c == 1: return random.choice([0, 1, -1, 2, 4, 65535, 65536, 2**31, -2**31, 2**63, 10**30])
    if c == 2: return 1.5
    if c == 3: return 'abc'
    if c == 4: return [1.0, 2.0]
    if c == 5: return (1, 2)
    if c == 6: return bytearray(R(0, 64))
    if c == 7: return bytes(R(0, 64))
    if c == 8: return array('d', [0.0] * R(0, 8))
    if c == 9: return array('H', [R(0, 65536) for _ in range(R(0, 8))])
    if c == 10: return array('i', [0] * R(0, 8))
    if c == 11: return memoryview(farr(R(0, 40)))[R(0, 4):]
    if c == 12: return R(-5, 300)
    return farr(random.choice([0, 1, 3, 4, 5, 16, 17, 64, 65, 300]))

def limits(n):
    # Action limits for mlp/Forward: good ones, or non-finite, inverted, short, junk.
    c = R(0, 7)
    if c == 0: return None
    if c == 1: return junk()
    v = [random.uniform(-3, 0) for _ in range(n)] + [random.uniform(0, 3) for _ in range(n)]
    if c == 2 and v: v[R(0, 2 * n)] = random.choice([float('nan'), float('inf'), -float('inf')])
    if c == 3: v = v[n:] + v[:n]  # lower limits above upper ones
    if c == 4: v = v[:R(0, 2 * n + 1)]
    return array('f', v)

def clamped_ok(out, lim):
    # Every action of a call that succeeded with limits lies inside them.
    n = len(out)
    return all(lim[i] <= out[i] <= lim[n + i] for i in range(n))

def net_and_scratch(lay):
    # The sizes the layout asks for, or small random ones when the layout is invalid.
    try:
        n = k.net_size(lay); s = k.scratch_size(lay)
    except (ValueError, TypeError, OverflowError):
        n, s = R(0, 100), R(0, 100)
    if n > 200000:
        n = R(0, 100)
    return n, s

def consistent(fn):
    # Mostly-valid arguments with one or two perturbed, to get past early checks.
    lay, sizes, L = layout(random.random() < 0.7)
    if fn in ('mlp', 'Forward'):
        n, s = net_and_scratch(lay)
    if fn == 'mlp':
        args = [farr(sizes[-1] if sizes else 1), farr(sizes[0] if sizes else 1), farr(n), lay, farr(s)]
        shared = farr(n + 64)
        if random.random() < 0.2:  # overlapping buffers
            mv = memoryview(shared)
            args[random.choice([0, 1, 4])] = mv[R(0, 8):]
        if random.random() < 0.05 and len(args[1]):  # a non-finite observation
            args[1][R(0, len(args[1]))] = random.choice([float('nan'), float('inf')])
    elif fn in ('dense', 'dense_batch'):
        n_in, n_out, batch = R(1, 40), R(1, 40), R(1, 4)
        w = farr(k.layer_size(n_in, n_out))
        if fn == 'dense':
            args = [farr(n_out), farr(n_in), w, R(0, 3)]
        else:
            args = [farr(batch * n_out), farr(batch * n_in), w, n_in, n_out, R(0, 3)]
    elif fn == 'pack':
        n_in, n_out = R(1, 30), R(1, 30)
        args = [farr(k.layer_size(n_in, n_out)), farr(n_in * n_out), farr(n_out), n_in, n_out]
    elif fn == 'Forward':
        args = [farr(sizes[-1] if sizes else 1), farr(n), lay, farr(s), farr(sizes[0] if sizes else 1)]
    elif fn in ('net_size', 'scratch_size'):
        args = [lay]
    elif fn == 'layer_size':
        args = [R(-2, 70000), R(-2, 70000)]
    elif fn == 'crc32':
        args = [junk()] + ([junk()] if random.random() < 0.5 else [])
    else:
        args = [random.choice(['auto', 'scalar', 'sse2', 'avx2', 'neon', '', 'avx2x'])]
    if fn in ('mlp', 'Forward') and random.random() < 0.5:
        args.append(limits(sizes[-1] if sizes else 1))
    for _ in range(R(0, 3)):
        if args:
            i = R(0, len(args))
            c = R(0, 3)
            if c == 0:
                args[i] = junk()
            elif c == 1 and type(args[i]) is array and len(args[i]) < 100000:
                args[i] = farr(max(0, len(args[i]) + R(-5, 6)))
            else:
                args[i] = R(-3, 70000) if type(args[i]) is int else args[i]
    if random.random() < 0.05:
        args = args[:R(0, len(args) + 1)] + [junk() for _ in range(R(0, 2))]
    return args

FNS = ['dense', 'dense_batch', 'mlp', 'Forward', 'pack', 'layer_size', 'net_size', 'scratch_size', 'crc32', 'isa']
ok = 0
errs = {{}}
for it in range({iters}):
    fn = random.choice(FNS)
    args = consistent(fn)
    try:
        r = getattr(k, fn)(*args)
        if fn == 'Forward':  # then call it with good and bad observations
            n_obs = len(args[4]) if type(args[4]) is array else R(0, 20)
            obs = random.choice([farr(n_obs), [random.uniform(-1, 1) for _ in range(n_obs)],
                                 tuple(range(n_obs)), junk(), ['x'] * n_obs, farr(n_obs + 1),
                                 [float('nan')] * n_obs])
            r(obs)
        if fn in ('mlp', 'Forward') and len(args) == 6 and type(args[5]) is array:
            if not clamped_ok(args[0], args[5]):
                print('BAD', fn, 'action outside its limits', list(args[0]), list(args[5]))
        ok += 1
    except (TypeError, ValueError, OverflowError) as e:
        name = type(e).__name__
        errs[name] = errs.get(name, 0) + 1
    except Exception as e:
        print('BAD', fn, type(e).__name__, e)
k.isa('auto')
print('DONE', ok, sorted(errs.items()))
"""


@pytest.mark.device
@pytest.mark.parametrize("module", ["nm_kernels", "nm_kernels_natmod"])
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_native_entry_points(micropython, natmod_x64_dir, module, seed):
    proc = run_script(micropython, FUZZ.format(natmod_dir=str(natmod_x64_dir), module=module, seed=seed,
                                               iters=6000), check=False, timeout=300)
    assert proc.returncode == 0, f"crash or uncaught error (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "BAD" not in proc.stdout, proc.stdout[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("DONE"), proc.stdout[-2000:]
    n_ok = int(last.split()[1])
    assert n_ok > 500, f"fuzzer rarely got past validation: {last}"
    assert "TypeError" in last and "ValueError" in last, last


@pytest.mark.device
@pytest.mark.slow
def test_fuzz_under_memcheck_has_no_invalid_access(micropython, natmod_x64_dir, tmp_path):
    """The same fuzzer under valgrind's memcheck: no read or write outside the
    blocks malloc handed out (past the end of the whole GC heap, into freed C
    memory), even ones that would not crash. memcheck cannot see an overrun
    from one object into the next inside MicroPython's heap (the heap is one
    malloc'd block, all of it addressable), nor overruns of stack or static
    arrays: tests/native_asan runs the kernels on exact-size buffers under
    AddressSanitizer for those. (The GC's conservative stack scan may read
    uninitialised words; those reports are not memory-safety errors.)"""
    import shutil
    import subprocess
    if not shutil.which("valgrind"):
        pytest.skip("valgrind not installed")
    script = tmp_path / "fuzz.py"
    script.write_text(FUZZ.format(natmod_dir=str(natmod_x64_dir), module="nm_kernels", seed=9, iters=1500))
    proc = subprocess.run(["valgrind", "--error-exitcode=0", str(micropython), "-X", "heapsize=64M", str(script)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DONE" in proc.stdout
    bad = [line for line in proc.stderr.splitlines() if "Invalid read" in line or "Invalid write" in line]
    assert not bad, "\n".join(bad[:10])
