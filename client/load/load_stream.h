// `cuimg load --rpc detect --detect_stream`: the frames go over DetectStream calls instead of
// unary calls, one stream per channel (--channels), each call of the load run being one frame
// (its latency: from the frame's turn to be sent to its result). With the closed loop's
// --concurrency C over K channels, each stream has about C/K frames unanswered.
#ifndef CUIMG_CLIENT_LOAD_STREAM_H_
#define CUIMG_CLIENT_LOAD_STREAM_H_

#include <memory>
#include <vector>

#include "client/load/load_rpc.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {

// The frames are `requests` (calls cycle through them, as the unary run's do). A stream opens on
// a channel's first call and ends (half-close, then its status) when the LoadRpc is destroyed,
// after the run; a stream that fails answers its unanswered frames and later ones on that
// channel with its status.
std::unique_ptr<LoadRpc> MakeDetectStreamLoad(LoadRpc::Payload payload,
                                              std::vector<v1::DetectPedestriansRequest> requests);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_STREAM_H_
