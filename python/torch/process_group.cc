// The torch.distributed backend "tutti", for torch 1.13 (c10d::ProcessGroup): the whole glue
// between torch and tutti, in this one file, so that a torch >= 2 version (c10d::Backend)
// can sit beside it. python/tutti/torch.py registers it.
//
// What it owns: torch's store seen as a tutti::Store (the rendezvous, no extra port); the
// mapping of torch's dtypes, ops and timeouts onto tutti's; each op as one async tutti call
// (temporaries for list arguments, copied out when the call ends); a c10d::Work over
// tutti::Work, with a Future for DDP. What it must not do: any communication of its own.

#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <tutti/tutti.hpp>

namespace py = pybind11;

namespace tutti::torchglue {

namespace {

using Ms = std::chrono::milliseconds;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("tutti: " + what); }

// Runs `f` without the GIL when this thread holds it: joining, destroying and waiting on
// the peers must not stop other Python threads.
template <typename F>
void withoutGil(F&& f) {
  if (PyGILState_Check()) {
    py::gil_scoped_release release;
    f();
  } else {
    f();
  }
}

// ---- the rendezvous: torch's store (already prefixed for this group) as a tutti::Store.

class TorchStore final : public tutti::Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  Status set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    return guard("set", key, [&] { store_->set(key, value); });
  }
  Result<std::vector<std::uint8_t>> get(const std::string& key, Deadline deadline) override {
    Status s = wait({key}, deadline);
    if (!s.ok()) return s;
    std::vector<std::uint8_t> value;
    s = guard("get", key, [&] { value = store_->get(key); });
    if (!s.ok()) return s;
    return value;
  }
  Result<std::int64_t> add(const std::string& key, std::int64_t delta) override {
    std::int64_t value = 0;
    Status s = guard("add", key, [&] { value = store_->add(key, delta); });
    if (!s.ok()) return s;
    return value;
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    // torch reads 0 ms as "no timeout": at least 1 ms; "never" as a day (bounded elsewhere).
    const Ms timeout = deadline.isNever()
                           ? Ms(std::chrono::hours(24))
                           : std::max(Ms(1), std::chrono::ceil<Ms>(deadline.remaining()));
    try {
      store_->wait(keys, timeout);
      return Status::Ok();
    } catch (const std::exception& e) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      return Status(ErrorCode::kTimeout, "torch's store did not give key(s) " + names +
                                             " within " + std::to_string(timeout.count()) +
                                             " ms: " + e.what());
    }
  }

 private:
  template <typename F>
  Status guard(const char* op, const std::string& key, F&& f) {
    try {
      f();
      return Status::Ok();
    } catch (const std::exception& e) {
      return Status(ErrorCode::kSystemError,
                    std::string("torch's store failed to ") + op + " key " + key + ": " + e.what());
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
};

// ---- torch's types and ops in tutti's terms.

DataType dataTypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kByte: return DataType::kUint8;
    case at::kChar: return DataType::kInt8;
    case at::kInt: return DataType::kInt32;
    case at::kLong: return DataType::kInt64;
    case at::kHalf: return DataType::kFloat16;
    case at::kBFloat16: return DataType::kBFloat16;
    case at::kFloat: return DataType::kFloat32;
    case at::kDouble: return DataType::kFloat64;
    default:
      fail(std::string("tensors of ") + c10::toString(t.scalar_type()) +
           " are not supported (uint8, int8, int32, int64, float16, bfloat16, float32, float64)");
  }
}

ReduceOp reduceOpOf(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return ReduceOp::kSum;
    case c10d::ReduceOp::AVG: return ReduceOp::kAvg;
    case c10d::ReduceOp::PRODUCT: return ReduceOp::kProd;
    case c10d::ReduceOp::MIN: return ReduceOp::kMin;
    case c10d::ReduceOp::MAX: return ReduceOp::kMax;
    default: fail("reduce op " + std::to_string(static_cast<int>(op.op_)) +
                  " is not supported (SUM, AVG, PRODUCT, MIN, MAX)");
  }
}

void checkCpu(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu()) fail(std::string(what) + " is on " + t.device().str() + "; tutti moves CPU tensors");
  if (t.is_sparse()) fail(std::string(what) + " is sparse; tutti moves dense tensors");
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1) {
    fail(std::string(op) + " takes one tensor per process, got " + std::to_string(tensors.size()));
  }
  checkCpu(tensors[0], op);
  return tensors[0];
}

std::size_t count(const at::Tensor& t) { return static_cast<std::size_t>(t.numel()); }

// ---- one op in flight.

// Flat buffers for list arguments, reused from op to op. A fresh large allocation pays its
// page faults on every call (glibc maps blocks over 32 MiB anew each time), which on some
// VMs costs more than the collective; these are faulted in once.
class StagingPool {
 public:
  // A contiguous tensor of `numel` elements of `dtype`, and the byte buffer under it (to
  // give back).
  std::pair<at::Tensor, at::Tensor> take(std::int64_t numel, at::ScalarType dtype) {
    const std::int64_t bytes = numel * static_cast<std::int64_t>(c10::elementSize(dtype));
    at::Tensor buffer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->numel() >= bytes && (best == free_.end() || it->numel() < best->numel())) best = it;
      }
      if (best != free_.end()) {
        buffer = std::move(*best);
        free_.erase(best);
      }
    }
    if (!buffer.defined()) buffer = at::empty({std::max<std::int64_t>(bytes, 1)}, at::kByte);
    return {buffer.narrow(0, 0, bytes).view(dtype), buffer};
  }
  void give(at::Tensor buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kKeep) free_.push_back(std::move(buffer));
  }

 private:
  static constexpr std::size_t kKeep = 4;  // buffers kept; more ops in flight allocate
  std::mutex mutex_;
  std::vector<at::Tensor> free_;
};

// Tensors an op reads or writes, kept alive until it ends, and the copies into the caller's
// tensors that follow it (list arguments and non-contiguous tensors go through a flat one).
struct Staging {
  std::shared_ptr<StagingPool> pool;
  std::vector<at::Tensor> keep;
  std::vector<at::Tensor> pooled;  // byte buffers to give back to `pool`
  std::vector<std::pair<at::Tensor, at::Tensor>> copyOut;  // (destination, source)

  Staging() = default;
  explicit Staging(std::shared_ptr<StagingPool> p) : pool(std::move(p)) {}
  Staging(Staging&&) = default;
  Staging& operator=(Staging&&) = delete;
  ~Staging() { release(); }

  // Drops every tensor, giving the pooled buffers back.
  void release() {
    copyOut.clear();
    keep.clear();
    for (auto& b : pooled) pool->give(std::move(b));
    pooled.clear();
  }
  // A contiguous tensor for `t`: `t` itself, or a copy whose result is copied back.
  at::Tensor contiguous(const at::Tensor& t, bool written) {
    if (t.is_contiguous()) return t;
    at::Tensor c = t.contiguous();
    keep.push_back(c);
    if (written) copyOut.emplace_back(t, c);
    return c;
  }
  // A flat tensor holding `parts` end to end (copied in when they are read).
  at::Tensor flatten(const std::vector<at::Tensor>& parts, bool read) {
    std::int64_t n = 0;
    for (const auto& p : parts) n += p.numel();
    auto [flat, buffer] = pool->take(n, parts.at(0).scalar_type());
    pooled.push_back(buffer);
    if (read) {
      std::int64_t at = 0;
      for (const auto& p : parts) {
        flat.narrow(0, at, p.numel()).copy_(p.reshape({-1}));
        at += p.numel();
      }
    }
    keep.push_back(flat);
    return flat;
  }
  // After the op: `flat`'s pieces into `parts`.
  void scatterBack(const at::Tensor& flat, const std::vector<at::Tensor>& parts) {
    std::int64_t at = 0;
    for (const auto& p : parts) {
      copyOut.emplace_back(p, flat.narrow(0, at, p.numel()).view(p.sizes()));
      at += p.numel();
    }
  }
};

class ProcessGroupTutti;

class TuttiWork final : public c10d::Work {
 public:
  TuttiWork(int rank, c10d::OpType type, tutti::Work work, std::vector<at::Tensor> outputs,
            Staging staging)
      : c10d::Work(rank, type), work_(std::move(work)), outputs_(std::move(outputs)),
        staging_(std::move(staging)) {}

  bool isCompleted() override {
    if (!done_.load(std::memory_order_acquire) && work_.test()) complete(work_.wait());
    return done_.load(std::memory_order_acquire);
  }
  bool isSuccess() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && !exception_;
  }
  std::exception_ptr exception() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return exception_;
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  void synchronize() override {}

  // Runs the op on this thread when nobody else is (tutti's "wait" progress), then raises
  // its error. A timeout leaves the op running, as torch's Gloo backend does.
  bool wait(Ms timeout) override {
    if (!done_.load(std::memory_order_acquire)) {
      if (timeout == kNoTimeout) {
        complete(work_.wait());
      } else {
        const Status s = work_.wait(Deadline::after(timeout));
        if (s.code() == ErrorCode::kTimeout && !work_.test()) {
          fail("wait timed out after " + std::to_string(timeout.count()) + " ms; the " +
               c10d::opTypeToString(opType_) + " goes on");
        }
        complete(work_.wait());
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Ends the op once: the copies out, then the Work and its Future. Any thread; a second
  // caller returns once the first has ended it. (Not std::call_once: glibc's wakes waiters
  // with a system call every time, a microsecond per op here.)
  void complete(const Status& status) {
    if (claimed_.exchange(true, std::memory_order_acq_rel)) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return completed_; });  // the copies out: local work
      return;
    }
    std::exception_ptr error;
    if (status.ok()) {
      try {
        for (auto& [dst, src] : staging_.copyOut) dst.copy_(src);
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      error = std::make_exception_ptr(std::runtime_error("tutti: " + status.toString()));
    }
    staging_.release();
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      completed_ = true;
      exception_ = error;
      future = future_;
    }
    done_.store(true, std::memory_order_release);
    cv_.notify_all();
    if (future) settle(future);
  }

  // Waits for the op on the caller's thread (the completion thread's job).
  void drive() { complete(work_.wait()); }

 private:
  void settle(const c10::intrusive_ptr<c10::ivalue::Future>& future) {
    if (exception_) {
      future->setError(exception_);
    } else {
      future->markCompleted(c10::IValue(outputs_));
    }
  }

  friend class ProcessGroupTutti;
  ProcessGroupTutti* owner_ = nullptr;  // outlives its Works' Futures (torch keeps it)
  tutti::Work work_;
  std::vector<at::Tensor> outputs_;
  Staging staging_;
  std::atomic<bool> claimed_{false};  // a thread is ending the op
  std::atomic<bool> done_{false};
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// ---- the process group.

class ProcessGroupTutti final : public c10d::ProcessGroup {
 public:
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, Ms timeout)
      : c10d::ProcessGroup(rank, size) {
    CommOptions options;
    options.timeout = timeout;
    options.name = "torch";
    Result<Communicator> comm = Status(ErrorCode::kInternal, "not created");
    withoutGil([&] {  // joining waits for every rank
      comm = Communicator::create(std::make_shared<TorchStore>(store), rank, size, options);
    });
    if (!comm.ok()) fail(comm.status().toString());
    comm_.emplace(std::move(comm).value());
  }

  ~ProcessGroupTutti() override {
    stopCompleter();
    withoutGil([&] { comm_.reset(); });  // destroying waits for every rank
  }

  const std::string getBackendName() const override { return "tutti"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    Staging st = staging();
    at::Tensor t = st.contiguous(single(tensors, "broadcast"), true);
    const int root = static_cast<int>(opts.rootRank);
    return start(c10d::OpType::BROADCAST, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().broadcastAsync(t.data_ptr(), t.data_ptr(), count(t), dataTypeOf(t), root, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    Staging st = staging();
    at::Tensor t = st.contiguous(single(tensors, "allreduce"), true);
    const ReduceOp op = reduceOpOf(opts.reduceOp);
    return start(c10d::OpType::ALLREDUCE, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().allreduceAsync(t.data_ptr(), t.data_ptr(), count(t), dataTypeOf(t), op, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    if (tensors.empty()) fail("allreduce_coalesced of no tensors");
    for (const auto& t : tensors) {
      checkCpu(t, "allreduce_coalesced");
      if (t.scalar_type() != tensors[0].scalar_type()) fail("allreduce_coalesced of tensors of different dtypes");
    }
    Staging st = staging();
    at::Tensor flat = st.flatten(tensors, true);
    st.scatterBack(flat, tensors);
    const ReduceOp op = reduceOpOf(opts.reduceOp);
    return start(c10d::OpType::ALLREDUCE_COALESCED, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().allreduceAsync(flat.data_ptr(), flat.data_ptr(), count(flat), dataTypeOf(flat), op, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    Staging st = staging();
    at::Tensor t = st.contiguous(single(tensors, "reduce"), true);
    const ReduceOp op = reduceOpOf(opts.reduceOp);
    const int root = static_cast<int>(opts.rootRank);
    return start(c10d::OpType::REDUCE, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().reduceAsync(t.data_ptr(), t.data_ptr(), count(t), dataTypeOf(t), op, root, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    Staging st = staging();
    at::Tensor in = st.contiguous(single(inputs, "allgather"), false);
    const auto& outs = blocksOf(outputs, in, "allgather");
    at::Tensor flat = st.flatten(outs, false);
    st.scatterBack(flat, outs);
    return start(c10d::OpType::ALLGATHER, outs, std::move(st), [&](const CallOptions& o) {
      return comm().allgatherAsync(in.data_ptr(), flat.data_ptr(), count(in), dataTypeOf(in), o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    Staging st = staging();
    at::Tensor in = st.contiguous(input, false);
    at::Tensor out = st.contiguous(output, true);
    sameTypeAndCount(out, in, count(in) * static_cast<std::size_t>(size_), "_allgather_base output");
    return start(c10d::OpType::_ALLGATHER_BASE, {output}, std::move(st), [&](const CallOptions& o) {
      return comm().allgatherAsync(in.data_ptr(), out.data_ptr(), count(in), dataTypeOf(in), o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    Staging st = staging();
    at::Tensor in = st.contiguous(single(inputs, "gather"), false);
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor flat;
    std::vector<at::Tensor> outs;
    if (rank_ == root) {
      outs = blocksOf(outputs, in, "gather");
      flat = st.flatten(outs, false);
      st.scatterBack(flat, outs);
    } else if (!outputs.empty() && !outputs[0].empty()) {
      fail("gather: output tensors are given on a rank that is not the root");
    }
    void* recv = flat.defined() ? flat.data_ptr() : nullptr;
    return start(c10d::OpType::GATHER, outs, std::move(st), [&](const CallOptions& o) {
      return comm().gatherAsync(in.data_ptr(), recv, count(in), dataTypeOf(in), root, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    Staging st = staging();
    at::Tensor out = st.contiguous(single(outputs, "scatter"), true);
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor flat;
    if (rank_ == root) {
      flat = st.flatten(blocksOf(inputs, out, "scatter"), true);
    } else if (!inputs.empty() && !inputs[0].empty()) {
      fail("scatter: input tensors are given on a rank that is not the root");
    }
    const void* send = flat.defined() ? flat.data_ptr() : nullptr;
    return start(c10d::OpType::SCATTER, outputs, std::move(st), [&](const CallOptions& o) {
      return comm().scatterAsync(send, out.data_ptr(), count(out), dataTypeOf(out), root, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    Staging st = staging();
    at::Tensor out = st.contiguous(single(outputs, "reduce_scatter"), true);
    at::Tensor flat = st.flatten(blocksOf(inputs, out, "reduce_scatter"), true);
    const ReduceOp op = reduceOpOf(opts.reduceOp);
    return start(c10d::OpType::REDUCE_SCATTER, outputs, std::move(st), [&](const CallOptions& o) {
      return comm().reduceScatterAsync(flat.data_ptr(), out.data_ptr(), count(out), dataTypeOf(out), op, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    Staging st = staging();
    at::Tensor in = st.contiguous(input, false);
    at::Tensor out = st.contiguous(output, true);
    sameTypeAndCount(in, out, count(out) * static_cast<std::size_t>(size_), "_reduce_scatter_base input");
    const ReduceOp op = reduceOpOf(opts.reduceOp);
    return start(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, std::move(st), [&](const CallOptions& o) {
      return comm().reduceScatterAsync(in.data_ptr(), out.data_ptr(), count(out), dataTypeOf(out), op, o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<std::int64_t>& outputSplits,
                                               std::vector<std::int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override {
    Staging st = staging();
    at::Tensor in = st.contiguous(input, false);
    at::Tensor out = st.contiguous(output, true);
    if (out.scalar_type() != in.scalar_type()) fail("alltoall_base: input and output dtypes differ");
    if (outputSplits.empty() && inputSplits.empty()) {
      if (in.numel() % size_ != 0 || out.numel() != in.numel()) {
        fail("alltoall_base: the input (" + std::to_string(in.numel()) + " elements) must split "
             "into " + std::to_string(size_) + " equal blocks and equal the output (" +
             std::to_string(out.numel()) + ")");
      }
      const std::size_t n = count(in) / static_cast<std::size_t>(size_);
      return start(c10d::OpType::ALLTOALL_BASE, {output}, std::move(st), [&](const CallOptions& o) {
        return comm().alltoallAsync(in.data_ptr(), out.data_ptr(), n, dataTypeOf(in), o);
      }, opts.timeout);
    }
    const auto [sc, sd] = splitsToCounts(inputSplits, in, "input");
    const auto [rc, rd] = splitsToCounts(outputSplits, out, "output");
    return start(c10d::OpType::ALLTOALL_BASE, {output}, std::move(st), [&](const CallOptions& o) {
      return comm().alltoallvAsync(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, dataTypeOf(in), o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    if (inputs.size() != static_cast<std::size_t>(size_) || outputs.size() != inputs.size())
      fail("alltoall takes one input and one output tensor per rank");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      checkCpu(inputs[i], "alltoall input");
      checkCpu(outputs[i], "alltoall output");
      if (inputs[i].scalar_type() != inputs[0].scalar_type() ||
          outputs[i].scalar_type() != inputs[0].scalar_type())
        fail("alltoall of tensors of different dtypes");
    }
    Staging st = staging();
    at::Tensor in = st.flatten(inputs, true);
    at::Tensor out = st.flatten(outputs, false);
    st.scatterBack(out, outputs);
    std::vector<std::size_t> sc, sd, rc, rd;
    std::size_t s = 0, r = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      sc.push_back(count(inputs[i]));
      sd.push_back(s);
      s += sc.back();
      rc.push_back(count(outputs[i]));
      rd.push_back(r);
      r += rc.back();
    }
    return start(c10d::OpType::ALLTOALL, outputs, std::move(st), [&](const CallOptions& o) {
      return comm().alltoallvAsync(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, dataTypeOf(in), o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    return start(c10d::OpType::BARRIER, {}, staging(), [&](const CallOptions& o) {
      return comm().barrierAsync(o);
    }, opts.timeout);
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    Staging st = staging();
    at::Tensor t = st.contiguous(single(tensors, "send"), false);
    return start(c10d::OpType::SEND, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().sendAsync(t.data_ptr(), count(t), dataTypeOf(t), dst, tag, o);
    }, c10d::kUnsetTimeout);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    Staging st = staging();
    at::Tensor t = st.contiguous(single(tensors, "recv"), true);
    return start(c10d::OpType::RECV, tensors, std::move(st), [&](const CallOptions& o) {
      return comm().recvAsync(t.data_ptr(), count(t), dataTypeOf(t), src, tag, o);
    }, c10d::kUnsetTimeout);
  }

  // A Work whose Future was asked for is completed by this thread if nobody waits on it
  // (DDP waits on the Future, never on the Work).
  void follow(c10::intrusive_ptr<TuttiWork> work) {
    std::lock_guard<std::mutex> lock(followMutex_);
    if (!completer_.joinable()) completer_ = std::thread([this] { completerLoop(); });
    followed_.push_back(std::move(work));
    followCv_.notify_one();
  }

 private:
  Communicator& comm() { return *comm_; }
  Staging staging() const { return Staging(pool_); }

  template <typename Call>
  c10::intrusive_ptr<c10d::Work> start(c10d::OpType type, std::vector<at::Tensor> outputs,
                                       Staging staging, Call&& call, Ms timeout) {
    CallOptions o;
    if (timeout != c10d::kUnsetTimeout) o.timeout = timeout;
    tutti::Work w = call(o);
    auto work = c10::make_intrusive<TuttiWork>(rank_, type, std::move(w), std::move(outputs),
                                               std::move(staging));
    work->owner_ = this;
    return work;
  }

  // The per-rank blocks of a list argument: `size` tensors shaped like `like`.
  const std::vector<at::Tensor>& blocksOf(const std::vector<std::vector<at::Tensor>>& lists,
                                          const at::Tensor& like, const char* op) const {
    if (lists.size() != 1 || lists[0].size() != static_cast<std::size_t>(size_)) {
      fail(std::string(op) + " takes one list of " + std::to_string(size_) + " tensors");
    }
    for (const auto& t : lists[0]) {
      checkCpu(t, op);
      sameTypeAndCount(t, like, count(like), op);
    }
    return lists[0];
  }

  static void sameTypeAndCount(const at::Tensor& t, const at::Tensor& like, std::size_t n,
                               const std::string& what) {
    if (t.scalar_type() != like.scalar_type())
      fail(what + ": tensors of " + c10::toString(t.scalar_type()) + " and " + c10::toString(like.scalar_type()));
    if (count(t) != n)
      fail(what + " holds " + std::to_string(t.numel()) + " elements, needs " + std::to_string(n));
  }

  // Split sizes (rows of dim 0) as element counts and packed displacements.
  std::pair<std::vector<std::size_t>, std::vector<std::size_t>> splitsToCounts(
      const std::vector<std::int64_t>& splits, const at::Tensor& t, const char* what) const {
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::size_t perRow = rows == 0 ? 0 : count(t) / static_cast<std::size_t>(rows);
    std::vector<std::size_t> counts, displs;
    std::size_t at = 0;
    if (splits.empty()) {
      if (rows % size_ != 0) fail(std::string("alltoall_base: the ") + what + "'s rows do not split evenly");
      for (int i = 0; i < size_; ++i) {
        counts.push_back(static_cast<std::size_t>(rows / size_) * perRow);
        displs.push_back(at);
        at += counts.back();
      }
      return {counts, displs};
    }
    if (splits.size() != static_cast<std::size_t>(size_))
      fail(std::string("alltoall_base: ") + what + " split sizes need one entry per rank");
    std::int64_t total = 0;
    for (std::int64_t s : splits) {
      if (s < 0) fail(std::string("alltoall_base: a negative ") + what + " split size");
      counts.push_back(static_cast<std::size_t>(s) * perRow);
      displs.push_back(at);
      at += counts.back();
      total += s;
    }
    if (total != rows)
      fail(std::string("alltoall_base: the ") + what + " split sizes add up to " + std::to_string(total) +
           " rows, the tensor has " + std::to_string(rows));
    return {counts, displs};
  }

  void completerLoop() {
    for (;;) {
      c10::intrusive_ptr<TuttiWork> work;
      {
        std::unique_lock<std::mutex> lock(followMutex_);
        followCv_.wait(lock, [&] { return stopping_ || !followed_.empty(); });
        if (followed_.empty()) return;  // stopping, nothing left
        work = std::move(followed_.front());
        followed_.pop_front();
      }
      work->drive();  // bounded by the op's own deadline
    }
  }

  void stopCompleter() {
    {
      std::lock_guard<std::mutex> lock(followMutex_);
      stopping_ = true;
      followCv_.notify_one();
    }
    if (completer_.joinable()) withoutGil([&] { completer_.join(); });
  }

  std::optional<Communicator> comm_;
  std::shared_ptr<StagingPool> pool_ = std::make_shared<StagingPool>();
  std::mutex followMutex_;
  std::condition_variable followCv_;
  std::deque<c10::intrusive_ptr<TuttiWork>> followed_;
  bool stopping_ = false;
  std::thread completer_;
};

c10::intrusive_ptr<c10::ivalue::Future> TuttiWork::getFuture() {
  bool follow = false;
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!future_) {
      future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
      follow = !completed_;
      if (completed_) settle(future_);
    }
    future = future_;
  }
  if (follow) owner_->follow(c10::intrusive_ptr<TuttiWork>::reclaim_copy(this));
  return future;
}

}  // namespace
}  // namespace tutti::torchglue

PYBIND11_MODULE(_tutti_torch, m) {
  using tutti::torchglue::ProcessGroupTutti;
  m.doc() = "The torch.distributed backend 'tutti' (import tutti.torch to register it).";
  py::module_::import("torch.distributed");  // ProcessGroup's Python type, our base
  py::class_<ProcessGroupTutti, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupTutti>>(
      m, "ProcessGroupTutti")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"));
  // For bench/torch: the glue's own cost, without Python's. Seconds per call of
  // allreduce(tensors)->wait() from C++, n calls (every rank must make the same n calls).
  m.def(
      "_time_allreduce",
      [](const c10::intrusive_ptr<ProcessGroupTutti>& pg, at::Tensor t, int n) {
        std::vector<at::Tensor> tensors{std::move(t)};
        py::gil_scoped_release release;
        const auto start = std::chrono::steady_clock::now();
        const c10d::AllreduceOptions opts;
        for (int i = 0; i < n; ++i) pg->allreduce(tensors, opts)->wait();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / n;
      },
      py::arg("pg"), py::arg("tensor"), py::arg("n"));
}
