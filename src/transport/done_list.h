#pragma once
// DoneList: what a transport's locked pass completed, signalled with one notify once its
// mutex is released. Only the count is kept: each request's state already says it is
// done, and a list would allocate on the path of a call.

#include <cstddef>

namespace tutti {

class TransferRequest;

class DoneList {
 public:
  void add(TransferRequest*) { ++count_; }
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }
  void clear() { count_ = 0; }

 private:
  std::size_t count_ = 0;
};

}  // namespace tutti
