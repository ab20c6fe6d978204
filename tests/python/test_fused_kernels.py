"""The native optimizer kernels' CPU reference (bagua._C.OptimList on the
CPU) against an independent emulation in torch fp32 operations with one
rounding each (bench/gpu/fused_checks.py, the third opinion of the GPU
benchmark's bit-for-bit check): SGD, Adam and Adagrad, fp32 and bf16, 3
steps over tensors of 1 to 100,003 elements, bit for bit. On the CPU the
"device" list is a second CPU list, so the check is also checked itself:
fresh inputs per case (chaining Adagrad after Adam once fed it negative
accumulators, whose NaNs have different bits on the CPU and the GPU)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench", "gpu"))
from fused_checks import kernels_bitwise  # noqa: E402


def test_cpu_reference_is_one_rounding_per_operation():
    out = kernels_bitwise(torch.device("cpu"))
    cases = {k: v for k, v in out.items() if k != "all"}
    assert len(cases) == 6
    for name, case in cases.items():
        assert case["inputs_equal"], name
        assert case["gpu_equals_cpu"], (name, case["differing"])
        assert case["cpu_equals_ieee_emulation"], name
    assert out["all"]
