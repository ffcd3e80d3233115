// A small fixed pool of threads for a conversion's side work (compressing a trace file's chunks). Tasks run in the
// order they were submitted; the submitting thread may run queued tasks itself (run_one), so when the workers fall
// behind it helps instead of waiting.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nsystrace {

class WorkerPool {
 public:
  // Starts `threads` threads, or as many as the system lets it start (possibly none: then every task runs in
  // run_one(), on the caller's thread).
  explicit WorkerPool(int threads);
  // Tasks not yet started are dropped (destroyed unrun); the running ones are waited for; every thread is joined.
  // So when a conversion fails or is interrupted, nothing of it keeps running.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // A task must not throw: it keeps its own errors for whoever collects its result.
  void submit(std::function<void()> task);
  // Runs the oldest queued task on the calling thread; false when none is queued.
  bool run_one();
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace nsystrace
