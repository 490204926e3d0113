// The webhook's TLS certificate and key, read from files and read again when
// they change (cert-manager and kubelet rotate them in place), per handshake.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"

typedef struct ssl_st SSL;

namespace plimsoll::webhook {

class CertificateStore {
 public:
  // Fails when the files cannot be read or the key does not match the certificate.
  static Result<std::unique_ptr<CertificateStore>> load(const std::string& cert_path, const std::string& key_path);
  ~CertificateStore();

  // Reads the files again if their modification time or size changed (at most
  // once per check interval); a pair that fails to load keeps the old one.
  void refresh();
  // Puts the current certificate chain and key on a connection being set up.
  bool install(SSL* ssl);
  // Bumped by every successful (re)load.
  int generation() const;

  struct Material;

 private:
  CertificateStore(std::string cert_path, std::string key_path);
  Status reload();

  std::string cert_path_, key_path_;
  mutable std::mutex mu_;
  std::shared_ptr<const Material> material_;
  std::string stamp_;  // mtimes and sizes of both files when last loaded
  std::chrono::steady_clock::time_point last_check_{};
  int generation_ = 0;
};

// The modification times and sizes of two files, "" when either is missing.
std::string file_stamp(const std::string& a, const std::string& b);

}  // namespace plimsoll::webhook
