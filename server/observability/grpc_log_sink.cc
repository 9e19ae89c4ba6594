#include "server/observability/grpc_log_sink.h"

#include <grpc/support/log.h>

#include "server/observability/log.h"

namespace cuimg {
namespace {

void WriteGrpcLine(gpr_log_func_args* args) {
  LogLevel level = LogLevel::kError;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = LogLevel::kDebug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = LogLevel::kInfo;
  if (!LogEnabled(level)) return;
  LogEvent(level, "grpc",
           {{"file", args->file != nullptr ? args->file : "-"},
            {"line", args->line},
            {"message", args->message != nullptr ? args->message : ""}});
}

}  // namespace

void RouteGrpcLogsThroughLog() { gpr_set_log_function(WriteGrpcLine); }

}  // namespace cuimg
