// Admitting a peer: both sides prove the cluster secret without sending it;
// every refusal says why.

#include <catch2/catch.hpp>

#include "peer/handshake.hpp"

using namespace spool;
using namespace spool::peer;
namespace cl = spool::cluster;

namespace {

const cl::node_id n1{0}, n2{1}, n3{2}, n9{8};

handshake side(cl::node_id self, std::string secret, char nonce_byte,
               std::string cluster = "prod") {
  auto i = std::to_string(cl::index_of(self) + 1);
  return handshake({self,
                    std::move(cluster),
                    std::move(secret),
                    {n1, n2, n3},
                    "10.0.0." + i + ":6632",
                    "10.0.0." + i + ":6690"},
                   std::string(16, nonce_byte));
}

} // namespace

TEST_CASE("two nodes with the same cluster secret admit each other, and the "
          "secret never crosses the wire",
          "[peer][handshake]") {
  auto a = side(n1, "s3cret", 'a');
  auto b = side(n2, "s3cret", 'b');
  auto pa = a.on_hello(b.start());
  auto pb = b.on_hello(a.start());
  REQUIRE(pa);
  REQUIRE(pb);
  CHECK(pa->mac.size() == 32);
  CHECK(pa->mac.find("s3cret") == std::string::npos);
  CHECK(encode(*pa).find("s3cret") == std::string::npos);
  auto at_b = b.on_proof(*pa);
  auto at_a = a.on_proof(*pb);
  REQUIRE(at_b);
  REQUIRE(at_a);
  CHECK(*at_b == n1);
  CHECK(*at_a == n2);
}

TEST_CASE("a peer with a wrong secret is refused, with a line that says so",
          "[peer][handshake]") {
  auto a = side(n1, "s3cret", 'a');
  auto b = side(n2, "other", 'b');
  REQUIRE(a.on_hello(b.start()));
  auto pb = b.on_hello(a.start());
  REQUIRE(pb);
  auto r = a.on_proof(*pb);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 failed to prove the cluster secret: refused (check that "
           "every node has the same secret)");
}

TEST_CASE("a proof made for one link is refused on another (fresh nonces)",
          "[peer][handshake]") {
  auto a = side(n1, "s3cret", 'a');
  auto b = side(n2, "s3cret", 'b');
  REQUIRE(b.on_hello(a.start()));
  auto pa = a.on_hello(b.start());
  REQUIRE(pa);
  auto b2 = side(n2, "s3cret", 'c'); // another link, another nonce
  REQUIRE(b2.on_hello(a.start()));
  CHECK_FALSE(b2.on_proof(*pa));
  // Reflected back to its maker: it proves n1, not n2.
  CHECK_FALSE(a.on_proof(*pa));
}

TEST_CASE("a peer of another protocol version, another cluster, outside "
          "--peers, with this node's id or a short nonce is refused",
          "[peer][handshake]") {
  auto a = side(n1, "s3cret", 'a');
  auto h = side(n2, "s3cret", 'b').start();
  h.version = protocol_version + 1;
  auto r = a.on_hello(h);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 speaks peer protocol 4 and this node speaks 3: refused "
           "(upgrade one of them)");
  r = a.on_hello(side(n2, "s3cret", 'b', "staging").start());
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 belongs to cluster 'staging', not 'prod': refused");
  r = a.on_hello(side(n9, "s3cret", 'b').start());
  REQUIRE_FALSE(r);
  CHECK(r.err().message == "peer n9 is not in --peers: refused");
  r = a.on_hello(side(n1, "s3cret", 'b').start());
  REQUIRE_FALSE(r);
  CHECK(r.err().message == "a peer claims this node's own id n1: refused");
  auto shorty = side(n2, "s3cret", 'b').start();
  shorty.nonce = "abc";
  r = a.on_hello(shorty);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 sent a nonce of 3 bytes (16 at least): refused");
  auto p = a.on_proof(proof{std::string(32, 'x')});
  REQUIRE_FALSE(p);
  CHECK(p.err().message == "a peer sent a proof before its hello: refused");
}

TEST_CASE("a hello carries the node's client addresses, and its proof "
          "binds them: an address changed on the way fails the proof, and a "
          "malformed one is refused",
          "[peer][handshake]") {
  auto a = side(n1, "s3cret", 'a');
  auto b = side(n2, "s3cret", 'b');
  auto hb = b.start();
  CHECK(hb.http == "10.0.0.2:6632");
  CHECK(hb.msgpack == "10.0.0.2:6690");
  REQUIRE(a.on_hello(hb));
  REQUIRE(a.theirs());
  CHECK(a.theirs()->msgpack == "10.0.0.2:6690");
  auto pb = b.on_hello(a.start());
  REQUIRE(pb);
  REQUIRE(a.on_proof(*pb));

  // The same hello with another msgpack address, on a fresh link.
  auto a2 = side(n1, "s3cret", 'c');
  auto b2 = side(n2, "s3cret", 'd');
  auto forged = b2.start();
  forged.msgpack = "10.6.6.6:6690";
  REQUIRE(a2.on_hello(forged));
  auto pb2 = b2.on_hello(a2.start());
  REQUIRE(pb2);
  CHECK_FALSE(a2.on_proof(*pb2));

  // An address over 255 bytes is refused.
  auto a3 = side(n1, "s3cret", 'e');
  auto long_one = side(n2, "s3cret", 'f').start();
  long_one.http = std::string(256, 'h');
  auto r = a3.on_hello(long_one);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 sent a bad client address (its client address is over "
           "255 characters): refused");
  // One that would break an HTTP header is refused too.
  auto a4 = side(n1, "s3cret", 'g');
  auto crlf = side(n2, "s3cret", 'h').start();
  crlf.http = "h:1\r\nSet-Cookie: x";
  r = a4.on_hello(crlf);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.err().message,
             Catch::Contains("may hold only letters, digits and . - _ : [ ]"));
}

TEST_CASE("a hello of peer protocol 1 (five elements, no addresses) decodes "
          "and is refused by its version",
          "[peer][handshake]") {
  // [kind 1, version 1, node 1, "prod", bin nonce of 16]
  std::string v1 = "\x95\x01\x01\x01\xa4prod\xc4\x10" + std::string(16, 'n');
  auto f = decode(v1);
  REQUIRE(f);
  auto* h = std::get_if<hello>(&*f);
  REQUIRE(h);
  CHECK(h->version == 1);
  auto a = side(n1, "s3cret", 'a');
  auto r = a.on_hello(*h);
  REQUIRE_FALSE(r);
  CHECK(r.err().message
        == "peer n2 speaks peer protocol 1 and this node speaks 3: refused "
           "(upgrade one of them)");
}
