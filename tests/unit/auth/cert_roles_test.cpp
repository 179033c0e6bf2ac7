// Client certificates as roles (auth/cert_roles.hpp, auth::gate::identify):
// the table's lines and their errors, and who a client is when it sends a
// token, a certificate, both, or neither.

#include <catch2/catch.hpp>

#include "auth/gate.hpp"
#include "unit/auth/tokens.hpp"

using namespace spool;
using namespace spool::auth;

TEST_CASE("the certificate table maps exact subjects to roles, and names the "
          "line of each mistake",
          "[auth][certificates]") {
  // A comma inside a value is escaped in RFC 2253, as OpenSSL prints it.
  auto t
      = cert_roles::parse("# who may do what\n"
                          "admin CN=ops,O=acme\n"
                          "\n"
                          "read-only   CN=dashboard\\, the viewer,O=acme \r\n",
                          "roles.txt");
  REQUIRE(t);
  CHECK(t->size() == 2);
  CHECK(t->find("CN=ops,O=acme") == role::admin);
  CHECK(t->find("CN=dashboard\\, the viewer,O=acme") == role::read_only);
  CHECK_FALSE(t->find("CN=ops"));        // exact, not a prefix
  CHECK_FALSE(t->find("cn=ops,o=acme")); // nor another case
  CHECK_FALSE(t->find(""));

  auto error_of = [](std::string_view text) {
    auto r = cert_roles::parse(text, "roles.txt");
    REQUIRE_FALSE(r);
    return r.err().message;
  };
  CHECK(error_of("admin CN=a\nroot CN=b\n")
        == "roles.txt line 2: 'root' is not a role (read-only, read-write or "
           "admin)");
  CHECK(error_of("read-write\n")
        == "roles.txt line 1: no subject after the role (write 'read-write "
           "CN=...,O=...', as openssl x509 -noout -subject -nameopt RFC2253 "
           "prints it)");
  CHECK(error_of("admin CN=a\nread-only CN=a\n")
        == "roles.txt line 2: subject 'CN=a' is listed twice");
}

TEST_CASE("a token decides who a client is, and without one a listed "
          "certificate does",
          "[auth][certificates]") {
  const std::string secret = "a secret of at least thirty-two bytes!!";
  gate g{{}, std::make_shared<const key_set>(keys_from_secret(secret).value())};
  auto now = std::int64_t{1'700'000'000};
  // No table yet: a certificate grants nothing.
  auto none = g.identify("", "CN=ops", now);
  CHECK_FALSE(none.who);
  CHECK(none.why == refusal::missing);
  auto before = g.generation();
  g.replace_cert_roles(std::make_shared<const cert_roles>(
      cert_roles::parse("admin CN=ops\n", "t").value()));
  CHECK(g.generation() == before + 1); // open sessions check again
  auto ops = g.identify("", "CN=ops", now);
  REQUIRE(ops.who);
  CHECK(ops.who->subject == "CN=ops");
  CHECK(ops.who->granted == role::admin);
  CHECK(ops.who->expires == 0);
  CHECK(ops.who->unrestricted());
  auto stranger = g.identify("", "CN=stranger", now);
  CHECK_FALSE(stranger.who);
  CHECK(stranger.why == refusal::missing);
  CHECK(stranger.detail
        == "certificate 'CN=stranger' is not in the certificate table");
  CHECK(g.identify("", "", now).why == refusal::missing);
  // A token decides, its refusal included.
  auto tok = test::sign_hs256(secret, R"({"alg":"HS256"})",
                              R"({"sub":"w","role":"read-write","exp":)"
                                  + std::to_string(now + 600) + "}");
  auto both = g.identify(tok, "CN=ops", now);
  REQUIRE(both.who);
  CHECK(both.who->subject == "w");
  CHECK(both.who->granted == role::read_write);
  auto forged = g.identify(tok + "x", "CN=ops", now);
  CHECK_FALSE(forged.who);
  CHECK(forged.why == refusal::signature);
  // Removed from the table at a reload: refused from then on.
  g.replace(std::make_shared<const key_set>(keys_from_secret(secret).value()),
            nullptr);
  CHECK_FALSE(g.identify("", "CN=ops", now).who);
}
