// tutti::memAlloc / memFree (memory.h): the shared-memory transport's user buffers.

#include "tutti/memory.h"

#include "transport/shm/user_buffers.h"

namespace tutti {

Result<void*> memAlloc(std::size_t bytes) { return shm::allocUserBuffer(bytes); }

Status memFree(void* pointer) { return shm::freeUserBuffer(pointer); }

}  // namespace tutti
