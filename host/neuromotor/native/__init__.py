"""The compiled part of neuromotor: `_nm_host`, the training kernels of device/native/include
(and the built-in envs' steps of device/native/nm_host) as a CPython extension, built by
`pip install` (setup.py).

`_nm_host` is None in a source tree without the built extension, and NATIVE_ERROR says why:
the algorithms then train with their NumPy backends and the envs step in NumPy alone.
"""

try:
    from neuromotor.native import _nm_host
    NATIVE_ERROR = None
except ImportError as exc:
    _nm_host = None
    NATIVE_ERROR = exc
