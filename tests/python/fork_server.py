"""The suites' fork server: one interpreter per pytest session imports torch,
bagua and sklearn (fork_launch.py's imports) and then only forks. Each
launch (conftest.run_ranks) is a fork of it that becomes fork_launch.py's
parent, with the launch's argv, environment, working directory and output
files, and forks the ranks in turn. A launch so costs no interpreter start and
no import of torch (about 4 s of CPU each on the 2-CPU CI machine).

The server stays as it was after its imports (it runs nothing else), so
every launch starts from the same state, as a fresh `python fork_launch.py`
would, except for what Python and torch read from the environment while
importing (the server's is the pytest process's, plus conftest.RANK_ENV).

Protocol, one JSON object per line: a request {"argv": [NPROC, SCRIPT, ARGS...],
"env", "cwd", "stdout", "stderr"} on stdin; replies {"pid": launcher pid}
(its own process group: killpg ends it and its ranks) and then {"rc": exit
code} on stdout. End of input ends the server.
"""
import json
import os
import sys
import traceback

import fork_launch


def launch(request):
    """In the forked child: becomes `python fork_launch.py ARGV...`."""
    try:
        os.setpgid(0, 0)
        fork_launch.die_with_parent()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, fd)
            os.close(out)
        sys.argv = ["fork_launch.py"] + [str(a) for a in request["argv"]]
        fork_launch.main()  # ends the process with the launch's exit code
    except BaseException:  # noqa: BLE001 - reported on the launch's stderr
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(1)


def serve():
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints must not reach the replies
    fork_launch.die_with_parent()  # pytest's end (or kill) ends the server
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            launch(request)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()
    os._exit(0)


if __name__ == "__main__":
    serve()
