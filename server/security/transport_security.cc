#include "server/security/transport_security.h"

#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "server/security/auth_processor.h"

namespace cuimg {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view option) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(option, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(option, ": ", path, " holds no PEM block"));
  }
  return text.str();
}

// OK when `key_pem` holds the private key of `cert_pem`'s first certificate. gRPC would only
// say "Invalid private key" and then that it could not bind; one line naming both flags is what
// an operator needs.
absl::Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem) {
  const auto reason = [] {
    const unsigned long error = ERR_get_error();
    ERR_clear_error();
    return error == 0 ? std::string("unknown")
                      : std::string(ERR_reason_error_string(error) ? ERR_reason_error_string(error)
                                                                   : "unknown");
  };
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_cert_file: no certificate could be read (", reason(), ")"));
  }
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  if (key == nullptr) {
    X509_free(cert);
    return absl::InvalidArgumentError(
        absl::StrCat("tls_key_file: no unencrypted private key could be read (", reason(), ")"));
  }
  const bool matches = X509_check_private_key(cert, key) == 1;
  ERR_clear_error();
  EVP_PKEY_free(key);
  X509_free(cert);
  if (!matches) {
    return absl::InvalidArgumentError(
        "tls_key_file: the private key does not belong to the first certificate of "
        "tls_cert_file");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TransportSecurity> MakeTransportSecurity(const SecurityOptions& options) {
  TransportSecurity out;
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return absl::InvalidArgumentError("tls_cert_file, tls_key_file: give both or neither");
  }
  if (!tls) {
    if (!options.tls_client_ca_file.empty() || options.require_client_cert) {
      return absl::InvalidArgumentError(
          "tls_client_ca_file, require_client_cert: client certificates need TLS "
          "(tls_cert_file, tls_key_file)");
    }
    // A token sent in plaintext is a token given away.
    if (!options.auth_tokens_file.empty()) {
      return absl::InvalidArgumentError(
          "auth_tokens_file: bearer tokens need TLS (tls_cert_file, tls_key_file)");
    }
    out.credentials = grpc::InsecureServerCredentials();
    out.description = "transport=plaintext auth=none";
    return out;
  }
  if (options.require_client_cert && options.tls_client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "require_client_cert: needs tls_client_ca_file (the CA client certificates chain to)");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert = ReadPem(options.tls_cert_file, "tls_cert_file");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(options.tls_key_file, "tls_key_file");
  if (!key.ok()) return key.status();
  if (absl::Status match = CheckKeyMatchesCertificate(*cert, *key); !match.ok()) return match;
  pair.cert_chain = *std::move(cert);
  pair.private_key = *std::move(key);
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  std::string transport = "tls";
  if (!options.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(options.tls_client_ca_file, "tls_client_ca_file");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    ssl.client_certificate_request =
        options.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    transport = options.require_client_cert ? "mtls" : "tls+optional_client_cert";
  }
  out.credentials = grpc::SslServerCredentials(ssl);
  std::string auth = "none";
  if (!options.auth_tokens_file.empty()) {
    absl::StatusOr<TokenTable> tokens = TokenTable::Load(options.auth_tokens_file);
    if (!tokens.ok()) {
      return absl::Status(tokens.status().code(),
                          absl::StrCat("auth_tokens_file: ", tokens.status().message()));
    }
    auth = absl::StrCat("tokens(", tokens->size(), ")");
    out.policy.tokens = std::make_shared<const TokenTable>(*std::move(tokens));
    out.credentials->SetAuthMetadataProcessor(std::make_shared<TokenAuthProcessor>(
        out.policy.tokens, options.auth_health_and_reflection));
  } else if (!options.tls_client_ca_file.empty()) {
    auth = "client_cert";
  }
  out.description = absl::StrCat("transport=", transport, " auth=", auth,
                                 out.policy.tokens != nullptr && !options.auth_health_and_reflection
                                     ? " health_and_reflection=open"
                                     : "");
  return out;
}

}  // namespace cuimg
