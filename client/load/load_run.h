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
  // SIGINT or SIGTERM when one stopped the run, else 0.
  int stopped_by = 0;
  // Stopped by a signal: seconds from the run's start to the signal.
  double stopped_at_s = 0;
  // Stopped by a signal: calls still in flight after kStopGrace, cancelled and not recorded.
  std::int64_t abandoned = 0;
};

// How long a stopped run waits for its calls in flight before cancelling them.
inline constexpr double kStopGraceSeconds = 5;

// Drives `rpc`; prints a progress line on stderr each second when `command.progress` (its "in
// flight" never above --concurrency in the closed loop). Returns once every call has ended and
// every gRPC object it made (calls, stubs, channels) is released, all on the calling thread.
// SIGINT or SIGTERM during the run stops it: no call is issued after the signal, the calls in
// flight get kStopGraceSeconds to end, then are cancelled (and left out of the records), and the
// result says so; the handlers are the process's previous ones again when this returns, and a
// second signal meanwhile acts as it would have without them (it ends the process).
LoadRunResult RunLoadCalls(const ConnectionOptions& connection, const LoadCommand& command,
                           const LoadRpc& rpc);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_RUN_H_
