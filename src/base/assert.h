#pragma once
// Assertions catch tutti's own bugs, never users' mistakes (those are Status values).
// TUTTI_ASSERT is always on, in every build; TUTTI_DASSERT is for hot loops and only
// active in debug builds.

#include <sstream>
#include <string>

namespace tutti::detail {

[[noreturn]] void assertFailed(const char* file, int line, const char* expr,
                               const std::string& detail);

template <typename A, typename B>
[[noreturn]] void assertCmpFailed(const char* file, int line, const char* expr, const A& a,
                                  const B& b) {
  std::ostringstream os;
  os << "lhs=" << a << " rhs=" << b;
  assertFailed(file, line, expr, os.str());
}

}  // namespace tutti::detail

#define TUTTI_ASSERT(cond)                                                  \
  do {                                                                      \
    if (__builtin_expect(!(cond), 0))                                       \
      ::tutti::detail::assertFailed(__FILE__, __LINE__, #cond, "");         \
  } while (0)

/// TUTTI_ASSERT_CMP(a, <=, b): like TUTTI_ASSERT but prints both operands on failure.
#define TUTTI_ASSERT_CMP(a, op, b)                                                    \
  do {                                                                                \
    const auto& tutti_a_ = (a);                                                       \
    const auto& tutti_b_ = (b);                                                       \
    if (__builtin_expect(!(tutti_a_ op tutti_b_), 0))                                 \
      ::tutti::detail::assertCmpFailed(__FILE__, __LINE__, #a " " #op " " #b, tutti_a_, \
                                       tutti_b_);                                     \
  } while (0)

#ifdef NDEBUG
#define TUTTI_DASSERT(cond) \
  do {                      \
  } while (0)
#else
#define TUTTI_DASSERT(cond) TUTTI_ASSERT(cond)
#endif
