"""What hier_job.py's results must show, shared by the CPU test
(test_hierarchical.py) and the GPU run's summary (bench/gpu/hier_summary.py):
hierarchical results within TOLERANCE of flat ones, and (where the job could
count socket bytes) traffic between nodes only between their leaders."""

TOLERANCE = {  # largest |hierarchical - flat| over the weights (QAdam: the momentum)
    "gradient_allreduce": 1e-6,  # only the summation order differs
    "decentralized": 1e-6,       # "all": the exact average either way
    "bytegrad": 1e-3,            # 8-bit codes of node means instead of each rank's
    "qadam": None,               # 4 quantization steps of one compressed momentum (below)
}


def weight_check(algorithm, rank_result):
    """(largest |hierarchical - flat|, its tolerance) of one rank's result."""
    r = rank_result
    diff = max(abs(a - b) for a, b in zip(r["flat"], r["hierarchical"]))
    # QAdam: each side is within about 2 steps (two quantizations) of the exact
    # mean momentum; a chunk's step is at most 2 max|m| / 255.
    tolerance = TOLERANCE[algorithm] or 4 * 2 * max(abs(v) for v in r["flat"]) / 255
    return diff, tolerance


def cross_node_traffic(ranks):
    """(bytes sent between node leaders, [(rank, peer, bytes)] sent across nodes
    by a non-leader) during the hierarchical run; None where a rank has no
    socket counts (no `ss`)."""
    if any(r["sent"] is None for r in ranks):
        return None
    owner = {int(k.split(":")[0]): r["rank"] for r in ranks for k in r["sent"]}
    nodes = {r["node"] for r in ranks}
    leaders = {min(r["rank"] for r in ranks if r["node"] == node) for node in nodes}
    between_leaders, others = 0, []
    for r in ranks:
        for key, sent in r["sent"].items():
            peer = owner.get(int(key.split(":")[1]))
            if peer is None or ranks[peer]["node"] == r["node"]:
                continue
            if r["rank"] in leaders and peer in leaders:
                between_leaders += sent
            else:
                others.append((r["rank"], peer, sent))
    return between_leaders, others
