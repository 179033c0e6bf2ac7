// Keys from a JWKS URL (docs/security.md, "Keys from a JWKS URL"), against
// the real spoold and an HTTPS server made here on 127.0.0.1 (its
// certificate of a test CA, which spoold trusts through SSL_CERT_FILE):
// fetched at start, refreshed as --jwt-jwks-refresh-interval says, a
// fetch that fails keeps the keys in force, and a URL that cannot be
// fetched at start stops the start with why.

#include <catch2/catch.hpp>

#include <asio.hpp>

#include <cstdlib>
#include <ctime>
#include <mutex>
#include <thread>

#include "http_fixture.hpp"
#include "tls/channel.hpp"
#include "unit/auth/tokens.hpp"
#include "unit/tls/certs.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using asio::ip::tcp;

namespace {

/// An HTTPS server answering every GET with the document it holds now
/// (503 while it holds none), one connection at a time.
class jwks_server {
public:
  jwks_server() {
    ::setenv("SSL_CERT_FILE", certs_.ca_file().c_str(), 1);
    tls::settings s{leaf_.cert_file, leaf_.key_file, "", false, true};
    ctx_ = tls::context::server(s).value();
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread{[this] { serve(); }};
  }
  ~jwks_server() {
    stop_ = true;
    try { // wakes the blocking accept
      asio::io_context io;
      tcp::socket s{io};
      s.connect({asio::ip::make_address("127.0.0.1"), port_});
    } catch (...) {
    }
    thread_.join();
    ::unsetenv("SSL_CERT_FILE");
  }
  std::string url() const {
    return "https://127.0.0.1:" + std::to_string(port_)
           + "/.well-known/jwks.json";
  }
  void set(std::string doc) {
    std::lock_guard g{mtx_};
    doc_ = std::move(doc);
  }
  int gets() const {
    return gets_.load();
  }

private:
  void serve() {
    while (!stop_) {
      tcp::socket s{io_};
      std::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stop_)
        continue;
      answer(s);
    }
  }
  void answer(tcp::socket& s) {
    tls::channel ch{ctx_, true};
    std::string plain, out;
    std::array<char, 16384> buf;
    while (plain.find("\r\n\r\n") == std::string::npos) {
      std::error_code ec;
      auto n = s.read_some(asio::buffer(buf), ec);
      if (ec || !ch.feed({buf.data(), n}, plain))
        return;
      ch.take_output(out);
      if (!out.empty())
        asio::write(s, asio::buffer(out), ec);
      out.clear();
    }
    ++gets_;
    std::string doc;
    {
      std::lock_guard g{mtx_};
      doc = doc_;
    }
    std::string answer
        = doc.empty() ? std::string{"HTTP/1.0 503 Service Unavailable\r\n\r\n"}
                      : "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                        "Content-Length: "
                            + std::to_string(doc.size()) + "\r\n\r\n" + doc;
    ch.seal(answer, out);
    std::error_code ec;
    asio::write(s, asio::buffer(out), ec);
    s.shutdown(tcp::socket::shutdown_both, ec);
  }

  temp_dir dir_;
  cert_maker certs_{dir_.path};
  pem_pair leaf_ = certs_.leaf("jwks", "jwks", "IP:127.0.0.1");
  std::shared_ptr<const tls::context> ctx_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> gets_{0};
  std::mutex mtx_;
  std::string doc_;
};

std::string
jwks_of(std::initializer_list<std::pair<const pkey_ptr*, const char*>> keys) {
  std::string out = "{\"keys\":[";
  for (auto& [k, kid] : keys)
    out += (out.back() == '[' ? "" : ",") + public_jwk(*k, kid);
  return out + "]}";
}

std::string token_of(const pkey_ptr& k, const std::string& kid) {
  return sign_with(k, R"({"alg":"EdDSA","kid":")" + kid + "\"}",
                   R"({"sub":"svc","role":"read-only","exp":)"
                       + std::to_string(std::time(nullptr) + 600) + "}");
}

int status_with(spoold_server& s, const std::string& token) {
  http_conn c{s.port()};
  c.send_raw(http_conn::format("GET", "/api/v1/resources/queues", "",
                               "Authorization: Bearer " + token + "\r\n"));
  auto r = c.read_response();
  return r ? r->status : 0;
}

} // namespace

TEST_CASE("keys from a JWKS URL are fetched at start and refreshed: a key "
          "added later verifies, one removed is refused, a failed fetch "
          "keeps the keys in force",
          "[system][auth][jwks]") {
  jwks_server idp;
  auto k1 = generate_key("ED25519");
  auto k2 = generate_key("ED25519");
  idp.set(jwks_of({{&k1, "k1"}}));
  spoold_server s{{"--auth-enabled", "true", "--jwt-algorithm", "EdDSA",
                   "--jwt-jwks-url", idp.url(), "--jwt-jwks-refresh-interval",
                   "1"}};
  CHECK(idp.gets() >= 1);
  CHECK(status_with(s, token_of(k1, "k1")) == 200);
  CHECK(status_with(s, token_of(k2, "k2")) == 401);
  // The identity provider rotates: k2 in, k1 out.
  idp.set(jwks_of({{&k2, "k2"}}));
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (status_with(s, token_of(k2, "k2")) != 200
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  CHECK(status_with(s, token_of(k2, "k2")) == 200);
  CHECK(status_with(s, token_of(k1, "k1")) == 401);
  // SIGHUP fetches too, and spoold lives on (the refresher's thread never
  // takes a signal).
  for (int i = 0; i < 3; ++i)
    s.signal(SIGHUP);
  CHECK(s.wait_for_log("SIGHUP: token keys reloaded", 10s));
  CHECK(s.get("/health").status == 200);
  // The provider fails: the keys in force stay, and the log says why.
  idp.set("");
  CHECK(s.wait_for_log("jwt-jwks-url: keys not refreshed, the old ones stay",
                       15s));
  CHECK(s.log().find("answered 'HTTP/1.0 503 Service Unavailable'")
        != std::string::npos);
  CHECK(status_with(s, token_of(k2, "k2")) == 200);
}

TEST_CASE("a JWKS URL that cannot be fetched at start stops the start, "
          "saying why",
          "[system][auth][jwks]") {
  std::string url;
  {
    jwks_server gone; // its port is closed once it is gone
    url = gone.url();
  }
  try {
    spoold_server s{{"--auth-enabled", "true", "--jwt-algorithm", "EdDSA",
                     "--jwt-jwks-url", url, "--jwt-jwks-timeout-ms", "2000"}};
    FAIL("spoold started without its keys");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("jwt-jwks-url: GET " + url
                                         + ": cannot connect"));
  }
  // A certificate spoold does not trust is refused as well.
  jwks_server untrusted;
  auto k1 = generate_key("ED25519");
  untrusted.set(jwks_of({{&k1, "k1"}}));
  ::unsetenv("SSL_CERT_FILE");
  try {
    spoold_server s{{"--auth-enabled", "true", "--jwt-algorithm", "EdDSA",
                     "--jwt-jwks-url", untrusted.url()}};
    FAIL("spoold trusted a certificate of an unknown CA");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("certificate verify failed"));
  }
}

TEST_CASE("a token naming a kid no key has makes spoold fetch the JWKS "
          "again soon, not only at the refresh interval",
          "[system][auth][jwks]") {
  jwks_server idp;
  auto k1 = generate_key("ED25519");
  auto k2 = generate_key("ED25519");
  idp.set(jwks_of({{&k1, "k1"}}));
  spoold_server s{{"--auth-enabled", "true", "--jwt-algorithm", "EdDSA",
                   "--jwt-jwks-url", idp.url()}}; // refreshed hourly
  auto at_start = idp.gets();
  idp.set(jwks_of({{&k1, "k1"}, {&k2, "k2"}}));
  CHECK(status_with(s, token_of(k2, "k2")) == 401); // unknown yet: a nudge
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (status_with(s, token_of(k2, "k2")) != 200
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  CHECK(status_with(s, token_of(k2, "k2")) == 200);
  CHECK(idp.gets() - at_start == 1);
  // Tokens of a kid the provider never publishes, for 3 s: no fetch, the
  // last one being less than 10 s old.
  auto k9 = generate_key("ED25519");
  auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    CHECK(status_with(s, token_of(k9, "k9")) == 401);
    std::this_thread::sleep_for(50ms);
  }
  CHECK(idp.gets() - at_start == 1);
}
