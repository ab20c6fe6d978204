"""bagua.torch_api.contrib.fuse_optimizer on the CPU: the fused step against
the unfused optimizer on the same random problem (three param groups,
weight decay on and off, an lr schedule, zero_grad at torch's default
set_to_none=True every step, tensors of 1 to 20,000 elements), for torch's
SGD, Adam, AdamW, Adagrad (native kernels), RMSprop, NAdam, RAdam and a
Lion written here in plain PyTorch (generic flat path), and bagua's Lamb
(native kernel, per tensor). fp32: within 1e-6 of each tensor's largest
value after 100 steps; bf16/fp16: the stated tolerance (docs/fused_optimizer.md).
"""
import warnings

import pytest
import torch

from bagua.torch_api.contrib import Lamb, fuse_optimizer
from bagua.torch_api.contrib.fuse import pipeline
from fused_support import Lion, NormScaledSgd, build, make_params, max_rel_diff, train

FP32_TOL = 1e-6
LOW_TOL = {torch.bfloat16: 5e-2, torch.float16: 1e-2}

CASES = {
    "sgd": (torch.optim.SGD, dict(lr=0.01)),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.01, momentum=0.9, nesterov=True)),
    "sgd_dampening": (torch.optim.SGD, dict(lr=0.01, momentum=0.9, dampening=0.3)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
    "adamw_amsgrad": (torch.optim.AdamW, dict(lr=0.01, amsgrad=True)),
    "adagrad": (torch.optim.Adagrad, dict(lr=0.05, lr_decay=0.01)),
    "rmsprop": (torch.optim.RMSprop, dict(lr=0.001, momentum=0.5)),
    "nadam": (torch.optim.NAdam, dict(lr=0.01)),
    "radam": (torch.optim.RAdam, dict(lr=0.01)),
    "lion": (Lion, dict(lr=0.001)),
    "lamb": (Lamb, dict(lr=0.01)),
}


def target_for(params):
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(p.shape, generator=gen).to(p.device) for p in params]


def side_by_side(cls, kwargs, dtype=torch.float32, steps=100, each=None, fused_kwargs=None):
    """(unfused params, fused params, fused optimizer) after `steps` steps."""
    a, b = make_params(dtype), make_params(dtype)
    target = target_for(a)
    oa = build(cls, a, **kwargs)
    ob = fuse_optimizer(build(cls, b, **kwargs), **(fused_kwargs or {}))
    for opt, params in ((oa, a), (ob, b)):
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.7)
        train(opt, params, steps, target, sched, each)
    return a, b, ob


@pytest.mark.parametrize("name", sorted(CASES))
def test_fp32_matches_unfused_over_100_steps(name):
    cls, kwargs = CASES[name]
    a, b, opt = side_by_side(cls, kwargs)
    assert max_rel_diff(b, a) <= FP32_TOL
    fused = opt._bagua_fused
    assert fused.stats["fused_steps"] == 100
    assert all(not plan.unfused for plan in fused.plans)
    # torch's zero_grad() drops the gradients; each step lays the new ones in.
    assert fused.stats["grads_relaid"] == 100 * len(a)


def test_sgd_momentum_takes_the_kernel_from_the_first_step():
    a, b, opt = side_by_side(*CASES["sgd_nesterov"], steps=1)
    assert max_rel_diff(b, a) <= FP32_TOL
    stats = opt._bagua_fused.stats
    assert (stats["native_launches"], stats["generic_calls"]) == (3, 0)  # one per param group
    # A momentum_buffer held as None (torch: "first step") stays on the kernel.
    ref, params = make_params(), make_params()
    target = target_for(ref)
    opts = [torch.optim.SGD(ps, lr=0.01, momentum=0.9) for ps in (ref, params)]
    for o, ps in zip(opts, (ref, params)):
        for p in ps:
            o.state[p]["momentum_buffer"] = None
    fused = fuse_optimizer(opts[1])
    train(opts[0], ref, 5, target)
    train(fused, params, 5, target)
    assert max_rel_diff(params, ref) <= FP32_TOL
    assert fused._bagua_fused.stats["generic_calls"] == 0
    flats = [f for plan in fused._bagua_fused.plans for f in plan.flats]
    per_step = sum(len(pipeline.pieces(f) or [f]) for f in flats)  # 1 unless in pieces
    assert fused._bagua_fused.stats["native_launches"] == 5 * per_step


@pytest.mark.parametrize("name,dtype", [("sgd_nesterov", torch.bfloat16),
                                        ("adamw_amsgrad", torch.bfloat16),
                                        ("lion", torch.bfloat16), ("lamb", torch.bfloat16),
                                        ("adam", torch.float16), ("rmsprop", torch.float16)])
def test_low_precision_within_stated_tolerance(name, dtype):
    cls, kwargs = CASES[name]
    a, b, _ = side_by_side(cls, kwargs, dtype=dtype, steps=50)
    assert all(p.dtype == dtype for p in b)
    assert max_rel_diff(b, a) <= LOW_TOL[dtype]


def test_state_dict_is_the_wrapped_optimizers():
    a, b, opt = side_by_side(torch.optim.AdamW, dict(lr=0.01), steps=3)
    ref = build(torch.optim.AdamW, a, lr=0.01)
    ref.load_state_dict(opt.state_dict())
    sd, rd = opt.state_dict(), ref.state_dict()
    assert sd["param_groups"] == rd["param_groups"]
    for k in rd["state"]:
        assert set(sd["state"][k]) == {"step", "exp_avg", "exp_avg_sq"}
        assert float(sd["state"][k]["step"]) == 3.0
        assert sd["state"][k]["exp_avg"].shape == b[k].shape


def test_checkpoint_round_trip_torch_fused_torch():
    """torch -> fused -> torch continues as torch alone would."""
    cls, kwargs = CASES["adamw_amsgrad"]
    ref, p = make_params(), make_params()
    target = target_for(ref)
    o_ref = build(cls, ref, **kwargs)
    train(o_ref, ref, 30, target)

    o1 = build(cls, p, **kwargs)
    train(o1, p, 10, target)
    o2 = fuse_optimizer(build(cls, p, **kwargs))
    o2.load_state_dict(o1.state_dict())
    train(o2, p, 10, target)
    o3 = build(cls, p, **kwargs)
    o3.load_state_dict(o2.state_dict())
    train(o3, p, 10, target)
    assert max_rel_diff(p, ref) <= FP32_TOL


def test_set_to_none_unused_and_replaced_parameters():
    """Gradients dropped every step, a parameter without a gradient in some
    steps (torch skips it), one whose .data is replaced and one replaced in
    its param group mid-run: still equal to the unfused optimizer."""
    replacement = {}

    def each(step, opt, params):
        if step % 3 == 0:
            params[1].grad = None  # no gradient: no step, no weight decay, no momentum
        if step == 40:
            params[2].data = params[2].data.clone() * 0.5
        if step == 60:
            new = torch.nn.Parameter(params[3].detach() + 1.0)
            new.grad = params[3].grad.clone()
            group = next(g for g in opt.param_groups if any(q is params[3] for q in g["params"]))
            i = next(i for i, q in enumerate(group["params"]) if q is params[3])
            group["params"][i] = new
            replacement.setdefault(id(opt), []).append(new)

    cls, kwargs = CASES["sgd_nesterov"]
    a, b, opt = side_by_side(cls, dict(kwargs, weight_decay=0.01), each=each)
    ra, rb = (replacement[i][0] for i in sorted(replacement, key=lambda i: i != id(opt)))
    assert max_rel_diff(b + [rb], a + [ra]) <= FP32_TOL
    stats = opt._bagua_fused.stats
    assert stats["params_relaid"] == 1
    assert stats["layouts"] == 2  # once at fuse time, once for the replaced parameter


def test_check_flatten_false_detects_dropped_gradients_and_data():
    def each(step, opt, params):
        if step == 20:
            params[0].data = params[0].data.clone()

    a, b, opt = side_by_side(*CASES["adam"], each=each, fused_kwargs=dict(check_flatten=False))
    assert max_rel_diff(b, a) <= FP32_TOL
    assert opt._bagua_fused.stats["params_relaid"] == 1


def test_never_flattened_per_tensor_optimizers():
    # Lamb: the native kernel, one list entry per tensor (its own trust ratio).
    a, b, opt = side_by_side(Lamb, dict(lr=0.01))
    assert max_rel_diff(b, a) <= FP32_TOL
    assert all(n.spec.per_tensor for plan in opt._bagua_fused.plans for n in plan.natives.values())
    # A per-tensor-norm optimizer unknown to bagua: the probe refuses it.
    with pytest.warns(UserWarning, match="NormScaledSgd steps per tensor, unfused.*not element"):
        a, b, opt = side_by_side(NormScaledSgd, dict(lr=0.01), steps=20)
    assert max_rel_diff(b, a) == 0.0
    assert all(plan.unfused for plan in opt._bagua_fused.plans)


def test_a_second_fused_optimizer_over_the_same_parameters():
    """Parameters laid out by one fused optimizer are laid out again by the
    next (a new training phase), not mistaken for aliased tensors."""
    params = make_params()
    target = target_for(params)
    first = fuse_optimizer(build(torch.optim.SGD, params, lr=0.01, momentum=0.9))
    train(first, params, 3, target)
    second = fuse_optimizer(build(torch.optim.AdamW, params, lr=0.01))
    assert not any(plan.unfused for plan in second._bagua_fused.plans)
    train(second, params, 3, target)
    assert second._bagua_fused.stats["fused_steps"] == 3


def test_lion_passes_the_probe_and_declared_elementwise_skips_it():
    opt = fuse_optimizer(build(Lion, make_params(), lr=1e-3))
    assert opt._bagua_fused.reason == "passed the element-wise probe"
    opt = fuse_optimizer(build(NormScaledSgd, make_params(), lr=1e-3), elementwise=True)
    assert opt._bagua_fused.kind == "elementwise"  # the caller's word is taken


def test_amp_inf_skips_the_step_for_every_tensor():
    def run(fused):
        params = make_params()
        target = target_for(params)
        opt = build(torch.optim.AdamW, params, lr=0.01)
        if fused:
            opt = fuse_optimizer(opt)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
        for step in range(12):
            opt.zero_grad()
            loss = sum(((p - t) ** 2).sum() for p, t in zip(params, target))
            scaler.scale(loss).backward()
            if step == 5:
                params[4].grad.view(-1)[3] = float("inf")
            before = [p.detach().clone() for p in params]
            scaler.step(opt)
            scaler.update()
            if step == 5:
                assert all(torch.equal(x, p) for x, p in zip(before, params))
        return params, opt

    a, _ = run(False)
    b, opt = run(True)
    assert max_rel_diff(b, a) <= FP32_TOL
    assert opt._bagua_fused.stats["skipped_steps"] == 1


def test_hooks_run_once_and_fuse_step_is_step():
    params = make_params()
    opt = fuse_optimizer(torch.optim.SGD(params, lr=0.1))
    calls = []
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(o))
    for p in params:
        p.grad = torch.ones_like(p)
    opt.fuse_step()
    opt.step()
    assert calls == [opt, opt]
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in params)


def test_bad_input_is_refused_with_the_reason():
    params = make_params()
    opt = fuse_optimizer(torch.optim.SGD(params, lr=0.1))
    for p in params:
        p.grad = torch.zeros_like(p)
    params[0].grad = torch.zeros_like(params[0]).to_sparse()
    with pytest.raises(ValueError, match="sparse gradient"):
        opt.step()
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        fuse_optimizer(object())
    with pytest.raises(TypeError, match="check_flatten"):
        fuse_optimizer(torch.optim.SGD(make_params(), lr=0.1), check_flatten="yes")

    class NoProbe(torch.optim.Optimizer):  # its constructor cannot be called again
        def __init__(self, params, secret):
            super().__init__(params, {})

        def step(self, closure=None):
            pass

    with pytest.warns(UserWarning, match="could not build a NoProbe"):
        opt = fuse_optimizer(NoProbe(make_params(), secret=object()))
    assert all(plan.unfused for plan in opt._bagua_fused.plans)


def test_parameters_on_different_devices_in_one_group_are_split():
    cpu = make_params()[:3]
    meta = [torch.nn.Parameter(torch.empty(4, device="meta"))]
    opt = fuse_optimizer(torch.optim.SGD(cpu + meta, lr=0.1, momentum=0.9))
    flats = opt._bagua_fused.plans[0].flats
    assert sorted(f.device.type for f in flats) == ["cpu", "meta"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in cpu + meta:
            p.grad = torch.ones_like(p)
        opt.step()  # meta: the generic path (no kernel there); cpu: the native one
    assert [id(f) in opt._bagua_fused.plans[0].natives for f in flats] == [True, False]


def test_memory_format_kept_and_aliased_parameters_left_alone():
    # channels_last weights keep their strides in the buffers (same result).
    def conv_params():
        torch.manual_seed(3)
        w = torch.nn.Parameter(torch.randn(8, 4, 3, 3).to(memory_format=torch.channels_last))
        return [w, torch.nn.Parameter(torch.randn(8))]

    a, b = conv_params(), conv_params()
    oa = torch.optim.AdamW(a, lr=0.01)
    ob = fuse_optimizer(torch.optim.AdamW(b, lr=0.01))
    target = target_for(a)
    for opt, params in ((oa, a), (ob, b)):
        for _ in range(10):
            opt.zero_grad()
            sum(((p - t) ** 2).sum() for p, t in zip(params, target)).backward()
            opt.step()
    assert b[0].stride() == a[0].stride() and not b[0].is_contiguous()
    assert max_rel_diff(b, a) <= FP32_TOL
    # Parameters that are views of one storage (as FSDP's): never moved.
    base = torch.zeros(20)
    views = [torch.nn.Parameter(base[:10]), torch.nn.Parameter(base[10:])]
    with pytest.warns(UserWarning, match="view into a storage"):
        opt = fuse_optimizer(torch.optim.SGD(views, lr=0.1))
    assert all(p.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
               for p in views)
    assert all(plan.unfused for plan in opt._bagua_fused.plans)


def test_zero_grad_without_set_to_none_after_the_model_changed_dtype():
    """step() lays the parameters out again after model.to(float64); so must
    zero_grad(set_to_none=False) (it raised the layout's internal Rebuild)."""
    model = torch.nn.Linear(4, 3)
    opt = fuse_optimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    model.to(torch.float64)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())
    model(torch.randn(2, 4, dtype=torch.float64)).sum().backward()
    opt.step()
    assert model.weight.dtype == torch.float64


def test_parameters_sharing_a_storage_step_unfused_and_stay_aliased():
    """p2 is p1's transpose (Parameter(p1.data.t())): fusing would move them
    apart; both step unfused and stay one storage, as with plain SGD."""
    torch.manual_seed(0)
    w = torch.randn(4, 5)
    pairs = []
    for fused in (False, True):
        p1 = torch.nn.Parameter(w.clone())
        p2 = torch.nn.Parameter(p1.data.t())
        opt = torch.optim.SGD([p1, p2], lr=0.1)
        if fused:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                opt = fuse_optimizer(opt)
                for _ in range(3):
                    opt.zero_grad()
                    ((p1 * 2).sum() + (p2 * 3).sum()).backward()
                    opt.step()
            assert any("shares its storage" in str(c.message) for c in caught)
        else:
            for _ in range(3):
                opt.zero_grad()
                ((p1 * 2).sum() + (p2 * 3).sum()).backward()
                opt.step()
        pairs.append((p1, p2))
    (a1, a2), (b1, b2) = pairs
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert torch.equal(b1, b2.t()) and b1.data_ptr() == b2.data_ptr()


class _CountingSgd(torch.optim.Optimizer):
    """Element-wise, with a step count on the optimizer itself (as much
    third-party code keeps), read by its own step."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))
        self.global_step = 0

    @torch.no_grad()
    def step(self, closure=None):
        self.global_step += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"] / self.global_step)


def test_an_optimizers_own_attributes_are_its_own_when_fused():
    """The generic path stepped a copy, which torch's __getstate__ leaves
    without global_step (AttributeError)."""
    results = []
    for fused in (False, True):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(4)) for _ in range(2)]
        opt = _CountingSgd([dict(params=params[:1]), dict(params=params[1:])])
        if fused:
            opt = fuse_optimizer(opt, elementwise=True)
        for _ in range(5):
            opt.zero_grad()
            sum((p ** 2).sum() for p in params).backward()
            opt.step()
        assert opt.global_step == 5
        results.append(params)
    assert all(torch.equal(a, b) for a, b in zip(*results))


class _GroupClippedSgd(torch.optim.Optimizer):
    """SGD that scales a group's gradients to a norm of at most 1: one flat
    tensor and the group's tensors agree, the tensors alone do not."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            grads = [p.grad for p in group["params"] if p.grad is not None]
            if not grads:
                continue
            norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
            scale = min(1.0, 1.0 / (float(norm) + 1e-12))
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"] * scale)


def test_an_optimizer_coupling_a_groups_tensors_is_not_taken_for_element_wise():
    """It passed the probe (one flat tensor equals one group of tensors), then
    differed from unfused once a parameter had no gradient (fused runs step
    as groups of their own)."""
    results = []
    for fused in (False, True):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(5) * 3) for _ in range(3)]
        opt = _GroupClippedSgd(params)
        if fused:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                opt = fuse_optimizer(opt)
        for step in range(4):
            opt.zero_grad()
            # params[1] without a gradient cuts the fused runs in two
            used = params if step % 2 == 0 else [params[0], params[2]]
            sum((p ** 2).sum() for p in used).backward()
            opt.step()
        results.append(params)
    assert all(torch.equal(a, b) for a, b in zip(*results))
