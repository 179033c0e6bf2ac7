#include "peer/handshake.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "vocab/host_port.hpp"

namespace spool::peer {

using cluster::index_of;
using cluster::node_id;

namespace {

std::string name_of(node_id n) {
  return "n" + std::to_string(index_of(n) + 1);
}

/// A length before each part: no two different inputs read the same.
void put_part(std::string& out, std::string_view part) {
  auto n = static_cast<std::uint32_t>(part.size());
  out.append({static_cast<char>(n >> 24), static_cast<char>(n >> 16),
              static_cast<char>(n >> 8), static_cast<char>(n)});
  out.append(part);
}

} // namespace

std::string proof_mac(const std::string& secret, const std::string& cluster_id,
                      const std::string& answered_nonce, node_id prover,
                      const std::string& prover_nonce,
                      const std::string& prover_http,
                      const std::string& prover_msgpack) {
  std::string msg = "spool-peer-proof-v2";
  put_part(msg, cluster_id);
  put_part(msg, answered_nonce);
  put_part(msg, std::to_string(index_of(prover)));
  put_part(msg, prover_nonce);
  put_part(msg, prover_http);
  put_part(msg, prover_msgpack);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out,
       &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

handshake::handshake(handshake_config cfg, std::string nonce) :
    cfg_(std::move(cfg)), nonce_(std::move(nonce)) {
}

hello handshake::start() const {
  return {protocol_version, cfg_.self, cfg_.cluster_id,
          nonce_,           cfg_.http, cfg_.msgpack};
}

expected<proof> handshake::on_hello(const hello& theirs) {
  if (theirs.version != protocol_version)
    return make_error(errc::bad_request, "peer ", name_of(theirs.node),
                      " speaks peer protocol ", theirs.version,
                      " and this node speaks ", protocol_version,
                      ": refused (upgrade one of them)");
  if (theirs.cluster_id != cfg_.cluster_id)
    return make_error(errc::bad_request, "peer ", name_of(theirs.node),
                      " belongs to cluster '", theirs.cluster_id, "', not '",
                      cfg_.cluster_id, "': refused");
  if (theirs.node == cfg_.self)
    return make_error(errc::bad_request, "a peer claims this node's own id ",
                      name_of(cfg_.self), ": refused");
  if (!cfg_.members.count(theirs.node))
    return make_error(errc::bad_request, "peer ", name_of(theirs.node),
                      " is not in --peers: refused");
  if (theirs.nonce.size() < 16)
    return make_error(errc::bad_request, "peer ", name_of(theirs.node),
                      " sent a nonce of ", theirs.nonce.size(),
                      " bytes (16 at least): refused");
  for (auto* a : {&theirs.http, &theirs.msgpack}) {
    host_port hp;
    if (auto err = read_host_port("its client", *a, hp);
        !a->empty() && !err.empty())
      return make_error(errc::bad_request, "peer ", name_of(theirs.node),
                        " sent a bad client address (", err, "): refused");
  }
  theirs_ = theirs;
  return proof{proof_mac(cfg_.secret, cfg_.cluster_id, theirs.nonce, cfg_.self,
                         nonce_, cfg_.http, cfg_.msgpack)};
}

expected<node_id> handshake::on_proof(const proof& p) const {
  if (!theirs_)
    return make_error(errc::bad_request,
                      "a peer sent a proof before its hello: refused");
  auto want = proof_mac(cfg_.secret, cfg_.cluster_id, nonce_, theirs_->node,
                        theirs_->nonce, theirs_->http, theirs_->msgpack);
  if (p.mac.size() != want.size()
      || CRYPTO_memcmp(p.mac.data(), want.data(), want.size()) != 0)
    return make_error(errc::bad_request, "peer ", name_of(theirs_->node),
                      " failed to prove the cluster secret: refused (check "
                      "that every node has the same secret)");
  return theirs_->node;
}

} // namespace spool::peer
