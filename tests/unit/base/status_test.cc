#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/macros.h"
#include "tutti/status.h"

namespace tutti {
namespace {

Status failIfNegative(int x) {
  TUTTI_CHECK_ARG(x >= 0, "x must be non-negative, got %d", x);
  return Status::Ok();
}

Result<int> doubled(int x) {
  TUTTI_RETURN_IF_ERROR(failIfNegative(x));
  return 2 * x;
}

Result<int> quadrupled(int x) {
  TUTTI_ASSIGN_OR_RETURN(int d, doubled(x));
  return 2 * d;
}

TEST(Status, OkAndError) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.toString(), "ok");
  Status err(ErrorCode::kPeerFailure, "rank 2 died", 2);
  EXPECT_FALSE(err.ok());
  EXPECT_EQ(err.peerRank(), 2);
  EXPECT_EQ(err.toString(), "peer failure: rank 2 died");
  EXPECT_EQ(err.withContext("allreduce #3").message(), "allreduce #3: rank 2 died");
  EXPECT_EQ(err.withContext("x").peerRank(), 2);
}

TEST(Status, Macros) {
  EXPECT_EQ(quadrupled(3).value(), 12);
  auto bad = quadrupled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "x must be non-negative, got -1");
}

TEST(Result, HoldsMoveOnlyValuesAndCopies) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
  Result<std::string> s(std::string("abc"));
  Result<std::string> copy = s;
  EXPECT_EQ(*copy, "abc");
  Result<std::string> e(Status(ErrorCode::kTimeout, "late"));
  copy = e;
  EXPECT_FALSE(copy.ok());
  EXPECT_EQ(copy.status().code(), ErrorCode::kTimeout);
}

TEST(Result, OkStatusIsAnInternalError) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace tutti
