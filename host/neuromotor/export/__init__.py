"""Export a trained policy for the device: the policy file (.nmp) and a C header."""

from neuromotor.export.c_header import render_c_header, write_c_header
from neuromotor.export.policy_file import (
    BadMagicError,
    ChecksumError,
    PolicyFormatError,
    PolicyValueError,
    TruncatedPolicyError,
    UnsupportedVersionError,
    decode,
    encode,
    layout,
    pack_clamp,
    pack_layer,
    pack_net,
    read_policy,
    unpack_layer,
    write_policy,
)

__all__ = [
    "BadMagicError", "ChecksumError", "PolicyFormatError", "PolicyValueError", "TruncatedPolicyError",
    "UnsupportedVersionError", "decode", "encode", "layout", "pack_clamp", "pack_layer", "pack_net",
    "read_policy", "render_c_header", "unpack_layer", "write_c_header", "write_policy",
]
