"""Device choice and thread configuration."""

import torch

from engine import device


def test_cpu_preference_gives_cpu_and_float32():
    device.set_preference("cpu")
    try:
        assert device.get_device().type == "cpu"
        assert device.inference_dtype(torch.device("cpu")) == torch.float32
    finally:
        device.set_preference("auto")


def test_auto_uses_cuda_when_present():
    dev = device.get_device()
    assert dev.type == ("cuda" if torch.cuda.is_available() else dev.type)
    if torch.cuda.is_available():
        assert device.inference_dtype(dev) in (torch.bfloat16, torch.float16)


def test_threads_configured_once():
    n = device.configure_threads()
    assert n >= 1 and torch.get_num_threads() == n
    assert set(device.describe()) >= {"device", "dtype", "threads", "torch"}
