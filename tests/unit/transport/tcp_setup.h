#pragma once
// TCP transports connected over loopback as threads of this process, rendezvousing through
// an in-memory store, for the TCP transport's tests and the conformance suite.

#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "transport/tcp/tcp_transport.h"

namespace tutti::tcp {

inline constexpr std::uint64_t kUid = 0xabcdef;

/// Every rank's transport, made by one thread per rank, with `streams` connections per pair
/// (TUTTI_TCP_STREAMS; 0: auto, one over loopback).
inline std::vector<std::unique_ptr<TcpTransport>> connectAll(
    int size, std::shared_ptr<Store> store, std::uint64_t maxUnexpected = 64u << 20,
    int streams = 0) {
  std::vector<std::unique_ptr<TcpTransport>> out(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  std::vector<Status> errors(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      TcpTransport::Options o;
      o.rank = r;
      o.size = size;
      o.commUid = kUid;
      o.maxUnexpectedBytes = maxUnexpected;
      o.streams = streams;
      o.deadline = Deadline::afterSeconds(30);
      auto t = TcpTransport::create(*store, "t/", o);
      if (t.ok()) out[static_cast<std::size_t>(r)] = std::move(t).value();
      else errors[static_cast<std::size_t>(r)] = t.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_TRUE(e.ok()) << e.toString();
  return out;
}

}  // namespace tutti::tcp
