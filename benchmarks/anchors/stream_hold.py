"""Holding the current stream while the host enqueues a timed call, so that event pairs measure GPU
time only (as benchmarks/stream_hold.h does for cuimg): a spin kernel keeps the stream busy for
HOLD_US while Python enqueues the start event, the library call and the stop event."""

HOLD_US = 2000.0

_SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""
_cupy_spin = None


def hold_cupy(cp, us=HOLD_US):
    """Enqueues the spin kernel on CuPy's current stream."""
    global _cupy_spin
    if _cupy_spin is None:
        _cupy_spin = cp.RawKernel(_SPIN, "spin")
    _cupy_spin((1,), (1,), (cp.uint64(int(us * 1e3)),))


def hold_torch(torch, us=HOLD_US):
    """Enqueues torch's own spin kernel (clock cycles; 2 GHz assumed, longer at lower clocks)."""
    torch.cuda._sleep(int(us * 2e3))
