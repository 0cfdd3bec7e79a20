#include "fake/certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>

namespace infdoctor::fake {

core::Result<CertFiles> write_self_signed(const std::string& dir, const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ips, long valid_hours) {
  using core::ErrorCode;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  if (!key || !cert) return core::make_error(ErrorCode::Internal, "cannot make a key pair");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  const long before_s = valid_hours < 0 ? (-valid_hours + 24) * 3600 : 3600;
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), valid_hours * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("infdoctor demo"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  std::string san;
  for (const auto& d : dns_names) san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
  for (const auto& ip : ips) san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san.c_str())) {
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0)
    return core::make_error(ErrorCode::Internal, "cannot sign the certificate");
  CertFiles out{dir + "/cert.pem", dir + "/key.pem"};
  std::FILE* c = std::fopen(out.cert.c_str(), "w");
  std::FILE* k = std::fopen(out.key.c_str(), "w");
  bool ok = c && k;
  ok = ok && PEM_write_X509(c, cert.get()) == 1;
  ok = ok && PEM_write_PrivateKey(k, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (c) std::fclose(c);
  if (k) std::fclose(k);
  ::chmod(out.key.c_str(), 0600);
  if (!ok) return core::make_error(ErrorCode::Io, "cannot write the certificate to " + dir);
  return out;
}

}  // namespace infdoctor::fake
