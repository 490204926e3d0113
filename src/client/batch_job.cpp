// run_batch_job: resume from the checkpoint, plan chunks for the remaining
// items, send them by route, write each result line in order, summarize.
#include "client/batch_job.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "client/batch_runner.h"
#include "client/checkpoint.h"
#include "client/chunking.h"
#include "client/client.h"
#include "client/progress.h"

namespace plimsoll::client {
namespace {

// The complete lines of the output must be this input's first items.
ClientStatus check_resume(const CheckpointScan& scan, const std::vector<JobItem>& items, const std::string& path) {
  if (scan.complete_lines > items.size()) {
    return make_client_error(ErrorKind::kInput, path + " holds " + std::to_string(scan.complete_lines) +
                                                    " results but the input has " + std::to_string(items.size()) +
                                                    " items: is it the output of another input?");
  }
  for (size_t i = 0; i < scan.complete_lines; ++i) {
    if (scan.ids[i] != items[i].id) {
      return make_client_error(ErrorKind::kInput, path + " line " + std::to_string(i + 1) + " has id " +
                                                      scan.ids[i].dump() + " but input item " + std::to_string(i) +
                                                      " has id " + items[i].id.dump() +
                                                      ": is it the output of another input?");
    }
  }
  return Done{};
}

ClientResult<size_t> resume_point(const std::vector<JobItem>& items, const std::string& path) {
  ClientResult<CheckpointScan> scan = scan_checkpoint(path);
  if (!scan) return scan.error();
  ClientStatus matches = check_resume(*scan, items, path);
  if (!matches) return matches.error();
  if (scan->torn()) {
    spdlog::warn("{}: dropping a torn last line ({} bytes) left by an interrupted run", path,
                 scan->file_bytes - scan->valid_bytes);
    ClientStatus cut = truncate_checkpoint(path, scan->valid_bytes);
    if (!cut) return cut.error();
  }
  return scan->complete_lines;
}

// The item's parameters, with the job's priority unless they give one.
nlohmann::json with_priority(const nlohmann::json& parameters, int32_t priority) {
  nlohmann::json out = parameters.is_object() ? parameters : nlohmann::json::object();
  if (!out.contains("priority")) out["priority"] = priority;
  return out;
}

ChunkSender make_sender(Client& client, Route route, const std::vector<JobItem>& items, int32_t priority) {
  return [&client, route, &items, priority](const Chunk& chunk) -> ClientResult<GenerationList> {
    const JobItem& head = items[chunk.front()];
    if (route == Route::kChat) {
      OpenAiParams params;
      params.extra = with_priority(head.parameters, priority);
      ClientResult<Generation> one = client.chat(head.messages, params);
      if (!one) return one.error();
      return GenerationList{{*one}, one->generated_tokens.value_or(0)};
    }
    std::vector<std::string> prompts;
    for (size_t index : chunk) prompts.push_back(items[index].prompt);
    if (route == Route::kCompletions) {
      OpenAiParams params;
      params.extra = with_priority(head.parameters, priority);
      return client.completions_list(prompts, params);
    }
    GenerateParams params;
    params.extra = with_priority(head.parameters, priority);
    return client.generate_list(prompts, params);
  };
}

// Records one finished item: its line, the summary and the progress line.
class JobSink {
 public:
  JobSink(const std::vector<JobItem>& items, OrderedAppender& out, ProgressMeter& progress, JobSummary& summary)
      : items_(items), out_(out), progress_(progress), summary_(summary) {}

  void item(size_t index, const ItemResult& result) {
    ClientStatus written = out_.complete(index, result_line(index, items_[index], result));
    if (!written && !write_error_) write_error_ = written.error();
    progress_.item_done(result.ok());
    if (result.ok()) {
      ++summary_.succeeded;
      return;
    }
    ++summary_.failed;
    ++summary_.failures_by_kind[error_kind_name(result.error().kind)];
    if (summary_.first_failures.size() < 10) summary_.first_failures.push_back({index, items_[index].id, result.error()});
  }
  const std::optional<ClientError>& write_error() const { return write_error_; }

 private:
  const std::vector<JobItem>& items_;
  OrderedAppender& out_;
  ProgressMeter& progress_;
  JobSummary& summary_;
  std::optional<ClientError> write_error_;
};

}  // namespace

ClientResult<JobSummary> run_batch_job(const JobOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ClientResult<std::vector<JobItem>> items = read_job_items(options.input_path, options.route);
  if (!items) return items.error();
  ClientResult<size_t> first = resume_point(*items, options.output_path);
  if (!first) return first.error();
  JobSummary summary;
  summary.total = items->size();
  summary.already_done = *first;
  ClientResult<std::unique_ptr<OrderedAppender>> out = OrderedAppender::open(options.output_path, *first);
  if (!out) return out.error();
  if (*first == items->size()) return summary;

  Client client(options.url, options.client);
  ClientResult<int64_t> chunk_size = client.plan_chunk_size(options.chunk_size, options.retry);
  if (!chunk_size) return chunk_size.error();
  summary.chunk_size = *chunk_size;

  ProgressMeter progress(items->size(), *first, options.progress);
  JobSink sink(*items, **out, progress, summary);
  std::vector<size_t> pending;
  for (size_t i = *first; i < items->size(); ++i) {
    const JobItem& item = (*items)[i];
    if (item.invalid) sink.item(i, ItemResult(*item.invalid));
    else pending.push_back(i);
  }
  auto group_key = [&](size_t i) {
    return options.route == Route::kChat ? std::to_string(i) : (*items)[i].parameters.dump();
  };
  std::vector<Chunk> chunks = plan_chunks(pending, *chunk_size, group_key);

  BatchOptions batch;
  batch.parallel = options.parallel;
  batch.retry = options.retry;
  batch.on_item = [&](size_t index, const ItemResult& result) { sink.item(index, result); };
  batch.on_retry = [&](const RetryNote&) { progress.add_retry(); };
  batch.on_tokens = [&](int64_t tokens) { progress.add_tokens(tokens); };
  BatchResult result = run_chunks(items->size(), chunks, make_sender(client, options.route, *items, options.priority), batch);
  progress.finish();

  summary.retries = result.stats.retries;
  summary.generated_tokens = result.stats.generated_tokens;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (sink.write_error()) return *sink.write_error();
  return summary;
}

std::string format_summary(const JobSummary& s) {
  char line[256];
  std::snprintf(line, sizeof line,
                "batch: %zu items: %zu already in the output, %zu done now, %zu failed; %.1f s, %lld tokens "
                "(%.1f tokens/s), %lld retries, chunk size %lld\n",
                s.total, s.already_done, s.succeeded, s.failed, s.seconds, static_cast<long long>(s.generated_tokens),
                s.seconds > 0 ? static_cast<double>(s.generated_tokens) / s.seconds : 0.0,
                static_cast<long long>(s.retries), static_cast<long long>(s.chunk_size));
  std::string out = line;
  for (const auto& [kind, count] : s.failures_by_kind) {
    out += "  failed: " + std::to_string(count) + " x " + kind + "\n";
  }
  for (const FailureNote& f : s.first_failures) {
    out += "  item " + std::to_string(f.index);
    if (!f.id.is_null()) out += " (id " + f.id.dump() + ")";
    out += ": " + f.error.describe() + "\n";
  }
  return out;
}

}  // namespace plimsoll::client
