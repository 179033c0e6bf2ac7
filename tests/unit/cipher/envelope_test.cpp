// Encryption at rest (docs/security.md, "Encryption at rest"): keys from
// hex and key files, payload envelopes that decrypt only under their key,
// and any changed byte refused, never returned.

#include <catch2/catch.hpp>

#include <set>

#include "cipher/envelope.hpp"

using namespace spool;
using namespace spool::cipher;

namespace {

const std::string key_a(64, 'a');
const std::string key_b
    = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

keyring ring(const std::string& text) {
  auto r = keyring::from_text(text, "test keys");
  REQUIRE(r);
  return *r;
}

std::string sealed(const keyring& keys, std::string_view clear) {
  encryptor e;
  std::string out;
  REQUIRE(e.encrypt(keys, clear, out));
  return out;
}

} // namespace

TEST_CASE("a payload decrypts under its key and its envelope hides it",
          "[cipher]") {
  auto keys = ring(key_a);
  std::string clear = R"({"message":"Hello, world!"})";
  auto env = sealed(keys, clear);
  CHECK(env.size() == clear.size() + envelope_overhead);
  CHECK(env.find("Hello") == std::string::npos);
  auto id = envelope_key_id(env);
  REQUIRE(id);
  CHECK(*id == keys.current().id);
  auto back = decrypt(keys, env);
  REQUIRE(back);
  CHECK(*back == clear);
  // An empty payload too.
  auto empty = sealed(keys, "");
  CHECK(empty.size() == envelope_overhead);
  CHECK(decrypt(keys, empty).value() == "");
}

TEST_CASE("each payload gets a fresh nonce", "[cipher]") {
  auto keys = ring(key_a);
  encryptor e;
  std::string a;
  std::string b;
  REQUIRE(e.encrypt(keys, "same text", a));
  REQUIRE(e.encrypt(keys, "same text", b));
  CHECK(a != b);
  CHECK(a.substr(5, nonce_bytes) != b.substr(5, nonce_bytes));
  // Past one pool of nonces: still fresh, still decrypts.
  std::set<std::string> nonces;
  for (int i = 0; i < 300; ++i) {
    std::string out;
    REQUIRE(e.encrypt(keys, "x", out));
    nonces.insert(out.substr(5, nonce_bytes));
    REQUIRE(decrypt(keys, out).value() == "x");
  }
  CHECK(nonces.size() == 300);
}

TEST_CASE("a payload of another key is a clear error naming the key",
          "[cipher]") {
  auto a = ring(key_a);
  auto b = ring(key_b);
  auto env = sealed(a, "secret");
  auto out = decrypt(b, env);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.err().message, Catch::Contains(key_id_hex(a.current().id)));
  CHECK_THAT(out.err().message, Catch::Contains("not configured"));
  // A ring that kept the old key reads both; the first key encrypts.
  auto both = ring(key_b + "\n# kept for old segments\n" + key_a + "\n");
  CHECK(both.current().id == b.current().id);
  CHECK(decrypt(both, env).value() == "secret");
  auto fresh = sealed(both, "new");
  CHECK(envelope_key_id(fresh).value() == b.current().id);
  CHECK(decrypt(both, fresh).value() == "new");
}

TEST_CASE("any changed byte of an envelope is detected, never returned",
          "[cipher]") {
  auto keys = ring(key_a);
  auto env = sealed(keys, "a payload that matters");
  for (std::size_t i = 0; i < env.size(); ++i) {
    auto bad = env;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    auto out = decrypt(keys, bad);
    INFO("byte " << i);
    CHECK_FALSE(out);
  }
  // The tag's failure says what it means.
  auto bad = env;
  bad[env.size() - 1] ^= 0x40;
  CHECK_THAT(decrypt(keys, bad).err().message,
             Catch::Contains("integrity check"));
  // Cut short: too short for an envelope, or a tag that fails.
  CHECK_FALSE(decrypt(keys, env.substr(0, envelope_overhead - 1)));
  CHECK_FALSE(decrypt(keys, env.substr(0, env.size() - 1)));
}

TEST_CASE("keys are 64 hex characters and errors never echo them",
          "[cipher][bad-input]") {
  CHECK(keyring::from_hex(key_a, "encryption-key"));
  CHECK(keyring::from_hex(" " + key_b + "\n", "encryption-key"));
  auto short_key = keyring::from_hex(key_a.substr(2), "encryption-key");
  REQUIRE_FALSE(short_key);
  CHECK_THAT(short_key.err().message, Catch::Contains("64 hex characters"));
  CHECK_THAT(short_key.err().message, Catch::Contains("got 62"));
  auto bad = key_a;
  bad[10] = 'g';
  auto not_hex = keyring::from_hex(bad, "encryption-key");
  REQUIRE_FALSE(not_hex);
  CHECK_THAT(not_hex.err().message, Catch::Contains("character 11"));
  CHECK(not_hex.err().message.find("aaaa") == std::string::npos);
  auto empty = keyring::from_text("# nothing\n\n", "keys.txt");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.err().message, Catch::Contains("no encryption key"));
  auto twice = keyring::from_text(key_a + "\n" + key_a + "\n", "keys.txt");
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.err().message, Catch::Contains("line 2"));
  auto line3 = keyring::from_text(key_a + "\n\n" + "zz\n", "keys.txt");
  REQUIRE_FALSE(line3);
  CHECK_THAT(line3.err().message, Catch::Contains("keys.txt line 3"));
  // Ids differ per key and are stable (derived, not random).
  CHECK(ring(key_a).current().id != ring(key_b).current().id);
  CHECK(ring(key_a).current().id == ring(key_a).current().id);
}
