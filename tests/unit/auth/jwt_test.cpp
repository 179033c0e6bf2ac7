// Tokens (auth/jwt.hpp): what verifies, and every way a token is refused.

#include <catch2/catch.hpp>

#include "auth/base64url.hpp"
#include "auth/gate.hpp"
#include "auth/jwt.hpp"
#include "unit/auth/tokens.hpp"

using namespace spool;
using namespace spool::auth;
using spool::test::sign_hs256;

namespace {

const std::string secret = "0123456789abcdef0123456789abcdef-secret";
constexpr std::int64_t now = 1'800'000'000;
const std::string hs_header = R"({"alg":"HS256","typ":"JWT"})";

key_set hs_keys() {
  return *keys_from_secret(secret);
}

std::string claims(std::string_view extra) {
  return R"({"sub":"alice","role":"read-write","exp":)"
         + std::to_string(now + 60) + std::string{extra} + "}";
}

} // namespace

TEST_CASE("an HS256 token with the right secret names its subject, role and "
          "expiry") {
  auto c = verify_token(sign_hs256(secret, hs_header, claims("")), hs_keys(),
                        {}, now);
  REQUIRE(c.who);
  CHECK(c.who->subject == "alice");
  CHECK(c.who->granted == role::read_write);
  CHECK(c.who->expires == now + 60 + 30);
  CHECK(c.who->unrestricted());
}

TEST_CASE("a forged token (another secret, or a payload changed after "
          "signing) is refused") {
  auto forged = sign_hs256("another-secret-of-thirty-two-bytes!!", hs_header,
                           claims(""));
  auto c = verify_token(forged, hs_keys(), {}, now);
  CHECK(!c.who);
  CHECK(c.why == refusal::signature);
  CHECK(client_text(c.why) == "Invalid token");

  auto good = sign_hs256(secret, hs_header, claims(""));
  auto dot = good.find('.');
  auto dot2 = good.find('.', dot + 1);
  auto admin = good.substr(0, dot + 1)
               + base64url_encode(R"({"sub":"alice","role":"admin"})")
               + good.substr(dot2);
  CHECK(verify_token(admin, hs_keys(), {}, now).why == refusal::signature);
}

TEST_CASE("an expired token is refused as expired, within the clock skew it "
          "still holds") {
  auto t = sign_hs256(secret, hs_header,
                      R"({"role":"admin","exp":)" + std::to_string(now - 10)
                          + "}");
  CHECK(verify_token(t, hs_keys(), {}, now).who); // 10 s < 30 s of skew
  token_rules strict;
  strict.clock_skew_s = 0;
  auto c = verify_token(t, hs_keys(), strict, now);
  CHECK(c.why == refusal::expired);
  CHECK(client_text(c.why) == "Token has expired");
}

TEST_CASE("a token not yet valid (nbf beyond the skew) is refused") {
  auto t = sign_hs256(secret, hs_header,
                      R"({"role":"admin","nbf":)" + std::to_string(now + 31)
                          + "}");
  CHECK(verify_token(t, hs_keys(), {}, now).why == refusal::not_yet_valid);
  auto t2 = sign_hs256(secret, hs_header,
                       R"({"role":"admin","nbf":)" + std::to_string(now + 29)
                           + "}");
  CHECK(verify_token(t2, hs_keys(), {}, now).who);
}

TEST_CASE("a token for another audience or issuer is refused when those are "
          "configured") {
  token_rules rules;
  rules.audience = "spool";
  rules.issuer = "https://idp.example";
  auto make = [&](std::string_view extra) {
    return sign_hs256(secret, hs_header, claims(extra));
  };
  CHECK(verify_token(make(R"(,"aud":"other","iss":"https://idp.example")"),
                     hs_keys(), rules, now)
            .why
        == refusal::audience);
  CHECK(verify_token(make(R"(,"iss":"https://idp.example")"), hs_keys(), rules,
                     now)
            .why
        == refusal::audience);
  CHECK(
      verify_token(make(R"(,"aud":["x","spool"],"iss":"https://idp.example")"),
                   hs_keys(), rules, now)
          .who);
  CHECK(verify_token(make(R"(,"aud":"spool","iss":"https://evil.example")"),
                     hs_keys(), rules, now)
            .why
        == refusal::issuer);
}

TEST_CASE("alg none and unknown algorithms are refused, whatever the "
          "signature") {
  auto none = base64url_encode(R"({"alg":"none"})") + "."
              + base64url_encode(claims("")) + ".";
  CHECK(verify_token(none, hs_keys(), {}, now).why == refusal::algorithm);
  auto hs512 = sign_hs256(secret, R"({"alg":"HS512"})", claims(""));
  CHECK(verify_token(hs512, hs_keys(), {}, now).why == refusal::algorithm);
  auto crit
      = sign_hs256(secret, R"({"alg":"HS256","crit":["exp"]})", claims(""));
  CHECK(verify_token(crit, hs_keys(), {}, now).why == refusal::algorithm);
}

TEST_CASE("algorithm confusion: an HS256 token signed with the RSA public "
          "key's PEM as its secret is refused") {
  auto k = test::generate_key("RSA");
  auto pem = test::public_pem(k);
  auto keys = *keys_from_pem(pem);
  auto confused = sign_hs256(pem, hs_header, claims(""));
  auto c = verify_token(confused, keys, {}, now);
  CHECK(!c.who);
  CHECK(c.why == refusal::unknown_key);
  // The same key verifies a real RS256 token.
  auto real = test::sign_with(k, R"({"alg":"RS256"})", claims(""));
  CHECK(verify_token(real, keys, {}, now).who);
  // An algorithm list keeps out what it does not name.
  token_rules only_hs;
  only_hs.algorithms = {algorithm::hs256};
  CHECK(verify_token(real, keys, only_hs, now).why == refusal::algorithm);
}

TEST_CASE("RS256 and EdDSA tokens verify with PEM keys and with a JWKS, the "
          "kid choosing the key") {
  auto rsa = test::generate_key("RSA");
  auto ed = test::generate_key("ED25519");
  auto ed_token
      = test::sign_with(ed, R"({"alg":"EdDSA","kid":"e1"})", claims(""));
  auto pem_keys = *keys_from_pem(test::public_pem(rsa) + test::public_pem(ed));
  CHECK(pem_keys.keys.size() == 2);
  CHECK(verify_token(ed_token, pem_keys, {}, now).who);

  auto jwks = "{\"keys\":[" + test::public_jwk(rsa, "r1") + ","
              + test::public_jwk(ed, "e1") + "]}";
  auto keys = keys_from_jwks(jwks);
  REQUIRE(keys);
  CHECK(verify_token(ed_token, *keys, {}, now).who);
  auto rs = test::sign_with(rsa, R"({"alg":"RS256","kid":"r1"})", claims(""));
  CHECK(verify_token(rs, *keys, {}, now).who);
  auto wrong_kid
      = test::sign_with(rsa, R"({"alg":"RS256","kid":"r9"})", claims(""));
  CHECK(verify_token(wrong_kid, *keys, {}, now).why == refusal::unknown_key);
  // Signed by another Ed25519 key under the right kid.
  auto other = test::generate_key("ED25519");
  auto forged
      = test::sign_with(other, R"({"alg":"EdDSA","kid":"e1"})", claims(""));
  CHECK(verify_token(forged, *keys, {}, now).why == refusal::signature);
}

TEST_CASE("keys that cannot verify safely are refused at load, with what to "
          "do") {
  CHECK(!keys_from_secret("short"));
  auto small = keys_from_pem(test::public_pem(test::generate_key("RSA", 1024)));
  REQUIRE(!small);
  CHECK(small.err().message.find("2048") != std::string::npos);
  CHECK(!keys_from_pem("not a pem"));
  auto k = test::generate_key("ED25519");
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k.get(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  auto priv = keys_from_pem(std::string(data, static_cast<std::size_t>(n)));
  BIO_free(b);
  REQUIRE(!priv);
  CHECK(priv.err().message.find("-pubout") != std::string::npos);
  CHECK(!keys_from_jwks("{}"));
  CHECK(!keys_from_jwks(R"({"keys":[{"kty":"EC","crv":"P-256"}]})"));
  CHECK(!keys_from_jwks(R"({"keys":[{"kty":"RSA","n":"AQAB"}]})"));
}

TEST_CASE("the role is the highest one named by the role claim or the roles "
          "array, under configurable names") {
  auto role_of = [&](std::string_view payload, token_rules rules = {}) {
    auto c = verify_token(sign_hs256(secret, hs_header, payload), hs_keys(),
                          rules, now);
    REQUIRE(c.who);
    return c.who->granted;
  };
  CHECK(role_of(R"({"roles":["read-only","admin"]})") == role::admin);
  CHECK(role_of(R"({"role":"read-only","roles":["read-write"]})")
        == role::read_write);
  CHECK(role_of(R"({"role":"superuser"})") == role::none);
  CHECK(role_of(R"({"sub":"x"})") == role::none);
  token_rules kc;
  kc.roles_claim = "realm_access.roles";
  kc.admin_value = "spool-admin";
  CHECK(role_of(R"({"realm_access":{"roles":["spool-admin"]}})", kc)
        == role::admin);
  auto bad = verify_token(sign_hs256(secret, hs_header, R"({"roles":[1]})"),
                          hs_keys(), {}, now);
  CHECK(bad.why == refusal::claims);
}

TEST_CASE("malformed tokens are refused as malformed") {
  for (std::string t : std::vector<std::string>{
           "abc", "a.b", "a.b.c.d", "!!.e30.", "e30.e30.!!",
           base64url_encode("[1]") + "." + base64url_encode("{}") + ".",
           base64url_encode("{") + "." + base64url_encode("{}") + "."}) {
    CAPTURE(t);
    CHECK(verify_token(t, hs_keys(), {}, now).why == refusal::malformed);
  }
  CHECK(verify_token("", hs_keys(), {}, now).why == refusal::missing);
  token_rules small;
  small.max_token_bytes = 10;
  CHECK(verify_token(sign_hs256(secret, hs_header, claims("")), hs_keys(),
                     small, now)
            .why
        == refusal::malformed);
}

TEST_CASE("base64url takes one spelling per value and no padding") {
  CHECK(base64url_decode("YQ") == std::optional<std::string>{"a"});
  CHECK(!base64url_decode("YR")); // bits left over
  CHECK(!base64url_decode("YQ=="));
  CHECK(!base64url_decode("Y"));
  CHECK(!base64url_decode("a+b/"));
  CHECK(base64url_decode("-_8") == std::optional<std::string>{"\xfb\xff"});
  CHECK(base64url_encode("\xfb\xff") == "-_8");
}

TEST_CASE("the bearer token is read after Bearer in any case, or is the "
          "whole header") {
  CHECK(bearer_token("Bearer abc") == "abc");
  CHECK(bearer_token("bEaReR  abc ") == "abc");
  CHECK(bearer_token("abc") == "abc");
  CHECK(bearer_token("") == "");
}

TEST_CASE("public paths match exactly, or as a prefix when they end in a "
          "slash") {
  gate g{gate_settings{}, std::make_shared<key_set>(hs_keys())};
  CHECK(g.is_public("/health"));
  CHECK(g.is_public("/"));
  CHECK(!g.is_public("/health/ready"));
  CHECK(!g.is_public("/api/v1/push"));
  gate_settings s;
  s.public_paths = {"/health/", "/"};
  gate g2{s, std::make_shared<key_set>(hs_keys())};
  CHECK(g2.is_public("/health/ready"));
  CHECK(!g2.is_public("/api/v1/queues"));
}
