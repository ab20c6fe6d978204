"""What an install gives: `python -m bagua.info` names every part; the
Lightning start-up hook is silent when another `bagua` comes first on the
path; a build without CUDA says so and refuses CUDA work clearly; CPU groups
run on torch's own Gloo (the path of every install without libgloo) with
the same results as the runtime's Gloo.

BAGUA_EXPECT_BUILD=cpu-torch-gloo (set by `./setup.sh python-fresh`, which
builds with -Dgloo=disabled -Dcuda=disabled) makes the build checks strict:
that build must have neither."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import load_ranks, run_ranks

import bagua._C as C

PARTS = ("bagua:", "CUDA kernels:", "torch:", "GPUs:", "torch's NCCL:", "bagua's NCCL:",
         "CPU collectives:", "Bagua-Net plugin:", "plugin engine:", "plugin net ABIs:",
         "NCCL loads the plugin:", "Lightning:")


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd="/", env=dict(os.environ, **env))


def test_bagua_info_names_every_part():
    run = subprocess.run([sys.executable, "-m", "bagua.info", "--no-nccl-check"],
                         capture_output=True, text=True, timeout=120, cwd="/")
    assert run.returncode == 0, run.stderr
    for part in PARTS:
        assert part in run.stdout, f"{part} missing from:\n{run.stdout}"
    assert "NOT USABLE" not in run.stdout and "missing" not in run.stdout, run.stdout
    assert "v8, v9, v10, v11, v12" in run.stdout, run.stdout


def test_bagua_info_reports_a_binding_that_does_not_load(tmp_path):
    # A copy of the package without its compiled binding: the report says so
    # and goes on (it crashed with a traceback, where it is most needed).
    import shutil

    import bagua

    copy = tmp_path / "bagua"
    shutil.copytree(os.path.dirname(bagua.__file__), copy,
                    ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
    run = subprocess.run([sys.executable, "-m", "bagua.info", "--no-nccl-check"],
                         capture_output=True, text=True, timeout=120, cwd="/",
                         env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "NOT LOADABLE: bagua._C" in run.stdout, run.stdout
    assert "Traceback" not in run.stderr, run.stderr
    assert "torch:" in run.stdout and "Lightning:" in run.stdout, run.stdout


def test_lightning_hook_runs_at_start_up():
    # The positive case: the .pth line is installed and imports the hook.
    run = _python("import sys; print('_bagua_lightning_hook' in sys.modules)")
    assert run.returncode == 0 and run.stdout.strip() == "True", (run.stdout, run.stderr)


def test_lightning_hook_is_silent_with_a_foreign_bagua_first(tmp_path):
    foreign = tmp_path / "bagua"
    foreign.mkdir()
    (foreign / "__init__.py").write_text("raise ImportError('not our bagua')\n")
    run = _python("import sys; print('ok')", PYTHONPATH=str(tmp_path))
    assert run.returncode == 0 and run.stdout == "ok\n" and run.stderr == "", run.stderr


def test_build_is_the_expected_one():
    expected = os.environ.get("BAGUA_EXPECT_BUILD")
    if expected is None:
        pytest.skip("no BAGUA_EXPECT_BUILD (set by ./setup.sh python-fresh)")
    assert expected == "cpu-torch-gloo"
    assert not C.has_nccl() and not C.has_gloo(), C.build_info()
    info = C.build_info()
    assert info["cpu_collectives"] == "torch" and info["gpu_archs"] == ""


def test_cuda_work_in_a_cuda_less_build_is_a_clear_error():
    if C.has_nccl():
        pytest.skip("this build has the CUDA path")
    run = _python("""
        import torch, torch.distributed as dist
        import bagua.torch_api as bagua
        from bagua.torch_api import process_group
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        comm = process_group._get_default_group().get_global_communicator()
        try:
            comm.backend(torch.device("cuda", 0))
        except RuntimeError as error:
            print("ERROR", error)
        dist.destroy_process_group()
        """)
    assert run.returncode == 0, run.stderr
    assert "ERROR bagua: this build has no CUDA path" in run.stdout, run.stdout


@pytest.mark.parametrize("nproc", [2, 3])
def test_primitives_on_torch_gloo(outdir, nproc):
    # Every primitive, dtype and op through torch's Gloo, against torch's
    # own reference (comm_job.py), as a build without libgloo runs them.
    prefix = os.path.join(outdir, "comm")
    run = run_ranks("comm_job.py", nproc, ["--out", prefix], timeout=600,
                   env={"BAGUA_CPU_COLLECTIVES": "torch"})
    assert run.returncode == 0, run.stderr[-4000:]
    for r in load_ranks(prefix, nproc):
        assert r["cpu_collectives"] == "torch"
        assert r["failures"] == [], r["failures"][:10]
        assert r["count"] > 250


def test_unknown_cpu_collectives_choice_is_a_clear_error():
    from bagua.torch_api.process_group import cpu_collectives

    os.environ["BAGUA_CPU_COLLECTIVES"] = "mpi"
    try:
        with pytest.raises(ValueError, match="BAGUA_CPU_COLLECTIVES='mpi'"):
            cpu_collectives()
    finally:
        del os.environ["BAGUA_CPU_COLLECTIVES"]
