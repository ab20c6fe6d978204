"""The launchers python -m bagua.distributed.launch and .run, over torchrun,
on CPU with loopback (GLOO_SOCKET_IFNAME=lo). Every launch is bounded in time
and runs in its own process group, killed whole on timeout (launch_support.py).
Imports nothing from bagua._C."""
import os
import stat

import pytest

import bagua
from bagua.distributed import launch as bagua_launch
from conftest import load_ranks
from launch_support import (WORKER, child_env, elastic, fake_plugin, free_port, launch,
                            warnings_in)

# --- bagua.distributed.launch -------------------------------------------------------------


def test_launch_two_processes(outdir):
    prefix = os.path.join(outdir, "w")
    port = free_port()
    res = launch("--nproc_per_node", "2", "--master_port", str(port), WORKER, "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    ranks = load_ranks(prefix, 2)
    assert [r["RANK"] for r in ranks] == ["0", "1"]
    assert [r["LOCAL_RANK"] for r in ranks] == ["0", "1"]
    for r in ranks:
        assert r["WORLD_SIZE"] == "2" and r["LOCAL_WORLD_SIZE"] == "2"
        assert r["GROUP_RANK"] == "0" and r["NODE_RANK"] == "0"
        assert r["MASTER_ADDR"] == "127.0.0.1" and r["MASTER_PORT"] == str(port)
        assert r["BAGUA_DEFAULT_BUCKET_SIZE"] == str(10 * 1024**2)
        assert r["OMP_NUM_THREADS"] == "1"  # torchrun's default with several workers
        assert r["NCCL_NET_PLUGIN"] is None and r["NCCL_NET"] is None
        assert r["argv"] == [WORKER, "--out", prefix]
        assert r["name"] == "__main__"
    assert warnings_in(res.stderr) == []


def test_launch_set_additional_flag_passes_local_rank(outdir):
    prefix = os.path.join(outdir, "w")
    res = launch("--nproc_per_node", "2", "--master_port", str(free_port()),
                 "--set_additional_flag", "--default_bucket_size", "4096",
                 WORKER, "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    for r in load_ranks(prefix, 2):
        # The original's position: right after the script, before its arguments.
        assert r["argv"] == [WORKER, f"--local_rank={r['LOCAL_RANK']}", "--out", prefix]
        assert r["local_rank_arg"] == int(r["LOCAL_RANK"])
        assert r["name"] == "__main__"
        assert r["path0"] == os.path.dirname(os.path.realpath(WORKER))  # as `python script`
        assert r["BAGUA_DEFAULT_BUCKET_SIZE"] == "4096"


@pytest.mark.parametrize("flag", [False, True])
def test_launch_module(outdir, flag):
    # The module is found through the working directory only, as with python -m.
    prefix = os.path.join(outdir, "w")
    extra = ["--set_additional_flag"] if flag else []
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()), "-m", *extra,
                 "launch_worker", "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    (r,) = load_ranks(prefix, 1)
    assert r["name"] == "__main__"
    assert os.path.realpath(r["argv"][0]) == os.path.realpath(WORKER)
    assert r["argv"][1:] == (["--local_rank=0"] if flag else []) + ["--out", prefix]


def test_launch_no_python_with_additional_flag(tmp_path):
    out = tmp_path / "args.txt"
    script = tmp_path / "train.sh"
    script.write_text(f'#!/bin/sh\necho "$RANK $*" > {out}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()), "--no_python",
                 "--set_additional_flag", str(script), "a", "b c")
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_text() == "0 --local_rank=0 a b c\n"


def test_launch_logdir(tmp_path):
    logdir = tmp_path / "logs"
    prefix = str(tmp_path / "w")
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()),
                 "--logdir", str(logdir), WORKER, "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    (stdout_log,) = logdir.glob("*/attempt_0/0/stdout.log")
    assert "rank 0 done" in stdout_log.read_text()
    assert "rank 0 done" not in res.stdout


def test_launch_enable_bagua_net_sets_nccl_plugin(tmp_path):
    plugin = fake_plugin(tmp_path)
    prefix = str(tmp_path / "w")
    res = launch("--nproc_per_node", "2", "--master_port", str(free_port()), "--enable_bagua_net",
                 WORKER, "--out", prefix, env=child_env({"BAGUA_NET_PLUGIN_PATH": plugin}))
    assert res.returncode == 0, res.stderr[-3000:]
    for r in load_ranks(prefix, 2):
        assert r["NCCL_NET_PLUGIN"] == plugin
        assert r["NCCL_NET"] == "Bagua"


def test_launch_enable_bagua_net_without_plugin_fails(tmp_path):
    missing = str(tmp_path / "nope.so")
    prefix = str(tmp_path / "w")
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()), "--enable_bagua_net",
                 WORKER, "--out", prefix, env=child_env({"BAGUA_NET_PLUGIN_PATH": missing}))
    assert res.returncode != 0
    assert f"BAGUA_NET_PLUGIN_PATH={missing} is not a file" in res.stderr
    assert not list(tmp_path.glob("w.rank*.json")), "a worker started"


def test_launch_enable_bagua_net_package_without_plugin(monkeypatch, tmp_path):
    # The package's own location is empty (a build without the plugin).
    monkeypatch.delenv("BAGUA_NET_PLUGIN_PATH", raising=False)
    monkeypatch.setattr(bagua.env, "packaged_net_plugin_path", lambda: str(tmp_path / "x.so"))
    assert bagua.net_plugin_path() is None
    with pytest.raises(SystemExit) as exc:
        bagua_launch.main(["--enable_bagua_net", WORKER])
    message = str(exc.value.code)
    assert "has no Bagua-Net plugin" in message and str(tmp_path / "x.so") in message
    assert "BAGUA_NET_PLUGIN_PATH" in message


def test_net_plugin_path_override(monkeypatch, tmp_path):
    plugin = fake_plugin(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BAGUA_NET_PLUGIN_PATH", os.path.basename(plugin))
    assert bagua.net_plugin_path() == plugin  # made absolute
    monkeypatch.setenv("BAGUA_NET_PLUGIN_PATH", str(tmp_path / "missing.so"))
    assert bagua.net_plugin_path() is None


def test_launch_ignored_arguments_warn_once(outdir):
    prefix = os.path.join(outdir, "w")
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()),
                 "--autotune_max_samples", "10", "--report_metrics", "--bagua_service_port",
                 "30001", "--autotune_warmup_time", "30", "--host_list", "a,b",
                 WORKER, "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    (line,) = warnings_in(res.stderr)
    for name in ("--autotune_max_samples", "--report_metrics", "--bagua_service_port",
                 "--host_list"):
        assert name in line
    assert "--autotune_warmup_time" not in line  # its default value
    (rank0,) = load_ranks(prefix, 1)
    assert rank0["RANK"] == "0" and rank0["BAGUA_AUTOTUNE"] is None


def test_launch_autotune_level_turns_autotune_on_in_the_workers(outdir):
    prefix = os.path.join(outdir, "w")
    res = launch("--nproc_per_node", "1", "--master_port", str(free_port()),
                 "--autotune_level", "1", WORKER, "--out", prefix)
    assert res.returncode == 0, res.stderr[-3000:]
    assert warnings_in(res.stderr) == []
    assert load_ranks(prefix, 1)[0]["BAGUA_AUTOTUNE"] == "1"
    bad = launch("--nproc_per_node", "1", "--autotune_level", "-1", WORKER, "--out", prefix)
    assert bad.returncode != 0 and "--autotune_level must be 0 or more, got -1" in bad.stderr


@pytest.mark.parametrize("launcher", ["launch", "run"])
def test_worker_failure_is_the_exit_status(outdir, launcher):
    prefix = os.path.join(outdir, "w")
    if launcher == "launch":
        res = launch("--nproc_per_node", "2", "--master_port", str(free_port()),
                     WORKER, "--out", prefix, "--exit-rank", "1", "--exit-code", "3")
    else:
        res = elastic("--standalone", "--nproc_per_node", "2", "--max_restarts", "0",
                      WORKER, "--out", prefix, "--exit-rank", "1", "--exit-code", "3")
    assert res.returncode == 3, res.stderr[-3000:]
    assert "a worker failed" in res.stderr and "exitcode  : 3" in res.stderr


def test_launch_arguments_are_the_originals():
    # Names and defaults of the original bagua.distributed.launch parse_args.
    original = {
        "nnodes": 1, "node_rank": 0, "nproc_per_node": 1, "master_addr": "127.0.0.1",
        "master_port": 29500, "bagua_service_port": 29501, "set_additional_flag": False,
        "module": False, "no_python": False, "logdir": None, "autotune_level": 0,
        "is_output_autotune_log": False, "report_metrics": False, "autotune_max_samples": 60,
        "autotune_sampling_confidence_time": 5.0, "autotune_warmup_time": 30.0,
        "default_bucket_size": 10 * 1024**2, "enable_bagua_net": False, "host_list": None,
        "ssh_port": None,
    }
    args = vars(bagua_launch.get_args_parser().parse_args(["train.py", "--x", "1"]))
    assert args.pop("training_script") == "train.py"
    assert args.pop("training_script_args") == ["--x", "1"]
    assert args == original
    options = {s for a in bagua_launch.get_args_parser()._actions for s in a.option_strings}
    assert {"-m", "--module"} <= options


def test_launch_translation_to_torchrun():
    parse = bagua_launch.get_args_parser().parse_args
    argv = bagua_launch.torchrun_argv(parse([
        "--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "4", "--master_addr", "h0",
        "--master_port", "1234", "t.py", "--lr", "1"]))
    assert argv == ["--nnodes=2", "--node-rank=1", "--nproc-per-node=4", "--master-addr=h0",
                    "--master-port=1234", "--rdzv-backend=static", "t.py", "--lr", "1"]


# --- bagua.distributed.run ----------------------------------------------------------------


def test_run_standalone_with_bagua_arguments(tmp_path):
    plugin = fake_plugin(tmp_path)
    prefix = str(tmp_path / "w")
    res = elastic("--standalone", "--nproc_per_node", "2", "--default_bucket_size", "4096",
                  "--enable_bagua_net", "--autotune_level", "2", "--use_env",
                  WORKER, "--out", prefix, "--default_bucket_size", "7",
                  env=child_env({"BAGUA_NET_PLUGIN_PATH": plugin}))
    assert res.returncode == 0, res.stderr[-3000:]
    ranks = load_ranks(prefix, 2)
    assert [r["RANK"] for r in ranks] == ["0", "1"]
    for r in ranks:
        assert r["WORLD_SIZE"] == "2"
        assert r["BAGUA_DEFAULT_BUCKET_SIZE"] == "4096"
        assert r["NCCL_NET_PLUGIN"] == plugin and r["NCCL_NET"] == "Bagua"
        assert r["BAGUA_AUTOTUNE"] == "2"
        # The script's own arguments are left alone, even with a Bagua name.
        assert r["argv"] == [WORKER, "--out", prefix, "--default_bucket_size", "7"]
    assert warnings_in(res.stderr) == []


def test_run_elastic_c10d_rendezvous(outdir):
    prefix = os.path.join(outdir, "w")
    res = elastic("--nnodes=1:2", "--nproc-per-node=2", "--rdzv-backend=c10d",
                  f"--rdzv-endpoint=127.0.0.1:{free_port()}", "--rdzv-id=bagua-test",
                  "--rdzv-conf=last_call_timeout=1", "--max-restarts=0",
                  WORKER, "--out", prefix, "--allreduce")
    assert res.returncode == 0, res.stderr[-3000:]
    ranks = load_ranks(prefix, 2)
    assert [r["allreduce"] for r in ranks] == [3.0, 3.0]
    assert warnings_in(res.stderr) == []


def test_run_defaults_are_the_originals(monkeypatch):
    # Bagua 0.9's bagua.distributed.run: --nproc_per_node auto, --max_restarts 3
    # (torchrun's are 1 and 0); torchrun's PET_* variables still set them.
    from bagua.distributed import run as bagua_run
    monkeypatch.delenv("PET_NPROC_PER_NODE", raising=False)
    monkeypatch.delenv("PET_MAX_RESTARTS", raising=False)
    args = bagua_run.get_args_parser().parse_args(["train.py"])
    assert (args.nproc_per_node, args.max_restarts) == ("auto", 3)
    args = bagua_run.get_args_parser().parse_args(["--nproc-per-node=2", "--max-restarts=0",
                                                    "train.py"])
    assert (args.nproc_per_node, args.max_restarts) == ("2", 0)
    monkeypatch.setenv("PET_NPROC_PER_NODE", "4")
    monkeypatch.setenv("PET_MAX_RESTARTS", "1")
    args = bagua_run.get_args_parser().parse_args(["train.py"])
    assert (args.nproc_per_node, int(args.max_restarts)) == ("4", 1)


def test_run_restarts_a_failed_worker_by_default(outdir):
    # The original's 3 restarts: a worker that always fails is started 4 times.
    prefix = os.path.join(outdir, "w")
    res = elastic("--standalone", "--nproc_per_node", "1", "--monitor-interval", "0.1",
                  WORKER, "--out", prefix, "--exit-rank", "0", "--exit-code", "3")
    assert res.returncode == 3, res.stderr[-3000:]
    assert res.stdout.count("rank 0: exiting with 3") == 4, res.stdout[-3000:]


def test_run_rejects_unknown_arguments():
    res = elastic("--no_such_flag", WORKER)
    assert res.returncode == 2 and "--no_such_flag" in res.stderr
