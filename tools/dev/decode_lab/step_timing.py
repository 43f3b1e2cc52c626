"""What the decode step labs (decode_ceiling.py, l2_prefetch_step.py) share: the time of a CUDA graph's
replay. The graphs themselves come from tests/e2e/shim_llama_decode_e2e.py's capture_step, the e2e's
own warm-up and capture."""


def replay_us(torch, graph, replays, warm=5):
    """Microseconds per replay of `graph`, over `replays` back-to-back replays after `warm` untimed ones."""
    for _ in range(warm):
        graph.replay()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(replays):
        graph.replay()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / replays * 1000
