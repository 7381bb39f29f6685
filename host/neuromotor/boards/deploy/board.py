"""Snippets run on the board through mpremote's raw REPL, and what they tell us."""

import ast

from neuromotor.boards.mip.layout import MPY_ARCHS

PROBE = """
import sys, os
_m = getattr(sys.implementation, '_mpy', None)
_h = 'crc32py'
try:
    import hashlib
    hashlib.sha256
    _h = 'sha256'
except Exception:
    try:
        import binascii
        binascii.crc32
        _h = 'crc32'
    except Exception:
        pass
try:
    _n = os.listdir('/')
except Exception:
    _n = None
try:
    _s = os.statvfs('/')
    _f = _s[0] * _s[3]
except Exception:
    _f = None
_man = None
try:
    with open('/nm_deploy.json') as _fh:
        _man = _fh.read()
except Exception:
    pass
print(repr({'impl': sys.implementation.name, 'version': tuple(sys.implementation.version[:3]),
            'platform': sys.platform, 'mpy': _m, 'hash': _h, 'root': _n, 'free': _f,
            'path': list(sys.path), 'manifest': _man}))
"""

# Defines _nm_hash(path) -> hex digest with the board's best algorithm.
HASH_FN = """
def _nm_hash(p, algo):
    buf = bytearray(512)
    mv = memoryview(buf)
    if algo == 'sha256':
        import hashlib, binascii
        h = hashlib.sha256()
        with open(p, 'rb') as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                h.update(mv[:n])
        return binascii.hexlify(h.digest()).decode()
    c = 0
    if algo == 'crc32':
        import binascii
        with open(p, 'rb') as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                c = binascii.crc32(mv[:n], c)
    else:
        c = 0xFFFFFFFF
        with open(p, 'rb') as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                for i in range(n):
                    c ^= buf[i]
                    for k in range(8):
                        c = (c >> 1) ^ (0xEDB88320 & -(c & 1))
        c ^= 0xFFFFFFFF
    return '%08x' % (c & 0xFFFFFFFF)
"""


def parse_probe(text: bytes) -> dict:
    info = ast.literal_eval(text.decode().strip().splitlines()[-1])
    mpy = info.get("mpy")
    if mpy is not None:
        info["mpy_version"] = mpy & 0xFF
        info["mpy_sub"] = (mpy >> 8) & 3
        idx = mpy >> 10
        info["arch"] = MPY_ARCHS[idx] if idx < len(MPY_ARCHS) else f"arch{idx}"
    else:
        info["mpy_version"] = info["mpy_sub"] = info["arch"] = None
    return info


def host_hash(data: bytes, algo: str) -> str:
    import hashlib
    import zlib
    if algo == "sha256":
        return hashlib.sha256(data).hexdigest()
    return "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)
