"""``baguarun``: starts bagua.distributed.launch on every host of a list, over ssh.

    baguarun --host_list 192.168.1.1,192.168.1.2 --nproc_per_node=8 --master_port=1234 \\
        train.py --arg1 --arg2

runs, through ``ssh`` (the one on PATH) on host i of N:

    cd <this working directory> && exec <this Python> -m bagua.distributed.launch \\
        --nnodes=N --node_rank=i --master_addr=<first host> --master_port=1234 \\
        --nproc_per_node=8 train.py --arg1 --arg2

Each host's output is printed prefixed with its name. When one host's
launcher fails, the others are stopped (their ssh sessions are ended; ssh runs
with a remote terminal, so the remote launchers get SIGHUP and stop their
workers). The exit status is 0, or the first failed host's.

Requirements: passwordless ssh to every host (BatchMode: no prompts), and the
same working directory, Python interpreter path and bagua installation on
every host. PATH and LD_LIBRARY_PATH are forwarded, as the original did, and
every ``-x NAME[=VALUE]``. torchrun's own multi-node form (started by a
scheduler on every node) needs none of this; see docs/launchers.md.

The arguments are the original baguarun's: --host_list (or
$BAGUA_NODE_DOMAIN_NAMES; ``host:port`` gives a host its own ssh port),
--ssh_port (or $BAGUA_SSH_PORT; unset: ssh's own default), --master_port,
--nproc_per_node, --no_python, --bagua_service_port, --enable_bagua_net, -x;
plus --master_addr, --default_bucket_size, --set_additional_flag and -m,
forwarded to bagua.distributed.launch.
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

PROG = "baguarun"
# Local variables the remote launchers get, as the original forwarded them.
FORWARDED_ENV = ("PATH", "LD_LIBRARY_PATH")
# How long a stopped host gets to end before it is killed.
STOP_GRACE_S = 10.0


def get_args_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Runs bagua.distributed.launch on every host of --host_list over "
        "ssh (node ranks in list order, the first host is the master). See docs/launchers.md.")
    parser.add_argument(
        "--host_list", default=None,
        help="Comma-separated hosts: 'h1,h2' (ssh port from --ssh_port) or 'h1:22,h2:8022'. "
        "Default: $BAGUA_NODE_DOMAIN_NAMES.")
    parser.add_argument(
        "--ssh_port", type=int, default=None,
        help="ssh port of every host without its own. Default: $BAGUA_SSH_PORT, else ssh's "
        "default (its configuration).")
    parser.add_argument("--master_port", type=int, default=None,
                        help="Free port on the first host (launch's default: 29500).")
    parser.add_argument("--nproc_per_node", type=int, required=True,
                        help="Processes per host.")
    parser.add_argument("--no_python", default=False, action="store_true",
                        help="Forwarded to bagua.distributed.launch.")
    parser.add_argument("--bagua_service_port", default=None, type=int,
                        help="Forwarded (bagua.distributed.launch ignores it, with a warning).")
    parser.add_argument("--enable_bagua_net", action="store_true", default=False,
                        help="Forwarded: every host uses the Bagua-Net plugin of its bagua "
                        "installation.")
    parser.add_argument("-x", type=str, action="append",
                        help="NAME=VALUE, or NAME (its value here): an environment variable for "
                        "the remote launchers. Repeatable.")
    parser.add_argument("--master_addr", default=None,
                        help="Address of the master as the other hosts reach it (default: the "
                        "first host of --host_list).")
    parser.add_argument("--default_bucket_size", type=int, default=None,
                        help="Forwarded to bagua.distributed.launch.")
    parser.add_argument("--set_additional_flag", default=False, action="store_true",
                        help="Forwarded: the script gets --local_rank=<LOCAL_RANK>.")
    parser.add_argument("-m", "--module", default=False, action="store_true",
                        help="Forwarded: training_script is a Python module.")
    parser.add_argument("training_script", type=str,
                        help="The training program/script, followed by its arguments.")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_hosts(host_list, ssh_port):
    """'h1,h2:8022' -> [('h1', ssh_port), ('h2', 8022)]; a port may be None."""
    hosts = []
    for item in host_list.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        if len(parts) == 1:
            hosts.append((parts[0], ssh_port))
        elif len(parts) == 2 and parts[0] and parts[1].isdigit():
            hosts.append((parts[0], int(parts[1])))
        else:
            raise ValueError(f"invalid host {item!r} in --host_list (expected host or host:port)")
    if not hosts:
        raise ValueError("--host_list names no host")
    return hosts


def parse_args(argv=None):
    parser = get_args_parser()
    args = parser.parse_args(argv)
    if args.host_list is None:
        args.host_list = os.environ.get("BAGUA_NODE_DOMAIN_NAMES", "")
    if args.ssh_port is None and os.environ.get("BAGUA_SSH_PORT"):
        try:
            args.ssh_port = int(os.environ["BAGUA_SSH_PORT"])
        except ValueError:
            parser.error(f"$BAGUA_SSH_PORT={os.environ['BAGUA_SSH_PORT']!r} is not a port number")
    if not args.host_list:
        parser.error("--host_list or $BAGUA_NODE_DOMAIN_NAMES must be set")
    try:
        args.hosts = parse_hosts(args.host_list, args.ssh_port)
    except ValueError as error:
        parser.error(str(error))
    if args.nproc_per_node < 1:
        parser.error("--nproc_per_node must be at least 1")
    if args.module and args.no_python:
        parser.error("--no_python and --module cannot be used together")
    args.env = {}
    for word in args.x or []:
        name, sep, value = word.partition("=")
        if not name.isidentifier():
            parser.error(f"-x {word!r}: not NAME or NAME=VALUE")
        args.env[name] = value if sep else os.environ.get(name, "")
    return args


def remote_command(args, node_rank, cwd=None, python=None):
    """The shell command run on host `node_rank`."""
    q = shlex.quote
    master_addr = args.master_addr or args.hosts[0][0].rpartition("@")[2]  # user@host: host
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    env.update(args.env)
    launch = [python or sys.executable, "-m", "bagua.distributed.launch",
              f"--nnodes={len(args.hosts)}", f"--node_rank={node_rank}",
              f"--master_addr={master_addr}", f"--nproc_per_node={args.nproc_per_node}"]
    if args.master_port is not None:
        launch.append(f"--master_port={args.master_port}")
    if args.bagua_service_port is not None:
        launch.append(f"--bagua_service_port={args.bagua_service_port}")
    if args.default_bucket_size is not None:
        launch.append(f"--default_bucket_size={args.default_bucket_size}")
    for flag in ("no_python", "enable_bagua_net", "set_additional_flag", "module"):
        if getattr(args, flag):
            launch.append(f"--{flag}")
    launch += [args.training_script] + list(args.training_script_args)
    exports = "".join(f"export {name}={q(value)}; " for name, value in env.items())
    return f"cd {q(cwd or os.getcwd())} && {exports}exec {' '.join(q(word) for word in launch)}"


def ssh_command(host, port, command):
    """ssh with a remote terminal (-tt): when the connection ends, the remote
    launcher gets SIGHUP and stops its workers. BatchMode: fail, never prompt.
    The remote login shell runs `bash -c COMMAND`."""
    argv = ["ssh", "-tt", "-o", "BatchMode=yes"]
    if port is not None:
        argv += ["-p", str(port)]
    return argv + [host, "bash -c " + shlex.quote(command)]


class _Host:
    def __init__(self, name, prefix, argv):
        self.name = name
        self.prefix = prefix
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: stopped as a whole
        self.reader = None

    def stop(self, sig):
        # Only while not reaped: the group id is then still this session's.
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


def _pump(host, lock, out):
    for raw in iter(host.proc.stdout.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        with lock:
            out.write(f"{host.prefix}{line}\n")
            out.flush()
    host.proc.stdout.close()


def _prefixes(hosts):
    names = [name for name, _ in hosts]
    if len(set(names)) == len(names):
        return [f"{name}: " for name in names]
    return [f"{name}[{i}]: " for i, name in enumerate(names)]


def _stop_all(hosts):
    for host in hosts:
        host.stop(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for host in hosts:
        try:
            host.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            host.stop(signal.SIGKILL)
            host.proc.wait()


def launch(args, out=None):
    """Starts every host's launcher and waits; returns the exit status."""
    out = out or sys.stdout
    lock = threading.Lock()
    hosts = []
    failed = None

    def on_signal(signum, frame):
        raise SystemExit(128 + signum)

    # SIGTERM stops every host too, and so do SIGHUP (the login session that
    # ran baguarun ended: the ssh processes have sessions of their own, so the
    # hangup would not reach them) and SIGQUIT (signal handlers: main thread
    # only). A SIGKILL still leaves the remote launchers running.
    in_main = threading.current_thread() is threading.main_thread()
    stopping = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    previous = {s: signal.signal(s, on_signal) for s in stopping} if in_main else {}
    try:
        for rank, ((name, port), prefix) in enumerate(zip(args.hosts, _prefixes(args.hosts))):
            command = remote_command(args, rank)
            print(f"{PROG}: {name}: {command}", file=sys.stderr, flush=True)
            host = _Host(name, prefix, ssh_command(name, port, command))
            host.reader = threading.Thread(target=_pump, args=(host, lock, out), daemon=True)
            host.reader.start()
            hosts.append(host)
        running = list(hosts)
        while running:
            for host in list(running):
                code = host.proc.poll()
                if code is None:
                    continue
                running.remove(host)
                if code != 0 and failed is None:
                    failed = (host, code)
                    print(f"{PROG}: {host.name} exited with status {code}; stopping the other "
                          "hosts", file=sys.stderr, flush=True)
                    _stop_all(running)
            time.sleep(0.1)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; stopping every host", file=sys.stderr, flush=True)
        failed = failed or (None, 128 + signal.SIGINT)
    finally:
        _stop_all(hosts)
        for host in hosts:
            if host.reader is not None:
                host.reader.join(timeout=5)
        for s, handler in previous.items():
            signal.signal(s, handler)
    if failed is None:
        return 0
    code = failed[1]
    return code if code > 0 else 128 - code  # killed by signal -code


def main(argv=None):
    """The console script: exits with the first failed host's status."""
    sys.exit(launch(parse_args(argv)))


if __name__ == "__main__":
    main()
