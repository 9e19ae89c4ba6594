// transport_bench's batch rows (issue 50): Morphology batches (the API's `inputs`) of u8 tiles,
// dilated 3x3, under load, against the echo server moving the same bytes: a message the size of
// the batch's request each way. Images/s and calls/s of both, and cuimg's latencies and server
// times. Batch results are checked by size (every entry OK, each its tile's bytes): one reply in
// check_every parsed, the others' lengths equal to a parsed good one's.
#ifndef CUIMG_BENCHMARKS_ECHO_BATCH_TRANSPORT_H_
#define CUIMG_BENCHMARKS_ECHO_BATCH_TRANSPORT_H_

#include <grpcpp/generic/generic_stub.h>

#include <memory>
#include <string>
#include <vector>

namespace cuimg::bench {

// One row: `count` tiles of `width` x `height` u8 per call.
struct BatchShape {
  int width = 64;
  int height = 64;
  int count = 256;
};

struct BatchTransportRun {
  std::vector<grpc::GenericStub*> echo;     // one per connection
  std::vector<grpc::GenericStub*> imaging;  // one per connection, as many as `echo`
  std::string label;                        // names the transport settings in the rows
  std::vector<BatchShape> shapes;           // a row each
  int concurrency = 16;                     // calls in flight
  double seconds = 5;                       // per measurement, after 1 s of warm-up
  // Measurements of each server a row, in turns (echo first in odd rounds, cuimg in even ones),
  // so that a drift of the machine's speed during the run weighs on both alike.
  int rounds = 1;
  // cuimg's replies parsed and checked entry by entry: one in check_every (the first always); the
  // others are checked by length.
  int check_every = 16;
};

// Parses "64x64x256,256x256x64" (W x H x tiles per call); entries that do not parse are skipped.
std::vector<BatchShape> ParseBatchShapes(const std::string& list);

// Measures and prints (Report) one JSON line per shape: the rounds' mean calls/s of each server,
// their ratio, each round's ratio, and cuimg's latencies and server times in its last round.
void MeasureBatchTransport(const BatchTransportRun& run);

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_ECHO_BATCH_TRANSPORT_H_
