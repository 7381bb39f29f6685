"""The policy stack: what a deployable policy is (spec: PolicySpec, the NumPy reference
every board is checked against) and the files it travels in: the policy file (.nmp,
policy_file), a C header (c_header, c_header_int8), a PlatformIO project (platformio), in
float32 or int8 (quantize; int8 calibrates on the policy's own env, rounding.py and
finetune.py fit its integers to the float policy's actions)."""

from neuromotor.policy.c_header import render_c_header, write_c_header
from neuromotor.policy.int8 import (DEFAULT_MAX_ERROR, FINETUNE_STEPS, QuantizationError, action_error,
                                    calibration_observations, quantize_checked, quantize_measured,
                                    quantize_tuned,
                                    rollout_observations)
from neuromotor.policy.policy_file import (
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
from neuromotor.policy.quantize import QuantizedPolicy, quantize
from neuromotor.policy.spec import ACTIVATIONS, InvalidPolicyError, LayerSizes, PolicySpec, clamp

__all__ = [
    "ACTIVATIONS", "InvalidPolicyError", "LayerSizes", "PolicySpec", "clamp",
    "BadMagicError", "ChecksumError", "DEFAULT_MAX_ERROR", "FINETUNE_STEPS", "PolicyFormatError", "PolicyValueError",
    "QuantizationError", "QuantizedPolicy", "TruncatedPolicyError", "UnsupportedVersionError", "action_error",
    "calibration_observations", "quantize_measured", "quantize_tuned",
    "decode", "encode", "layout", "pack_clamp", "pack_layer", "pack_net", "quantize", "quantize_checked",
    "read_policy", "render_c_header", "rollout_observations", "unpack_layer", "write_c_header", "write_policy",
]
