"""fuse_optimizer's per-step checks and re-layouts on the CPU: a model fused
again after its fused optimizer is gone (a new optimizer after a
checkpoint, two optimizers over parts of it), the one-pass check
(bagua._C.FlatWatch) reading torch's fields and through torch's accessors
only, and the replacements it must see: gradients dropped while the user
keeps the old ones, .data moved inside the same buffer, torch.utils.swap_tensors.
Each against the unfused optimizer on the same problem (fp32, 1e-6)."""
import gc
import warnings

import pytest
import torch

from bagua.torch_api.contrib import fuse_optimizer
from bagua.torch_api.contrib.fuse import layout
from fused_support import (build, loss_of, make_params, many_small_with_changes, max_rel_diff,
                           train)

TOL = 1e-6


def target_for(params):
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(p.shape, generator=gen) for p in params]


def fused_flats(opt):
    return [flat for plan in opt._bagua_fused.plans for flat in plan.flats]


def test_fused_again_after_the_first_fused_optimizer_is_gone():
    """The parameters still view the first optimizer's buffer (nothing else
    holds it): the next fused optimizer lays them out again, fused, with no
    warning, and the old buffer is freed."""
    params, ref = make_params(), make_params()
    target = target_for(params)
    first = fuse_optimizer(build(torch.optim.SGD, params, lr=0.01, momentum=0.9))
    train(first, params, 3, target)
    train(build(torch.optim.SGD, ref, lr=0.01, momentum=0.9), ref, 3, target)
    old = params[0].untyped_storage()
    del first
    gc.collect()
    assert layout.is_fused_buffer(old)  # alive through the parameters' views
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = fuse_optimizer(build(torch.optim.AdamW, params, lr=0.01))
    assert not any(plan.unfused for plan in second._bagua_fused.plans)
    assert params[0].untyped_storage().data_ptr() != old.data_ptr()
    train(second, params, 5, target)
    train(build(torch.optim.AdamW, ref, lr=0.01), ref, 5, target)
    assert max_rel_diff(params, ref) <= TOL
    assert second._bagua_fused.stats["fused_steps"] == 5
    # The registry holds the old buffer weakly: re-laid, nothing keeps it.
    key = old._cdata
    del old
    gc.collect()
    assert layout._BUFFERS[key].expired()


def test_two_fused_optimizers_over_parts_of_a_model_fused_before():
    params, ref = make_params(), make_params()
    target = target_for(params)
    whole = fuse_optimizer(torch.optim.Adam(params, lr=0.01))
    train(whole, params, 2, target)
    train(torch.optim.Adam(ref, lr=0.01), ref, 2, target)
    del whole
    gc.collect()
    half = len(params) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = fuse_optimizer(torch.optim.SGD(params[:half], lr=0.05, momentum=0.5))
        b = fuse_optimizer(torch.optim.AdamW(params[half:], lr=0.01))
    ra = torch.optim.SGD(ref[:half], lr=0.05, momentum=0.5)
    rb = torch.optim.AdamW(ref[half:], lr=0.01)
    for ps, opts in ((params, (a, b)), (ref, (ra, rb))):
        for _ in range(5):
            for o in opts:
                o.zero_grad()
            loss_of(ps, target).backward()
            for o in opts:
                o.step()
    assert all(not plan.unfused for o in (a, b) for plan in o._bagua_fused.plans)
    assert max_rel_diff(params, ref) <= TOL


def test_a_shared_storage_that_is_not_ours_is_still_refused():
    base = torch.zeros(20)
    views = [torch.nn.Parameter(base[:10]), torch.nn.Parameter(base[10:])]
    with pytest.warns(UserWarning, match="view into a storage"):
        opt = fuse_optimizer(torch.optim.SGD(views, lr=0.1))
    assert all(plan.unfused for plan in opt._bagua_fused.plans)


@pytest.fixture(params=["fields", "accessors"])
def check_way(request, monkeypatch):
    """Runs a test with the field reads (where this torch allows them) and
    with torch's accessors only."""
    if request.param == "accessors":
        monkeypatch.setattr(layout, "tensor_layout", lambda: None)
    elif layout.tensor_layout() is None:
        pytest.skip("this torch's fields were not found: accessors only")
    return request.param


def replacing_run(each, steps=12):
    a, b = make_params(), make_params()
    target = target_for(a)
    oa = build(torch.optim.AdamW, a, lr=0.01, weight_decay=0.01)
    ob = fuse_optimizer(build(torch.optim.AdamW, b, lr=0.01, weight_decay=0.01))
    for opt, params in ((oa, a), (ob, b)):
        train(opt, params, steps, target, each=lambda step, o, ps: each(step, o, ps))
    return a, b, ob


def test_kept_gradients_then_new_ones_are_seen(check_way):
    """The user keeps the old gradient tensors across zero_grad(set_to_none)
    (the blind spot of check_flatten=False): backward's new gradients are
    still the ones stepped."""
    kept = []

    def each(step, opt, params):
        kept.append([p.grad for p in params])

    a, b, opt = replacing_run(each)
    assert max_rel_diff(b, a) <= TOL
    assert all(f.watch.reads_fields == (check_way == "fields") for f in fused_flats(opt))


def test_data_moved_inside_the_buffer_and_swapped_tensors_are_seen(check_way):
    """.data re-pointed to another parameter's region of the same buffer (the
    buffer's use count does not change: the fused group copies the values
    in, as the unfused run's clone), and torch.utils.swap_tensors (the
    parameter object gets another TensorImpl)."""
    def each(step, opt, params):
        with torch.no_grad():
            if step == 4:
                other = params[2].data.view(-1)[: params[1].numel()].view_as(params[1])
                fused = getattr(opt, "_bagua_fused", None) is not None
                params[1].data = other if fused else other.clone()
            if step == 7:
                new = torch.nn.Parameter(params[3].detach() * 0.5)
                new.grad = params[3].grad.clone()
                torch.utils.swap_tensors(params[3], new)

    a, b, opt = replacing_run(each)
    assert max_rel_diff(b, a) <= TOL
    assert opt._bagua_fused.stats["params_relaid"] == 2


def test_a_group_large_enough_for_several_check_threads_sees_every_change():
    """FlatWatch splits a group of >= 12,500 parameters over threads
    (python/src/flat_watch.cc): a gradient set to None, one replaced and a
    .data re-pointed, each in a different thread's part, are all seen and
    the step equals the unfused one."""
    if layout.tensor_layout() is None:
        pytest.skip("this torch's fields were not found: accessors only")
    # first part: skipped this step; a later part: replaced; the last part: moved
    a, b, ob = many_small_with_changes(100_000, dropped=10, replaced=60_000, moved=99_000)
    stats = ob._bagua_fused.stats
    assert stats["grads_relaid"] >= 1 and stats["params_relaid"] == 1
    # Rounding (the native kernel does not contract into FMAs) is ~1e-7; a
    # missed change would be off by ~0.1.
    assert max(float((x - y).abs().max()) for x, y in zip(a, b)) <= 1e-5
