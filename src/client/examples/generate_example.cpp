// plimsoll_client_example: one generation, one stream and a batch of prompts
// against a server (usage: plimsoll_client_example http://127.0.0.1:8080).
#include <cstdio>
#include <string>
#include <vector>

#include "client/client.h"

using namespace plimsoll::client;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "http://127.0.0.1:8080";
  Client client(url);
  GenerateParams params;
  params.max_new_tokens = 32;

  ClientResult<Generation> one = client.generate("Once upon a time", params);
  if (!one) {
    std::fprintf(stderr, "generate: %s\n", one.error().describe().c_str());
    return 1;
  }
  std::printf("generate: %s\n", one->text.c_str());

  ClientResult<Generation> streamed = client.generate_stream("Once upon a time", params, [](const StreamToken& t) {
    std::printf("%s", t.text.c_str());
    std::fflush(stdout);
    return true;  // false stops the stream
  });
  std::printf("\nstream: %s\n", streamed ? "done" : streamed.error().describe().c_str());

  std::vector<std::string> prompts;
  for (int i = 0; i < 100; ++i) prompts.push_back("Story number " + std::to_string(i) + ":");
  BatchOptions options;
  options.parallel = 4;  // chunks of the server's safe_client_batch_size, 4 at a time
  BatchResult batch = client.generate_batch(prompts, params, options);
  for (size_t i = 0; i < batch.items.size(); ++i) {
    const ClientResult<Generation>& item = batch.items[i];
    std::printf("%zu: %s\n", i, item ? item->text.c_str() : item.error().describe().c_str());
  }
  std::printf("chunk size %lld, %lld retries, %lld failed\n", static_cast<long long>(batch.stats.chunk_size),
              static_cast<long long>(batch.stats.retries), static_cast<long long>(batch.stats.failed));
  return batch.stats.failed == 0 ? 0 : 1;
}
