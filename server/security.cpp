#include "server/security.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "server/https_get.hpp"

namespace spool::server {

namespace {

expected<std::string> read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(errc::invalid_argument, "cannot read ", what, " '", path,
                      "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every key the options name, in one set.
expected<auth::key_set> load_keys(const config::auth_settings& a) {
  auth::key_set all;
  auto add = [&](expected<auth::key_set> k,
                 const std::string& source) -> std::optional<api_error> {
    if (!k)
      return make_error(errc::invalid_argument, source, ": ", k.err().message);
    for (auto& key : k->keys)
      all.keys.push_back(std::move(key));
    return std::nullopt;
  };
  std::string secret = a.secret;
  if (!a.secret_file.empty()) {
    auto t = read_text(a.secret_file, "jwt-secret-file");
    if (!t)
      return t.err();
    secret = *t;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r'))
      secret.pop_back(); // a file's last newline is not the secret's
  }
  if (!secret.empty())
    if (auto e = add(auth::keys_from_secret(secret), "jwt-secret"))
      return *e;
  std::string pem = a.public_key;
  if (!a.public_key_file.empty()) {
    auto t = read_text(a.public_key_file, "jwt-public-key-file");
    if (!t)
      return t.err();
    pem = *t;
  }
  if (!pem.empty())
    if (auto e = add(auth::keys_from_pem(pem), "jwt-public-key"))
      return *e;
  if (!a.jwks_file.empty()) {
    auto t = read_text(a.jwks_file, "jwt-jwks-file");
    if (!t)
      return t.err();
    if (auto e = add(auth::keys_from_jwks(*t), "jwt-jwks-file"))
      return *e;
  }
  if (!a.jwks_url.empty()) {
    auto doc = https_get(a.jwks_url,
                         std::chrono::milliseconds{
                             static_cast<std::int64_t>(a.jwks_timeout_ms)});
    if (!doc)
      return make_error(doc.err().code, "jwt-jwks-url: ", doc.err().message);
    if (auto e = add(auth::keys_from_jwks(*doc), "jwt-jwks-url " + a.jwks_url))
      return *e;
  }
  return all;
}

/// A value fit for one audit line: quotes and control characters as `?`
/// (a request's path is the client's text).
std::string clean(std::string_view v) {
  std::string out{v.substr(0, 512)};
  for (auto& c : out)
    if (c == '"' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return out;
}

/// The algorithms `--jwt-algorithm` accepts (none: any, `auto`).
std::vector<auth::algorithm> algorithms_of(const std::string& name) {
  if (name == "HS256")
    return {auth::algorithm::hs256};
  if (name == "RS256")
    return {auth::algorithm::rs256};
  if (name == "EdDSA")
    return {auth::algorithm::eddsa};
  return {};
}

/// The keys, when one of them serves the configured algorithm (at start
/// and at a reload alike).
expected<auth::key_set> usable_keys(const config::auth_settings& a) {
  auto keys = load_keys(a);
  if (!keys)
    return keys.err();
  if (keys->keys.empty() && !a.cert_roles_file.empty())
    return keys; // client certificates only: every token is refused
  auto algs = algorithms_of(a.algorithm);
  for (auto& k : keys->keys)
    if (algs.empty() || k.alg == algs.front())
      return keys;
  return make_error(errc::invalid_argument, "jwt-algorithm ", a.algorithm,
                    ": none of the configured keys serves it");
}

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost"
         || host.starts_with("127.");
}

/// The certificate table the options name (none: no table).
expected<std::shared_ptr<const auth::cert_roles>>
cert_table(const config::auth_settings& a) {
  if (a.cert_roles_file.empty())
    return std::shared_ptr<const auth::cert_roles>{};
  auto t = read_text(a.cert_roles_file, "auth-cert-roles-file");
  if (!t)
    return t.err();
  auto table = auth::cert_roles::parse(*t, a.cert_roles_file);
  if (!table)
    return table.err();
  return std::make_shared<const auth::cert_roles>(std::move(*table));
}

} // namespace

expected<std::unique_ptr<auth::gate>>
make_gate(const config::auth_settings& a) {
  auto keys = usable_keys(a);
  if (!keys)
    return keys.err();
  auto table = cert_table(a);
  if (!table)
    return table.err();
  auth::gate_settings s;
  auto& r = s.rules;
  r.algorithms = algorithms_of(a.algorithm);
  r.issuer = a.issuer;
  r.audience = a.audience;
  r.clock_skew_s = static_cast<std::int64_t>(a.clock_skew_s);
  r.role_claim = a.roles_claim;
  r.roles_claim = a.roles_array_claim;
  r.admin_value = a.role_admin;
  r.read_write_value = a.role_read_write;
  r.read_only_value = a.role_read_only;
  r.queues_claim = a.queues_claim;
  r.groups_claim = a.groups_claim;
  s.public_paths = a.public_paths;
  auto g = std::make_unique<auth::gate>(
      std::move(s), std::make_shared<const auth::key_set>(std::move(*keys)));
  if (*table)
    g->replace_cert_roles(std::move(*table));
  return g;
}

std::string reload_keys(auth::gate& g, const config::auth_settings& a) {
  // One reload at a time (SIGHUP and the JWKS refresher): a slow fetch
  // must not replace the keys a later reload read.
  static std::mutex one_at_a_time;
  std::lock_guard lock{one_at_a_time};
  auto keys = usable_keys(a);
  if (!keys)
    return keys.err().message;
  auto table = cert_table(a);
  if (!table)
    return table.err().message;
  g.replace(std::make_shared<const auth::key_set>(std::move(*keys)),
            std::move(*table));
  return {};
}

key_refresher::key_refresher(auth::gate* g, const config::auth_settings& a) {
  if (g == nullptr || a.jwks_url.empty())
    return;
  gate_ = g;
  g->on_unknown_key([this] { nudge(); });
  thread_ = std::thread{[this, g, a] {
    using clock = std::chrono::steady_clock;
    const auto every
        = std::chrono::seconds{static_cast<std::int64_t>(a.jwks_refresh_s)};
    const auto retry
        = std::min<clock::duration>(every, std::chrono::seconds{30});
    const auto nudge_gap = std::chrono::seconds{10};
    auto last = clock::now(); // the start fetched
    auto next = last + every;
    std::unique_lock lock{mtx_};
    for (;;) {
      cv_.wait_until(lock, next, [this] { return stop_ || nudged_; });
      if (stop_)
        return;
      if (nudged_) {
        nudged_ = false;
        next = std::min(next, last + nudge_gap);
      }
      if (clock::now() < next)
        continue;
      lock.unlock();
      auto err = reload_keys(*g, a);
      lock.lock();
      last = clock::now();
      if (err.empty()) {
        spdlog::debug("jwt-jwks-url: keys refreshed");
        next = last + every;
      } else {
        next = last + retry;
        spdlog::error(
            "jwt-jwks-url: keys not refreshed, the old ones stay "
            "(again in {} s): {}",
            std::chrono::duration_cast<std::chrono::seconds>(retry).count(),
            err);
      }
    }
  }};
}

void key_refresher::nudge() {
  {
    std::lock_guard lock{mtx_};
    nudged_ = true;
  }
  cv_.notify_all();
}

key_refresher::~key_refresher() {
  if (gate_ != nullptr)
    gate_->on_unknown_key(nullptr); // (the doors that call it are gone)
  {
    std::lock_guard lock{mtx_};
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

expected<api::security> door_security(const auth::gate* g,
                                      const config::auth_settings& a) {
  api::security sec;
  sec.gate = g;
  if (!g)
    return sec;
  std::shared_ptr<spdlog::logger> log;
  if (!a.audit_log.empty()) {
    try {
      log = spdlog::basic_logger_mt("audit", a.audit_log);
    } catch (const spdlog::spdlog_ex& e) {
      return make_error(errc::invalid_argument, "audit-log '", a.audit_log,
                        "': ", e.what());
    }
    log->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %v",
                     spdlog::pattern_time_type::utc);
    log->flush_on(spdlog::level::info);
  } else {
    log = spdlog::default_logger();
  }
  sec.audit = [log](const api::audit_entry& e) {
    // A certificate's subject (CN=ops,O=acme) is quoted, to keep the line
    // key=value.
    auto who = clean(e.who);
    if (who.find_first_of(" ,=") != std::string::npos)
      who = "\"" + who + "\"";
    log->info("audit who={} role={} from={} door={} what=\"{}\" outcome=\"{}\"",
              who, e.role, e.from, e.door, clean(e.what), clean(e.outcome));
  };
  return sec;
}

expected<std::shared_ptr<const tls::context>>
door_tls(const config::tls_settings& t) {
  if (!t.enabled())
    return std::shared_ptr<const tls::context>{};
  tls::settings s;
  s.cert_file = t.cert_file;
  s.key_file = t.key_file;
  s.ca_file = t.ca_file;
  s.require_client_cert = t.require_client_cert;
  auto made = tls::context::server(s);
  if (!made)
    return make_error(errc::invalid_argument, "TLS: ", made.err().message);
  return std::move(*made);
}

expected<peer_tls_contexts> peer_tls(const config::cluster_settings& c) {
  if (!c.peer_tls())
    return peer_tls_contexts{};
  tls::settings s;
  s.cert_file = c.peer_tls_cert_file;
  s.key_file = c.peer_tls_key_file;
  s.ca_file = c.peer_tls_ca_file;
  s.require_client_cert = true;
  s.verify_peer = true;
  auto server = tls::context::server(s);
  if (!server)
    return make_error(errc::invalid_argument,
                      "peer TLS: ", server.err().message);
  auto client = tls::context::client(s);
  if (!client)
    return make_error(errc::invalid_argument,
                      "peer TLS: ", client.err().message);
  return peer_tls_contexts{std::move(*server), std::move(*client)};
}

void warn_if_open(const config::server_options& opts) {
  bool beyond = !loopback(opts.http.address) || !loopback(opts.msgpack.address);
  if (opts.auth.enabled) {
    if (beyond && !opts.tls.enabled())
      spdlog::warn("tokens are on but TLS is off, and a door listens beyond "
                   "loopback: tokens and payloads cross the network in clear, "
                   "where a token can be read and replayed; set "
                   "--tls-cert-file and --tls-key-file (docs/security.md)");
    return;
  }
  std::string doors;
  if (!loopback(opts.http.address))
    doors += "HTTP on " + opts.http.address + ":"
             + std::to_string(opts.http.port);
  if (!loopback(opts.msgpack.address))
    doors += (doors.empty() ? "" : " and ") + std::string{"msgpack on "}
             + opts.msgpack.address + ":" + std::to_string(opts.msgpack.port);
  if (doors.empty())
    return;
  spdlog::warn("tokens are off (--auth-enabled false) and {} listen(s) beyond "
               "loopback: anyone who reaches them can push, pop, ack, "
               "configure, purge and delete every queue, and read every "
               "message; turn tokens on (docs/security.md) or listen on "
               "127.0.0.1",
               doors);
}

expected<std::shared_ptr<const cipher::keyring>>
encryption_keys(const config::encryption_settings& e) {
  std::shared_ptr<const cipher::keyring> none;
  if (!e.enabled())
    return none;
  expected<cipher::keyring> ring = make_error(errc::internal, "no key");
  if (!e.key_file.empty()) {
    auto text = read_text(e.key_file, "encryption-key-file");
    if (!text)
      return text.err();
    ring = cipher::keyring::from_text(*text,
                                      "encryption-key-file " + e.key_file);
    struct stat info {};
    if (ring && ::stat(e.key_file.c_str(), &info) == 0
        && (info.st_mode & 077) != 0)
      spdlog::warn("encryption-key-file {} can be read by other users than "
                   "its owner (mode {:o}): chmod 600 it",
                   e.key_file, info.st_mode & 0777);
  } else {
    ring = cipher::keyring::from_hex(e.key, "encryption-key");
  }
  if (!ring)
    return ring.err();
  for (std::size_t i = 0; i < ring->keys().size(); ++i)
    spdlog::info("encryption at rest: key {}{}",
                 cipher::key_id_hex(ring->keys()[i].id),
                 i == 0 ? " encrypts" : " decrypts only");
  return std::make_shared<const cipher::keyring>(std::move(*ring));
}

std::string
check_encrypted_queues(const std::vector<storage::queue_record>& queues,
                       const cipher::keyring* keys) {
  if (keys)
    return {};
  std::string names;
  for (auto& q : queues)
    if (q.options.encryption_enabled)
      names += (names.empty() ? "" : ", ") + q.name;
  if (names.empty())
    return {};
  return "queue(s) " + names
         + " have encryptionEnabled, and no encryption key is configured: "
           "start with --encryption-key-file (the key they were written "
           "with)";
}

} // namespace spool::server
