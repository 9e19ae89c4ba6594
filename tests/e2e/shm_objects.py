"""POSIX shared-memory objects as a cuimg client on the server's host makes them: created with
multiprocessing.shared_memory (shm_open + ftruncate + mmap), named for RegisterSharedMemory with the
leading "/", unlinked on close."""
import os
from multiprocessing import shared_memory


class ShmObject:
    def __init__(self, size, prefix="cuimg-e2e"):
        name = f"{prefix}-{os.getpid()}-{ShmObject._counter}"
        ShmObject._counter += 1
        self.shm = shared_memory.SharedMemory(name=name, create=True, size=size)
        self.key = "/" + name
        self.size = size

    @property
    def buf(self):
        return self.shm.buf

    def close(self):
        self.shm.close()
        self.shm.unlink()


ShmObject._counter = 0
