"""tutti: collective communication for processes on one or many machines.

    import numpy as np, tutti
    with tutti.Communicator.from_env() as comm:     # under tutti-run, torchrun, mpirun, srun
        x = np.full(1024, comm.rank, dtype=np.float32)
        comm.allreduce(x)                           # in place; comm.allreduce(x, y) out of place
        w = comm.allgather_async(x, np.empty(1024 * comm.size, np.float32))
        w.wait()

Buffers are any object with the buffer protocol (numpy arrays, bytearray, memoryview),
C-contiguous; the element type comes from the buffer's format, or from dtype= (bfloat16 as
uint16 bit patterns: dtype="bfloat16"). Every call releases the GIL while it runs and takes
timeout= (seconds) and algorithm= by keyword. Errors raise tutti.Error subclasses named after
the library's status codes; tutti.torch registers the torch.distributed backend "tutti".
"""

from ._errors import *  # noqa: F401,F403
from ._errors import __all__ as _error_names
from ._tutti import (  # noqa: F401
    AVG, BFLOAT16, FLOAT16, FLOAT32, FLOAT64, INT8, INT32, INT64, MAX, MIN, PROD, SUM, UINT8,
    UINT32, UINT64, Communicator, DataType, ReduceOp, Work, __version__, wait_all,
)

__all__ = ["Communicator", "DataType", "ReduceOp", "Work", "wait_all", "__version__"] + list(_error_names)
