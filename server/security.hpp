#pragma once

/// The server's side of tokens (docs/security.md): the keys read from the
/// options' files and texts into the doors' gate, their reload on SIGHUP,
/// the audit log, and the warning a node open to the network without
/// tokens logs at start.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "auth/gate.hpp"
#include "cipher/keyring.hpp"
#include "config/options.hpp"
#include "protocol/api/access.hpp"
#include "storage/records.hpp"
#include "tls/context.hpp"
#include "vocab/expected.hpp"

namespace spool::server {

/// The gate the options describe (keys loaded), or what is wrong: a file
/// that cannot be read, a key that cannot verify safely.
expected<std::unique_ptr<auth::gate>> make_gate(const config::auth_settings& a);

/// Reads the key files and the certificate table again into `g` (SIGHUP):
/// "" or why not (the keys and table in force stay then).
std::string reload_keys(auth::gate& g, const config::auth_settings& a);

/// With `--jwt-jwks-url`: a thread that loads the keys again (the URL
/// fetched) every `--jwt-jwks-refresh-interval` seconds; a fetch that fails
/// keeps the keys in force, logs why, and is tried again within 30 s.
/// Without it: nothing. Stops when destroyed.
class key_refresher {
public:
  key_refresher(auth::gate* g, const config::auth_settings& a);
  ~key_refresher();
  /// A token named an unknown key: fetch soon (at most once per 10 s).
  void nudge();
  key_refresher(const key_refresher&) = delete;
  key_refresher& operator=(const key_refresher&) = delete;

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool nudged_ = false;
  auth::gate* gate_ = nullptr;
  std::thread thread_;
};

/// The doors' security: the gate (none: tokens off) and the audit log
/// (a file of its own, or the server's log); an audit file that cannot be
/// opened is an error.
expected<api::security> door_security(const auth::gate* g,
                                      const config::auth_settings& a);

/// The doors' TLS context the options describe (none: TLS off), or why
/// not (a file that cannot be read, a key of another certificate).
expected<std::shared_ptr<const tls::context>>
door_tls(const config::tls_settings& t);

/// The peer links' TLS (docs/security.md, "TLS on the peer links"): a
/// server side that requires a client certificate of the CA, a client side
/// that presents this node's and checks the peer's against the CA and its
/// `--peers` host. Both none: plain links.
struct peer_tls_contexts {
  std::shared_ptr<const tls::context> server;
  std::shared_ptr<const tls::context> client;
};
/// The contexts the options describe, or why not.
expected<peer_tls_contexts> peer_tls(const config::cluster_settings& c);

/// The keys of encryption at rest the options give (none: no key), or why
/// not (a file that cannot be read, a key that is not 64 hex characters).
/// Logs each key's id, and a warning when the key file can be read by
/// others than its owner.
expected<std::shared_ptr<const cipher::keyring>>
encryption_keys(const config::encryption_settings& e);

/// The queues that have `encryptionEnabled` when no key is configured
/// (`keys` none): "" when there is none, else the refusal to start.
std::string
check_encrypted_queues(const std::vector<storage::queue_record>& queues,
                       const cipher::keyring* keys);

/// Logs a warning when tokens are off and a door listens beyond loopback,
/// naming what anyone reaching it can do.
void warn_if_open(const config::server_options& opts);

} // namespace spool::server
