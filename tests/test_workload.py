"""Parameters, KV cache, FLOP and HBM bytes (docs/model.md §A1-§A2) against hand computations."""

import pytest

import inference_econ as ie
from inference_econ.model.assumptions import PAPER
from inference_econ.model.workload import compile_workload, matmul_activation_bytes_per_token


def work(name, **bits):
    arch = ie.load_model(name).with_precision(**bits)
    return compile_workload(arch, PAPER)


def test_llama_3_70b_parameters_by_hand():
    d, f, L, H, kv, dh, V = 8192, 28672, 80, 64, 16, 128, 128256
    attn = (H + kv) * dh * d + H * dh * d
    total = L * (attn + 3 * d * f) + 2 * V * d
    w = work("Llama 3 70B")
    assert w.total_params == pytest.approx(total) and w.active_params == pytest.approx(total)
    assert total == pytest.approx(70.55e9, rel=1e-3)


def test_moe_active_parameters_use_integer_sparsity():
    w = work("DeepSeek-V3 (paper approximation)")
    g = w.groups[0]
    assert g.sparsity == 256 // 9 == 28
    ff = 58 * 256 * 3 * 7168 * 2048
    assert w.total_params - w.active_params == pytest.approx(ff - ff / 28)


def test_mla_paper_formula():
    d, c, cq, H, dh = 7168, 512, 1536, 128, 128
    kv = 2 * H
    expected = 2 * c * d + cq * d + kv * dh * c + H * dh * cq + H * dh * d
    assert work("DeepSeek-V3 (paper approximation)").attention_params_per_layer == expected


def test_kv_cache_bytes_per_token():
    assert work("Llama 3 70B").kv_bytes_per_token == 16 * 128 * 80 * 2  # kv·dh·L·ab
    assert work("Mistral Large 2").kv_bytes_per_token == pytest.approx(
        352e3, rel=0.03
    )  # ~350 kB (paper §4.3)
    assert work("DeepSeek-V3 (paper approximation)").kv_bytes_per_token == 512 * 58 * 2  # c·L·ab
    assert work("Llama 3 70B", kv_cache_bits=8).kv_bytes_per_token == 16 * 128 * 80


def test_matmul_activation_bytes_2d_partitioning():
    # m = k: t1 = sqrt(t); inputs and outputs each replicated sqrt(t) times
    a = matmul_activation_bytes_per_token(1000.0, 1000.0, 16.0, 2.0)
    assert a == pytest.approx(4 * 1000 * 2 + 4 * 1000 * 2)
    # t = 1: inputs and outputs read once
    a1 = matmul_activation_bytes_per_token(300.0, 200.0, 1.0, 2.0)
    assert a1 == pytest.approx((200 + 300) * 2)


def test_matmul_activation_bytes_of_the_papers_earlier_code():
    # paper-table-5: t1 = max(1, sqrt(m/k)·t), t2 = max(1, sqrt(k/m)·t), unclipped
    a = matmul_activation_bytes_per_token(4000.0, 1000.0, 16.0, 2.0, "unclipped")
    assert a == pytest.approx((2 * 16 * 1000 + 0.5 * 16 * 4000) * 2)
    a = matmul_activation_bytes_per_token(100.0, 10000.0, 2.0, 2.0, "unclipped")
    assert a == pytest.approx((1 * 10000 + 20 * 100) * 2)  # t1 = max(1, 0.1·2) = 1
    # the whole batch's KV inside p·(...) and all k experts in the all-to-all bytes
    p5 = ie.preset("paper-table-5")
    assert (p5.kv_read_whole_batch, p5.kv_capacity_whole_batch, p5.attention_divisor_count) == (
        True,
        True,
        1,
    )


def test_flop_split_adds_up_and_matches_a2():
    w = work("Llama 3 70B")
    B, S, n = 32.0, 3.0, 1000.0
    ff, ctx, proj = w.flop(B, S, n)
    assert ff + ctx + proj == pytest.approx(
        2 * w.active_params * B * S + 4 * 128 * 64 * 80 * n * B * S
    )
    assert ctx == pytest.approx(4 * 128 * 64 * 80 * n * B * S)


def test_experts_read_fraction():
    g = work("Mixtral 8x22B").groups[0]
    assert g.routed_fraction_read(1.0) == pytest.approx(1 / 4)  # s = 4: 1 - (3/4)^1
    assert g.routed_fraction_read(100.0) == pytest.approx(1.0, abs=1e-12)
