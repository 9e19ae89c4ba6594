// Status propagation macros. Abseil 20220623 (Debian 12) lacks absl/status/status_macros.h;
// these have the same shape and go away when it arrives.
#ifndef CUIMG_COMMON_STATUS_MACROS_H_
#define CUIMG_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CUIMG_STATUS_CONCAT_INNER_(a, b) a##b
#define CUIMG_STATUS_CONCAT_(a, b) CUIMG_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define CUIMG_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status cuimg_status_ = (expr);         \
    if (!cuimg_status_.ok()) return cuimg_status_; \
  } while (0)

// `CUIMG_ASSIGN_OR_RETURN(auto x, MakeX());` assigns the value of an absl::StatusOr or returns
// its error.
#define CUIMG_ASSIGN_OR_RETURN(lhs, rexpr) \
  CUIMG_ASSIGN_OR_RETURN_IMPL_(CUIMG_STATUS_CONCAT_(cuimg_statusor_, __LINE__), lhs, rexpr)

#define CUIMG_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // CUIMG_COMMON_STATUS_MACROS_H_
