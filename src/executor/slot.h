#pragma once
// ExecutorPool::Slot (executor.h): one in-flight step of a run and what it keeps between
// runs. Shared by executor.cc, which runs the steps, and pool.cc, which makes the slots.

#include <vector>

#include "executor/combine_sink.h"
#include "executor/executor.h"
#include "schedule/schedule.h"
#include "transport/link.h"

namespace tutti {

struct ExecutorPool::Slot {
  StepId step = 0;
  bool busy = false;
  bool receiving = false;  // waiting for the receive half (else for the send half)
  bool fused = false;      // a send carrying the copy step `fusedCopy` (Run::fuseCopy)
  StepId fusedCopy = 0;
  TransferRequest recv;
  TransferRequest send;
  std::vector<char> staging;
  CombineSink sink;
};

}  // namespace tutti
