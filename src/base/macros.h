#pragma once
// The three error-propagation macros of tutti (STYLE.md 3.5). There are no others.

#include "base/strings.h"
#include "tutti/status.h"

#define TUTTI_CONCAT_INNER(a, b) a##b
#define TUTTI_CONCAT(a, b) TUTTI_CONCAT_INNER(a, b)

/// Evaluates `expr` (a Status) and returns it from the enclosing function if it is not OK.
#define TUTTI_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::tutti::Status tutti_status_ = (expr);          \
    if (!tutti_status_.ok()) return tutti_status_;   \
  } while (0)

/// `TUTTI_ASSIGN_OR_RETURN(auto x, f())`: evaluates a Result<T>; on error returns its
/// Status, otherwise moves the value into `lhs`.
#define TUTTI_ASSIGN_OR_RETURN(lhs, expr) \
  TUTTI_ASSIGN_OR_RETURN_IMPL(TUTTI_CONCAT(tutti_result_, __LINE__), lhs, expr)
#define TUTTI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

/// Returns kInvalidArgument with a printf-formatted message when `cond` is false.
#define TUTTI_CHECK_ARG(cond, ...)                                                    \
  do {                                                                                \
    if (!(cond))                                                                      \
      return ::tutti::Status(::tutti::ErrorCode::kInvalidArgument,                    \
                             ::tutti::strFormat(__VA_ARGS__));                        \
  } while (0)
