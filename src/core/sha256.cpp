// SHA-256 over OpenSSL's EVP interface.
#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace plimsoll {
namespace {

using Ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string hex_of(Ctx& ctx) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kDigits[md[i] >> 4];
    out += kDigits[md[i] & 15];
  }
  return out;
}

Ctx new_ctx() {
  Ctx ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  return ctx;
}

}  // namespace

Result<std::string> sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, "cannot read " + path + ": " + std::strerror(errno));
  Ctx ctx = new_ctx();
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(ErrorCode::kIo, "cannot read " + path + ": " + std::strerror(errno));
  return hex_of(ctx);
}

std::string sha256_hex(const std::string& bytes) {
  Ctx ctx = new_ctx();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return hex_of(ctx);
}

}  // namespace plimsoll
