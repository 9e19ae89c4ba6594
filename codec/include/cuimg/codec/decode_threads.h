// Threads that decoding borrows to decode one image in parallel strips, only while they are idle.
#ifndef CUIMG_CODEC_DECODE_THREADS_H_
#define CUIMG_CODEC_DECODE_THREADS_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cuimg {

// A fixed set of worker threads. A decode reserves idle ones (never waits for a busy one), so
// under load every image decodes on its caller's thread alone and the strips' duplicated work
// never competes with other requests; on an idle server one image uses several cores.
class DecodeThreads {
 public:
  // `threads` >= 0 workers; 0 makes every decode serial.
  explicit DecodeThreads(int threads);
  ~DecodeThreads();  // Waits for running tasks, then joins.
  DecodeThreads(const DecodeThreads&) = delete;
  DecodeThreads& operator=(const DecodeThreads&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  // Runs task(i, n) for i = 0 .. n-1 concurrently and returns when all have finished: i = 0 on
  // the calling thread, the others on idle workers reserved for the call. n is `wanted` lowered
  // to 1 + the workers that were idle (n = 1: the caller alone). Returns n.
  int Run(int wanted, const std::function<void(int index, int n)>& task);

 private:
  void Work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  int idle_ = 0;  // workers not reserved by a call
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace cuimg

#endif  // CUIMG_CODEC_DECODE_THREADS_H_
