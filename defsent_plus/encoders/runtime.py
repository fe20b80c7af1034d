"""Where this process computes and in which precision: CUDA with bf16 autocast when present, else exact float32."""

from __future__ import annotations

import torch


def device_for_run() -> torch.device:
    """CUDA when present (respecting CUDA_VISIBLE_DEVICES), else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_for(device: torch.device):
    """bf16 autocast on GPU; a no-op context on CPU so CPU results stay exact and deterministic."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
