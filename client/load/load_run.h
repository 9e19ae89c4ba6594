// The calls of `cuimg load`: a closed loop of --concurrency calls in flight or an open loop at
// --rate calls/s, for --duration seconds (or --requests calls) after --warmup, over --channels.
// Calls that start during the warm-up are recorded as such (CallRecord::warmup) and the run goes
// on past it: --requests counts only the calls after it.
#ifndef CUIMG_CLIENT_LOAD_RUN_H_
#define CUIMG_CLIENT_LOAD_RUN_H_

#include <vector>

#include "client/commands/commands.h"
#include "client/connection.h"
#include "client/load/load_rpc.h"
#include "client/load/load_stats.h"

namespace cuimg {

struct LoadRunResult {
  std::vector<CallRecord> records;
  // From the end of the warm-up to the last call's end.
  double measured_seconds = 0;
};

// Drives `rpc`; prints a progress line on stderr each second when `command.progress`. Returns
// once every call has ended and every gRPC object it made (calls, stubs, channels) is released,
// all on the calling thread.
LoadRunResult RunLoadCalls(const ConnectionOptions& connection, const LoadCommand& command,
                           const LoadRpc& rpc);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_RUN_H_
