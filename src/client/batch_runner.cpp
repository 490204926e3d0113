// The chunk runner: a window of chunks handed to worker threads, the per-chunk
// retry loop (logged with spdlog), item-by-item retry of refused chunks.
#include "client/batch_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace plimsoll::client {
namespace {

using Clock = std::chrono::steady_clock;

// Errors that may belong to one item of a chunk: worth finding which.
bool item_error(const ClientError& e) {
  return e.kind == ErrorKind::kValidation || e.kind == ErrorKind::kGeneration;
}

int64_t ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

class ChunkRunner {
 public:
  ChunkRunner(size_t item_count, const std::vector<Chunk>& chunks, const ChunkSender& send,
              const BatchOptions& options)
      : chunks_(chunks), send_(send), options_(options), results_(item_count), done_(chunks.size(), false) {
    const int64_t parallel = std::max<int64_t>(options.parallel, 1);
    window_ = static_cast<size_t>(options.window_chunks > 0 ? options.window_chunks : 4 * parallel);
    window_ = std::max(window_, static_cast<size_t>(parallel));
  }

  BatchResult run() {
    const size_t workers = std::min(chunks_.size(), static_cast<size_t>(std::max<int64_t>(options_.parallel, 1)));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < workers; ++i) threads.emplace_back([this] { work(); });
    for (std::thread& t : threads) t.join();
    BatchResult out;
    out.stats = stats_;
    out.stats.chunks = static_cast<int64_t>(chunks_.size());
    for (std::optional<ItemResult>& r : results_) {
      out.items.push_back(r ? std::move(*r) : ItemResult(make_client_error(ErrorKind::kInput, "not run")));
    }
    return out;
  }

 private:
  void work() {
    std::mt19937_64 rng(std::random_device{}());
    while (std::optional<size_t> c = next_chunk()) {
      run_chunk(chunks_[*c], rng);
      finish_chunk(*c);
    }
  }

  std::optional<size_t> next_chunk() {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    queue_cv_.wait(lock, [&] { return next_ >= chunks_.size() || next_ < first_unfinished_ + window_; });
    if (next_ >= chunks_.size()) return std::nullopt;
    return next_++;
  }

  void finish_chunk(size_t c) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    done_[c] = true;
    while (first_unfinished_ < chunks_.size() && done_[first_unfinished_]) ++first_unfinished_;
    queue_cv_.notify_all();
  }

  void run_chunk(const Chunk& chunk, std::mt19937_64& rng) {
    const Clock::time_point start = Clock::now();
    for (int64_t retries = 0;; ++retries) {
      ClientResult<GenerationList> reply = send_(chunk);
      count_request();
      if (reply.ok()) return deliver_all(chunk, std::move(reply).value());
      const ClientError& error = reply.error();
      if (chunk.size() > 1 && item_error(error)) return run_one_by_one(chunk, error, rng);
      std::optional<int64_t> wait_ms = retry_wait_ms(options_.retry, error, retries, ms_since(start), rng);
      if (!wait_ms) return fail_all(chunk, error, retries);
      note_retry(RetryNote{chunk.front(), chunk.size(), error, *wait_ms, retries + 1});
      std::this_thread::sleep_for(std::chrono::milliseconds(*wait_ms));
    }
  }

  void run_one_by_one(const Chunk& chunk, const ClientError& error, std::mt19937_64& rng) {
    spdlog::warn("items {}..{}: {}; sending them one by one to find the failing item", chunk.front(),
                 chunk.back(), error.describe());
    for (size_t index : chunk) run_chunk(Chunk{index}, rng);
  }

  void note_retry(const RetryNote& note) {
    spdlog::warn("items {}..{}: {}; retry {} in {} ms", note.first_index, note.first_index + note.items - 1,
                 note.error.describe(), note.retry, note.wait_ms);
    std::lock_guard<std::mutex> lock(deliver_mutex_);
    ++stats_.retries;
    if (options_.on_retry) options_.on_retry(note);
  }

  void count_request() {
    std::lock_guard<std::mutex> lock(deliver_mutex_);
    ++stats_.requests;
  }

  void fail_all(const Chunk& chunk, const ClientError& error, int64_t retries) {
    if (retries > 0) spdlog::error("items {}..{}: giving up after {} retries: {}", chunk.front(), chunk.back(),
                                   retries, error.describe());
    for (size_t index : chunk) deliver(index, ItemResult(error));
  }

  void deliver_all(const Chunk& chunk, GenerationList list) {
    {
      std::lock_guard<std::mutex> lock(deliver_mutex_);
      stats_.generated_tokens += list.generated_tokens;
      if (options_.on_tokens) options_.on_tokens(list.generated_tokens);
    }
    for (size_t i = 0; i < chunk.size(); ++i) deliver(chunk[i], ItemResult(std::move(list.items[i])));
  }

  void deliver(size_t index, ItemResult result) {
    std::lock_guard<std::mutex> lock(deliver_mutex_);
    if (!result.ok()) ++stats_.failed;
    if (options_.on_item) options_.on_item(index, result);
    results_[index] = std::move(result);
  }

  const std::vector<Chunk>& chunks_;
  const ChunkSender& send_;
  const BatchOptions& options_;

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  size_t next_ = 0;
  size_t first_unfinished_ = 0;
  size_t window_ = 0;

  std::mutex deliver_mutex_;
  std::vector<std::optional<ItemResult>> results_;
  std::vector<bool> done_;
  BatchStats stats_;
};

}  // namespace

BatchResult run_chunks(size_t item_count, const std::vector<Chunk>& chunks, const ChunkSender& send,
                       const BatchOptions& options) {
  ChunkRunner runner(item_count, chunks, send, options);
  return runner.run();
}

}  // namespace plimsoll::client
