// Claim in the append: the frames a parked pop is staged on before the push
// bringing them is stored (core/push/claim_frames).

#include <catch2/catch.hpp>

#include "core/push/claim_frames.hpp"
#include "vocab/message_id.hpp"

using namespace spool;
using storage::frame_result;
using storage::offset;

namespace {

storage::frame frame_of(std::string payload, std::string txid = {}) {
  storage::frame f;
  f.payload = std::move(payload);
  if (!txid.empty()) {
    f.transaction_id = std::move(txid);
    f.origin = storage::txid_origin::client;
  }
  return f;
}

} // namespace

TEST_CASE("claimed frames are the sealed ones a read will return: "
          "duplicates left out, a generated transactionId is the message id",
          "[unit][push][claim]") {
  storage::sealed_append sealed;
  sealed.created_at = 42;
  sealed.results = {{frame_result::queued, offset{7}},
                    {frame_result::duplicate, offset{3}},
                    {frame_result::queued, offset{8}}};
  std::vector<storage::frame> copies{frame_of("a"), frame_of("dup", "t1"),
                                     frame_of("b", "mine")};
  std::string uuid = "0123456789abcdef0123456789abcdef";
  auto out = core::sealed_frames(sealed, copies, 10, uuid);
  REQUIRE(out.size() == 2);
  CHECK(out[0].off == offset{7});
  CHECK(out[0].created_at == 42);
  CHECK(out[0].data.payload == "a");
  CHECK(out[0].data.transaction_id == message_uuid(uuid, 7));
  CHECK(out[1].off == offset{8});
  CHECK(out[1].data.transaction_id == "mine"); // the client's own
  // At most `batch`; without a uuid a generated id stays empty.
  auto one = core::sealed_frames(sealed, copies, 1, "");
  REQUIRE(one.size() == 1);
  CHECK(one[0].data.transaction_id.empty());
}

TEST_CASE("a claim copies at most claim_frames frames of each partition",
          "[unit][push][claim]") {
  std::vector<std::vector<storage::frame>> frames(2);
  frames[0].resize(core::claim_frames + 5, frame_of("x"));
  frames[1] = {frame_of("y")};
  auto copies = core::claim_copies(frames);
  REQUIRE(copies.size() == 2);
  CHECK(copies[0].size() == core::claim_frames);
  CHECK(copies[1] == frames[1]);
}
