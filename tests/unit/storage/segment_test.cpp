// The segment codec: round trips, compression choice, corruption detection.

#include <catch2/catch.hpp>

#include <random>

#include <xxhash.h>

#include "cipher/envelope.hpp"
#include "storage/keys.hpp"
#include "storage/segment.hpp"

using namespace spool::storage;

namespace {

std::vector<frame> sample_frames() {
  std::vector<frame> out;
  frame a;
  a.transaction_id = "tx-a";
  a.origin = txid_origin::client;
  a.trace_id = "trace-1";
  a.headers = {{"content-type", "json"}, {"k", ""}};
  a.producer_sub = "alice";
  a.payload = R"({"order":1,"amount":12.5})";
  out.push_back(a);
  frame b;
  b.encoding = payload_encoding::binary;
  b.payload = std::string("\0\x01\xff bin", 7);
  out.push_back(b);
  frame c; // everything empty
  out.push_back(c);
  return out;
}

segment_location at(std::int64_t base) {
  return {"partition orders/7", offset{base}};
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng{seed};
  std::string s(n, '\0');
  for (auto& ch : s)
    ch = static_cast<char>(rng());
  return s;
}

/// Writes the checksum `seg`'s header and body make (after a test changed
/// them), so that only what lies under the checksum can object.
void fix_checksum(std::string& seg) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, seg.data(), 32);
  XXH64_update(st, seg.data() + segment_header_size,
               seg.size() - segment_header_size);
  auto sum = XXH64_digest(st);
  XXH64_freeState(st);
  for (int k = 0; k < 8; ++k)
    seg[32 + k] = static_cast<char>((sum >> (56 - 8 * k)) & 0xff);
}

} // namespace

TEST_CASE("a segment round-trips every frame field", "[storage][segment]") {
  for (auto mode : {compression::off, compression::zstd_when_smaller}) {
    segment_encoder enc{mode};
    auto frames = sample_frames();
    auto bytes = enc.encode(offset{40}, 1'700'000'000'000'000, frames);
    REQUIRE(bytes);
    std::vector<stored_frame> out;
    auto h = decode_segment(*bytes, at(40), out);
    REQUIRE(h);
    CHECK(h->version == segment_format_version);
    CHECK(h->base == offset{40});
    CHECK(h->frame_count == 3);
    CHECK(h->created_at == 1'700'000'000'000'000);
    CHECK(h->flags == segment_flag_client_ids);
    REQUIRE(out.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(out[i].off == offset{40 + static_cast<std::int64_t>(i)});
      CHECK(out[i].created_at == 1'700'000'000'000'000);
      CHECK(out[i].data == frames[i]);
    }
  }
}

TEST_CASE("zstd is used only when it makes the segment smaller",
          "[storage][segment]") {
  segment_encoder enc{compression::zstd_when_smaller};
  std::vector<frame> compressible(100);
  for (auto& f : compressible)
    f.payload = R"({"customer":"c-0042","status":"paid","amount":17.35})";
  auto small = enc.encode(offset{0}, 1, compressible);
  REQUIRE(small);
  auto h = peek_segment_header(*small, at(0));
  REQUIRE(h);
  CHECK(h->codec == segment_codec::zstd);
  CHECK(h->stored_size < h->raw_size);
  std::vector<frame> random(1);
  random[0].payload = random_bytes(4096, 7);
  auto big = enc.encode(offset{0}, 1, random);
  REQUIRE(big);
  auto hb = peek_segment_header(*big, at(0));
  REQUIRE(hb);
  CHECK(hb->codec == segment_codec::none);
  segment_encoder plain{compression::off};
  auto off = plain.encode(offset{0}, 1, compressible);
  REQUIRE(off);
  CHECK(peek_segment_header(*off, at(0))->codec == segment_codec::none);
}

TEST_CASE("a corrupt segment is an error naming partition and offset",
          "[storage][segment][bad-input]") {
  for (auto mode : {compression::off, compression::zstd_when_smaller}) {
    segment_encoder enc{mode};
    std::vector<frame> frames(20);
    for (auto& f : frames)
      f.payload = R"({"customer":"c-0042","status":"paid"})";
    auto bytes = enc.encode(offset{120}, 5, frames);
    REQUIRE(bytes);
    // Flip every byte in turn: never accepted as data, never a crash.
    for (std::size_t i = 0; i < bytes->size(); ++i) {
      auto bad = *bytes;
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      std::vector<stored_frame> out;
      auto h = decode_segment(bad, at(120), out);
      REQUIRE(!h);
      CHECK(h.err().code == ec::corrupt_segment);
      CHECK(h.err().message.find("partition orders/7: segment at offset 120: ")
            == 0);
      CHECK(out.empty());
    }
    std::vector<stored_frame> out;
    auto flipped = *bytes;
    flipped.back() ^= 1;
    auto h = decode_segment(flipped, at(120), out);
    REQUIRE(!h);
    CHECK(h.err().message
          == "partition orders/7: segment at offset 120: checksum mismatch");
  }
}

TEST_CASE("a segment stored under another offset is corrupt",
          "[storage][segment][bad-input]") {
  segment_encoder enc;
  auto bytes = enc.encode(offset{7}, 1, sample_frames());
  REQUIRE(bytes);
  std::vector<stored_frame> out;
  auto h = decode_segment(*bytes, at(8), out);
  REQUIRE(!h);
  CHECK(h.err().message
        == "partition orders/7: segment at offset 8: header names offset 7");
}

TEST_CASE("a truncated segment is an error, never data",
          "[storage][segment][bad-input]") {
  segment_encoder enc;
  auto bytes = enc.encode(offset{0}, 1, sample_frames());
  REQUIRE(bytes);
  for (std::size_t n = 0; n < bytes->size(); ++n) {
    std::vector<stored_frame> out;
    auto h = decode_segment(std::string_view{*bytes}.substr(0, n), at(0), out);
    REQUIRE(!h);
    CHECK(h.err().code == ec::corrupt_segment);
  }
}

TEST_CASE("random bytes never decode as a segment",
          "[storage][segment][bad-input]") {
  for (unsigned seed = 0; seed < 500; ++seed) {
    auto junk = random_bytes(seed % 200, seed);
    std::vector<stored_frame> out;
    auto h = decode_segment(junk, at(0), out);
    CHECK(!h);
  }
}

TEST_CASE("a decode takes frames from an offset within limits",
          "[storage][segment]") {
  segment_encoder enc;
  std::vector<frame> frames(10);
  for (std::size_t i = 0; i < frames.size(); ++i)
    frames[i].payload = std::string(10, static_cast<char>('a' + i));
  auto bytes = enc.encode(offset{100}, 1, frames);
  REQUIRE(bytes);
  std::vector<stored_frame> out;
  REQUIRE(decode_segment(*bytes, at(100), out, offset{104}, 3));
  REQUIRE(out.size() == 3);
  CHECK(out[0].off == offset{104});
  CHECK(out[0].data.payload == std::string(10, 'e'));
  out.clear();
  REQUIRE(decode_segment(*bytes, at(100), out, offset{100}, 100, 25));
  CHECK(out.size() == 2);
}

TEST_CASE("frames beyond their limits are refused with the field named",
          "[storage][segment][bad-input]") {
  frame_limits limits;
  frame f;
  f.payload.assign(limits.max_payload_bytes + 1, 'x');
  auto r = check_frame(f, limits);
  REQUIRE(!r);
  CHECK(r.err().code == ec::frame_too_large);
  CHECK(r.err().message.find("payload") != std::string::npos);
  f.payload = "ok";
  f.transaction_id.assign(256, 't');
  CHECK(check_frame(f, limits).err().message.find("transactionId") == 0);
  f.transaction_id.clear();
  f.origin = txid_origin::client;
  CHECK(check_frame(f, limits).err().code == ec::invalid_argument);
  f.origin = txid_origin::generated;
  f.headers.assign(1, {"k", std::string(16 * 1024 + 1, 'v')});
  CHECK(check_frame(f, limits).err().message.find("headers") == 0);
  f.headers.clear();
  CHECK(check_frame(f, limits));
}

TEST_CASE("an empty segment cannot be encoded",
          "[storage][segment][bad-input]") {
  segment_encoder enc;
  auto r = enc.encode(offset{0}, 1, std::span<const frame>{});
  REQUIRE(!r);
  CHECK(r.err().code == ec::invalid_argument);
}

TEST_CASE("a random body with a valid header and checksum never crashes the "
          "frame parser",
          "[storage][segment][bad-input]") {
  segment_encoder enc{compression::off};
  auto good = enc.encode(offset{0}, 1, sample_frames());
  REQUIRE(good);
  std::mt19937 rng{99};
  for (int i = 0; i < 2000; ++i) {
    auto body = random_bytes(1 + rng() % 120, static_cast<unsigned>(i));
    std::string seg = good->substr(0, segment_header_size) + body;
    // Patch sizes and checksum so only the frame parser can object.
    auto put32 = [&](std::size_t at, std::uint32_t v) {
      for (int k = 0; k < 4; ++k)
        seg[at + k] = static_cast<char>((v >> (24 - 8 * k)) & 0xff);
    };
    put32(24, static_cast<std::uint32_t>(body.size()));
    put32(28, static_cast<std::uint32_t>(body.size()));
    fix_checksum(seg);
    std::vector<stored_frame> out;
    auto h = decode_segment(seg, at(0), out);
    if (!h)
      CHECK(h.err().code == ec::corrupt_segment);
    else
      CHECK(out.size() == h->frame_count);
  }
}

TEST_CASE("an encrypting encoder stores no payload byte in clear and keeps "
          "the rest readable",
          "[storage][segment][encryption]") {
  auto keys = std::make_shared<const spool::cipher::keyring>(
      spool::cipher::keyring::from_hex(std::string(64, '7'), "test").value());
  for (auto mode : {compression::off, compression::zstd_when_smaller}) {
    segment_encoder enc{mode};
    enc.encrypt_with(keys);
    auto frames = sample_frames();
    frames[0].payload
        = R"({"order":1,"amount":12.5,"pad":")" + std::string(200, 'p') + "\"}";
    auto bytes = enc.encode(offset{40}, 5, frames);
    REQUIRE(bytes);
    // Compressed or not, the payloads are not there; an uncompressed
    // segment shows the headers, trace id and id, as documented.
    CHECK(bytes->find("amount") == std::string::npos);
    CHECK(bytes->find(std::string("\0\x01\xff bin", 7)) == std::string::npos);
    if (mode == compression::off) {
      CHECK(bytes->find("trace-1") != std::string::npos);
      CHECK(bytes->find("content-type") != std::string::npos);
    }
    std::vector<stored_frame> out;
    auto h = decode_segment(*bytes, at(40), out);
    REQUIRE(h);
    // Version 2: a build without encryption refuses it, never serves the
    // envelopes as payloads.
    CHECK(h->version == segment_format_encrypted);
    REQUIRE(out.size() == 3);
    CHECK(out[0].data.encoding == payload_encoding::json_encrypted);
    CHECK(out[1].data.encoding == payload_encoding::binary_encrypted);
    CHECK(out[0].data.trace_id == "trace-1");
    CHECK(out[0].data.transaction_id == "tx-a");
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(spool::cipher::decrypt(*keys, out[i].data.payload).value()
            == frames[i].payload);
    // An encrypted frame given to an encoder again keeps its
    // envelope: not encrypted twice, with or without a key.
    for (bool with_keys : {true, false}) {
      segment_encoder again{mode};
      if (with_keys)
        again.encrypt_with(keys);
      std::vector<frame> moved{out[1].data};
      auto b2 = again.encode(offset{0}, 6, moved);
      REQUIRE(b2);
      std::vector<stored_frame> out2;
      REQUIRE(decode_segment(*b2, at(0), out2));
      CHECK(out2[0].data == out[1].data);
    }
  }
}

TEST_CASE("a changed ciphertext under a valid checksum is detected",
          "[storage][segment][encryption][bad-input]") {
  auto keys = std::make_shared<const spool::cipher::keyring>(
      spool::cipher::keyring::from_hex(std::string(64, '7'), "test").value());
  segment_encoder enc{compression::off};
  enc.encrypt_with(keys);
  frame f;
  f.payload = R"({"n":"a payload of some length"})";
  auto bytes = enc.encode(offset{0}, 1, std::vector<frame>{f});
  REQUIRE(bytes);
  auto seg = *bytes;
  seg[seg.size() - 20] ^= 0x10; // inside the ciphertext
  fix_checksum(seg);
  std::vector<stored_frame> out;
  REQUIRE(decode_segment(seg, at(0), out));
  auto clear = spool::cipher::decrypt(*keys, out[0].data.payload);
  REQUIRE_FALSE(clear);
  CHECK_THAT(clear.err().message, Catch::Contains("integrity check"));
}
