"""bagua._C.ProcessGroup's collectives on CPU (Gloo), 1 to 3 forked ranks,
without torch: buffers are ctypes arrays, the store is a small file store.
Every call blocks until done on a CPU group; results are exact (small
integers), integer averages truncate toward zero, bad arguments raise
ValueError naming the problem."""
import ctypes
import multiprocessing
import os
import time
import traceback

import pytest

from bagua import _C


class FileStore:
    """The torch.distributed Store calls CallbackStore makes, over files."""

    def __init__(self, path):
        self.path = path

    def _file(self, key):
        return os.path.join(self.path, key.replace("/", "%"))

    def set(self, key, value):
        tmp = self._file(key) + f".tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(value if isinstance(value, bytes) else str(value).encode())
        os.replace(tmp, self._file(key))

    def get(self, key):
        with open(self._file(key), "rb") as f:
            return f.read()

    def add(self, key, delta):
        import fcntl

        with open(self._file(key) + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            value = int(self.get(key)) + delta if os.path.exists(self._file(key)) else delta
            self.set(key, str(value).encode())
            return value

    def wait(self, keys, timeout=None):
        deadline = time.monotonic() + (timeout.total_seconds() if timeout else 60)
        while not all(os.path.exists(self._file(k)) for k in keys):
            if time.monotonic() > deadline:
                raise TimeoutError(f"store wait timed out: {keys}")
            time.sleep(0.002)


def buffer(ctype, values):
    return (ctype * max(len(values), 1))(*values)


def ptr(buf):
    return ctypes.addressof(buf)


def rank_body(rank, size, group):
    # allreduce: every op name, integer and float dtypes.
    v = buffer(ctypes.c_int32, [rank + 1, -(rank + 1), 1 << rank])
    group.allreduce(ptr(v), 3, "int32", "sum")
    assert list(v)[:3] == [size * (size + 1) // 2, -size * (size + 1) // 2, (1 << size) - 1]
    v = buffer(ctypes.c_int32, [1 << rank, 6, rank + 2])
    group.allreduce(ptr(v), 3, "int32", "bor")
    assert v[0] == (1 << size) - 1 and v[1] == 6
    group.allreduce(ptr(v), 3, "int32", "bxor")
    assert v[0] == ((1 << size) - 1 if size % 2 else 0)
    p = buffer(ctypes.c_double, [rank + 1.0])
    group.allreduce(ptr(p), 1, "float64", "product")
    assert p[0] == float(__import__("math").factorial(size))
    m = buffer(ctypes.c_int64, [-7 if rank == 0 else 0])
    group.allreduce(ptr(m), 1, "int64", "avg")
    assert m[0] == int(-7 / size), m[0]  # truncated toward zero
    f = buffer(ctypes.c_float, [2.0 * rank])
    group.allreduce(ptr(f), 1, "float32", "mean")
    assert f[0] == size - 1

    # reduce to the last rank; other ranks' out is not written.
    src = buffer(ctypes.c_uint8, [rank + 3, 200])
    out = buffer(ctypes.c_uint8, [0, 0])
    group.reduce(ptr(src), ptr(out), 2, "uint8", "max", size - 1)
    assert list(out) == ([size + 2, 200] if rank == size - 1 else [0, 0])

    # data movement
    per = 5
    mine = buffer(ctypes.c_uint8, [rank * 10 + k for k in range(per)])
    everyone = buffer(ctypes.c_uint8, [0] * per * size)
    group.allgather(ptr(mine), ptr(everyone), per)
    assert list(everyone) == [r * 10 + k for r in range(size) for k in range(per)]
    gathered = buffer(ctypes.c_uint8, [0] * per * size)
    group.gather(ptr(mine), ptr(gathered) if rank == 0 else 0, per, 0)
    if rank == 0:
        assert list(gathered) == list(everyone)
    got = buffer(ctypes.c_uint8, [0] * per)
    group.scatter(ptr(everyone) if rank == size - 1 else 0, ptr(got), per, size - 1)
    assert list(got) == list(mine)
    bc = buffer(ctypes.c_uint8, [9 if rank == 0 else 0] * 4)
    group.broadcast(ptr(bc), 4, 0)
    assert list(bc) == [9] * 4
    rs_in = buffer(ctypes.c_int8, [rank - j for j in range(size)])
    rs_out = buffer(ctypes.c_int8, [0])
    group.reduce_scatter(ptr(rs_in), ptr(rs_out), 1, "int8", "min")
    assert rs_out[0] == -rank
    a_in = buffer(ctypes.c_uint8, [rank * 16 + j for j in range(size)])
    a_out = buffer(ctypes.c_uint8, [0] * size)
    group.alltoall(ptr(a_in), ptr(a_out), 1)
    assert list(a_out) == [j * 16 + rank for j in range(size)]
    # alltoall_v: rank i sends j + 1 bytes of value 16 i + j to rank j.
    send = [j + 1 for j in range(size)]
    send_off = [sum(send[:j]) for j in range(size)]
    recv = [rank + 1] * size
    recv_off = [sum(recv[:j]) for j in range(size)]
    v_in = buffer(ctypes.c_uint8, [rank * 16 + j for j in range(size) for _ in range(j + 1)])
    v_out = buffer(ctypes.c_uint8, [0] * sum(recv))
    group.alltoall_v(ptr(v_in), send, send_off, ptr(v_out), recv, recv_off)
    assert list(v_out) == [j * 16 + rank for j in range(size) for _ in range(rank + 1)]
    if size > 1:
        s = buffer(ctypes.c_uint8, [rank] * 3)
        r = buffer(ctypes.c_uint8, [255] * 3)
        if rank % 2 == 0:
            group.send(ptr(s), 3, (rank + 1) % size)
            group.recv(ptr(r), 3, (rank - 1) % size)
        else:
            group.recv(ptr(r), 3, (rank - 1) % size)
            group.send(ptr(s), 3, (rank + 1) % size)
        assert list(r) == [(rank - 1) % size] * 3
    group.barrier()

    # errors, rejected before anything runs
    with pytest.raises(ValueError, match="bitwise reductions need an integer dtype, got float32"):
        group.allreduce(ptr(f), 1, "float32", "band")
    with pytest.raises(ValueError, match="unsupported dtype 'int16'"):
        group.allreduce(ptr(v), 1, "int16")
    with pytest.raises(ValueError, match="unknown reduce op 'land'"):
        group.allreduce(ptr(v), 1, "int32", "land")
    with pytest.raises(ValueError, match=f"root {size} is not a rank of {size}"):
        group.reduce(ptr(v), ptr(v), 1, "int32", "sum", size)
    with pytest.raises(ValueError, match="send_bytes|sendBytes"):
        group.alltoall_v(ptr(v), [0] * (size + 1), [0] * size, ptr(v), [0] * size, [0] * size)
    group.barrier()


def run_rank(rank, size, path, errors):
    try:
        group = _C.ProcessGroup.gloo(_C.CallbackStore(FileStore(path)), rank, size,
                                     iface="lo", timeout_s=30.0)
        rank_body(rank, size, group)
    except BaseException:  # noqa: BLE001 - reported to the parent
        errors.put(f"rank {rank}: {traceback.format_exc()}")


@pytest.mark.parametrize("size", [1, 2, 3])
def test_cpu_collectives(tmp_path, size):
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    procs = [ctx.Process(target=run_rank, args=(r, size, str(tmp_path), errors))
             for r in range(size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        if p.is_alive():
            p.kill()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, "\n".join(failures)
    assert all(p.exitcode == 0 for p in procs)
