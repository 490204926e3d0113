// Loads PEM certificate chains and keys with OpenSSL, swaps them atomically on
// change, and installs them on each TLS handshake (SSL_CTX cert callback).
#include "webhook/certificate_store.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <fmt/format.h>

namespace plimsoll::webhook {

struct CertificateStore::Material {
  X509* leaf = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509)* chain = nullptr;
  ~Material() {
    X509_free(leaf);
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
  }
};

namespace {

constexpr auto kCheckInterval = std::chrono::milliseconds(500);

Error tls_error(const std::string& what) {
  const unsigned long code = ERR_get_error();
  char buf[256] = "no detail";
  if (code) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return make_error(ErrorCode::kInvalidFile, fmt::format("{}: {}", what, buf));
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

Result<std::shared_ptr<const CertificateStore::Material>> read_pair(const std::string& cert_path,
                                                                   const std::string& key_path) {
  auto m = std::make_shared<CertificateStore::Material>();
  Bio cert_bio(BIO_new_file(cert_path.c_str(), "r"), BIO_free);
  if (!cert_bio) return tls_error(cert_path);
  m->leaf = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  if (!m->leaf) return tls_error(cert_path + ": no PEM certificate");
  m->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) sk_X509_push(m->chain, extra);
  ERR_clear_error();  // the loop ends on "no start line"
  Bio key_bio(BIO_new_file(key_path.c_str(), "r"), BIO_free);
  if (!key_bio) return tls_error(key_path);
  m->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  if (!m->key) return tls_error(key_path + ": no PEM private key");
  if (X509_check_private_key(m->leaf, m->key) != 1) return tls_error(key_path + " does not match " + cert_path);
  return std::shared_ptr<const CertificateStore::Material>(std::move(m));
}

std::string one_stamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}.{}:{}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size, st.st_ino);
}

}  // namespace

std::string file_stamp(const std::string& a, const std::string& b) {
  const std::string sa = one_stamp(a), sb = one_stamp(b);
  return sa.empty() || sb.empty() ? "" : sa + "|" + sb;
}

CertificateStore::CertificateStore(std::string cert_path, std::string key_path)
    : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}

CertificateStore::~CertificateStore() = default;

Result<std::unique_ptr<CertificateStore>> CertificateStore::load(const std::string& cert_path,
                                                                const std::string& key_path) {
  std::unique_ptr<CertificateStore> store(new CertificateStore(cert_path, key_path));
  PLIMSOLL_TRY(store->reload());
  return store;
}

Status CertificateStore::reload() {
  const std::string stamp = file_stamp(cert_path_, key_path_);
  PLIMSOLL_ASSIGN(auto material, read_pair(cert_path_, key_path_));
  std::lock_guard lock(mu_);
  material_ = std::move(material);
  stamp_ = stamp;
  ++generation_;
  return {};
}

void CertificateStore::refresh() {
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ < kCheckInterval) return;
    last_check_ = now;
    const std::string stamp = file_stamp(cert_path_, key_path_);
    if (stamp.empty() || stamp == stamp_) return;
  }
  const Status s = reload();
  if (s) {
    spdlog::info("webhook: TLS certificate reloaded from {} (generation {})", cert_path_, generation());
  } else {
    spdlog::warn("webhook: TLS certificate change not loaded, keeping the previous one: {}", s.error().message);
    std::lock_guard lock(mu_);
    stamp_ = file_stamp(cert_path_, key_path_);  // do not retry a broken pair until it changes again
  }
}

bool CertificateStore::install(SSL* ssl) {
  std::shared_ptr<const Material> m;
  {
    std::lock_guard lock(mu_);
    m = material_;
  }
  return m && SSL_use_cert_and_key(ssl, m->leaf, m->key, m->chain, 1) == 1;
}

int CertificateStore::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

}  // namespace plimsoll::webhook
