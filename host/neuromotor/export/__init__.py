"""Export a trained policy for the device: the policy file (.nmp) and a C header, in
float32 or int8 (quantize, int8)."""

from neuromotor.export.c_header import render_c_header, write_c_header
from neuromotor.export.int8 import (DEFAULT_MAX_ERROR, QuantizationError, action_error, quantize_checked,
                                    rollout_observations)
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
from neuromotor.export.quantize import QuantizedPolicy, quantize

__all__ = [
    "BadMagicError", "ChecksumError", "DEFAULT_MAX_ERROR", "PolicyFormatError", "PolicyValueError",
    "QuantizationError", "QuantizedPolicy", "TruncatedPolicyError", "UnsupportedVersionError", "action_error",
    "decode", "encode", "layout", "pack_clamp", "pack_layer", "pack_net", "quantize", "quantize_checked",
    "read_policy", "render_c_header", "rollout_observations", "unpack_layer", "write_c_header", "write_policy",
]
