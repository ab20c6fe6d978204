"""A large flat group checked and stepped piece by piece (fuse/pipeline.py),
on the CPU with pieces of 3 parameters, native kernels and the generic
path: the same results as the unfused optimizer with torch's
zero_grad(set_to_none=True) every step, missing gradients and replaced
data; and a re-layout needed in a late piece, after earlier pieces
stepped, steps every parameter exactly once (fp32, 1e-6)."""
import pytest
import torch

from bagua.torch_api.contrib import fuse_optimizer
from bagua.torch_api.contrib.fuse import layout, pipeline
from fused_support import Lion, loss_of, make_params, many_small_with_changes, max_rel_diff, train

TOL = 1e-6
SIZES = [(5,), (7, 3), (64,), (9,), (11, 2), (40,), (3,), (8, 8), (17,), (6, 5), (30,), (2,)]


@pytest.fixture(autouse=True)
def pieces_of_three(monkeypatch):
    monkeypatch.setattr(pipeline, "PIECE_PARAMS", 3)
    monkeypatch.setattr(pipeline, "_ENV", "3")


def target_for(params):
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(p.shape, generator=gen) for p in params]


def flats(opt):
    return [flat for plan in opt._bagua_fused.plans for flat in plan.flats]


def ten_steps_with_changes(make, **fuse_args):
    """10 steps of make(...) unfused and fused on the same problem, with a
    gradient missing in a middle piece (step 3: that parameter sits out) and
    data replaced, same shape, in the last piece (step 6): (ref, params, fused)."""
    ref, params = make_params(sizes=SIZES), make_params(sizes=SIZES)
    target = target_for(ref)
    fused = fuse_optimizer(make(params), **fuse_args)

    def each(step, opt, ps):
        if step == 3:
            ps[4].grad = None
        if step == 6:
            with torch.no_grad():
                ps[11].data = ps[11].data.clone() * 0.5

    train(make(ref), ref, 10, target, each=each)
    train(fused, params, 10, target, each=each)
    return ref, params, fused


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, nesterov=True),
    lambda ps: torch.optim.Adagrad(ps, lr=0.05),
])
def test_pieces_step_as_the_unfused_optimizer(make):
    ref, params, fused = ten_steps_with_changes(make)
    assert max_rel_diff(params, ref) <= TOL
    assert [len(pipeline.pieces(f)) for f in flats(fused)] == [4]
    stats = fused._bagua_fused.stats
    assert stats["native_launches"] >= 40 and stats["generic_calls"] == 0
    assert stats["grads_relaid"] >= 10 * len(params) - 1  # set_to_none: every step, every grad


def test_generic_path_steps_piece_by_piece():
    """A third-party element-wise optimizer (Lion in plain PyTorch, no native
    kernel): its own step runs on each piece's flat runs in turn, with a
    gradient missing in a middle piece and data replaced in the last one."""
    ref, params, fused = ten_steps_with_changes(
        lambda ps: Lion(ps, lr=0.01, weight_decay=0.1), elementwise=True)
    assert max_rel_diff(params, ref) <= TOL
    assert [len(pipeline.pieces(f)) for f in flats(fused)] == [4]
    stats = fused._bagua_fused.stats
    assert stats["native_launches"] == 0 and stats["generic_calls"] == 4 * 10


def test_a_smaller_first_piece(monkeypatch):
    """The first piece may be smaller than the others (the GPU waits for its
    whole check): pieces [0, 1), then of 3; results as the unfused AdamW."""
    monkeypatch.setattr(pipeline, "FIRST_PIECE_PARAMS", 1)
    ref, params = make_params(sizes=SIZES), make_params(sizes=SIZES)
    target = target_for(ref)
    fused = fuse_optimizer(torch.optim.AdamW(params, lr=0.01))
    train(torch.optim.AdamW(ref, lr=0.01), ref, 5, target)
    train(fused, params, 5, target)
    assert max_rel_diff(params, ref) <= TOL
    assert [pipeline.pieces(f) for f in flats(fused)] == [
        [(0, 1), (1, 4), (4, 7), (7, 10), (10, 12)]]


def test_a_relayout_in_a_late_piece_steps_each_parameter_once():
    """Before step 4 the last piece's parameter 10 gets data of another shape
    (plain SGD keeps no state, so torch steps it as it is): pieces 0-2 have
    stepped when piece 3's check needs a new layout; the step continues with
    the parameters not stepped yet, each stepped once."""
    ref, params = make_params(sizes=SIZES), make_params(sizes=SIZES)
    fused = fuse_optimizer(torch.optim.SGD(params, lr=0.05))
    plain = torch.optim.SGD(ref, lr=0.05)
    for step in range(8):
        if step == 4:
            for ps in (ref, params):
                with torch.no_grad():
                    ps[10].data = torch.linspace(-1, 1, 12).view(3, 4)
        for opt, ps in ((plain, ref), (fused, params)):
            opt.zero_grad()
            loss_of(ps, target_for(ps)).backward()
            opt.step()
        assert max_rel_diff(params, ref) <= TOL, step
    assert fused._bagua_fused.stats["layouts"] == 2
    assert fused._bagua_fused.stats["resumed_after_relayout"] == 1
    assert params[10].shape == (3, 4)


def test_helper_threads_read_ahead_of_the_pieces(monkeypatch):
    """30,000 parameters in pieces of 7,000: the fields are read by helper
    threads in blocks of 6,250 (FlatWatch.begin_scan) while the pieces are
    checked and stepped; a gradient set to None, one replaced and a .data
    re-pointed, in the first, a middle and the last piece, are all seen."""
    if layout.tensor_layout() is None:
        pytest.skip("this torch's fields were not found: accessors only")
    monkeypatch.setattr(pipeline, "PIECE_PARAMS", 7000)
    a, b, ob = many_small_with_changes(30_000, dropped=10, replaced=15_000, moved=29_000)
    assert [len(pipeline.pieces(f)) for f in flats(ob)] == [5]
    assert ob._bagua_fused.stats["params_relaid"] == 1
    assert max(float((x - y).abs().max()) for x, y in zip(a, b)) <= 1e-5
