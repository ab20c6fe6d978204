"""Hierarchical mode on CPU (Gloo): 4 processes presented as 2 nodes of 2
(hier_job.py) give the flat results within the stated tolerance, and during
training the only traffic between the nodes is between their leaders
(bytes per TCP socket from `ss`)."""
import os
import shutil

import pytest

from conftest import load_ranks, run_ranks
from hier_check import TOLERANCE, cross_node_traffic, weight_check


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2) to count bytes")
@pytest.mark.parametrize("algorithm", list(TOLERANCE))
def test_hierarchical_equals_flat_and_only_leaders_cross_nodes(outdir, algorithm):
    prefix = os.path.join(outdir, algorithm)
    result = run_ranks("hier_job.py", 4, ["--algorithm", algorithm, "--out", prefix], timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = load_ranks(prefix, 4)
    for r in ranks:
        diff, tolerance = weight_check(algorithm, r)
        assert diff <= tolerance, (algorithm, r["rank"], diff, tolerance)
        # bytes_sent counts the intra- and inter-node communicators too.
        assert r["counted_flat"] > 0 and r["counted"] > 0, (algorithm, r["rank"], r["counted"])
    between_leaders, others = cross_node_traffic(ranks)
    for rank, peer, sent in others:  # a non-leader: nothing beyond a store's few bytes
        assert sent < 1024, (algorithm, rank, peer, sent)
    assert between_leaders > 100_000, between_leaders
    # The public per-node communicators: node 0 is ranks 0-1, node 1 ranks 2-3
    # (they once met under one store key and paired ranks of different nodes).
    for r in ranks:
        node, place = divmod(r["rank"], 2)
        assert r["intra_ranks"] == [2 * node, 2 * node + 1], r
        assert r["inter_ranks"] == [place, place + 2], r
        assert r["intra_sum"] == sum(r["intra_ranks"]) and r["inter_sum"] == sum(r["inter_ranks"]), r


def test_one_rank_per_node_is_the_flat_path(outdir):
    prefix = os.path.join(outdir, "nodes4")
    result = run_ranks("hier_job.py", 4, ["--algorithm", "bytegrad", "--nodes", "4", "--out",
                                         prefix], timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    for r in load_ranks(prefix, 4):
        assert r["flat"] == r["hierarchical"]  # bit for bit: the same algorithm ran
