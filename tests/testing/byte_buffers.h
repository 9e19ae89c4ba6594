// gRPC byte buffers for the wire-format tests: a message's bytes cut at random slice boundaries
// (as gRPC may hand a received message over), and a buffer's slices joined back.
#ifndef CUIMG_TESTS_TESTING_BYTE_BUFFERS_H_
#define CUIMG_TESTS_TESTING_BYTE_BUFFERS_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cuimg::testing {

inline grpc::ByteBuffer Sliced(const std::string& bytes, std::mt19937& rng) {
  std::vector<grpc::Slice> slices;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t most = rng() % 2 ? 3 : 9000;
    const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + rng() % most);
    slices.emplace_back(bytes.data() + at, n);
    at += n;
  }
  if (slices.empty()) return grpc::ByteBuffer();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

inline std::string Joined(const grpc::ByteBuffer& wire) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(wire.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_BYTE_BUFFERS_H_
