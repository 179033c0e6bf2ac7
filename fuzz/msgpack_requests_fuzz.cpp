// libFuzzer target: the msgpack door's reading. The input is cut into frames
// as a connection cuts its bytes (a 4-byte big-endian length, then the body;
// limit 1 MiB); each body is decoded as a request and read by every op's
// reader (the body rules shared with HTTP, and the msgpack-only ones). Each
// answers a value or an API error with a message; nothing may crash, and
// errors are the 400-class ones; an ok answer's frame is written.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/check.hpp"
#include "protocol/api/mp_requests.hpp"
#include "protocol/api/requests.hpp"
#include "wire/frame.hpp"
#include "wire/writer.hpp"

namespace {

template <class T>
void check(const spool::expected<T>& r) {
  spool::fuzz::check(r, [](const std::string& m) { // into an error frame
    spool::mp::writer w;
    w.begin_object().kv("message", m).end_object();
    w.take_frame();
  });
}

void read_every_op(const spool::mp::object& req) {
  using namespace spool;
  check(api::read_push_body(req));
  check(api::read_ack_batch_body(req));
  check(api::read_txn_body(req));
  check(api::read_seek_body(req));
  check(api::read_subscription_body(req));
  check(api::read_configure_body(req));
  check(api::read_extend_body(req));
  check(api::read_dlq_filter_body(req));
  check(mp::read_hello(req));
  check(mp::read_pop(req));
  check(mp::read_compact(req));
  check(mp::read_extend(req));
  check(mp::read_seek(req));
  check(mp::read_subscription(req));
  check(mp::read_queue_name(req, true));
  check(mp::read_purge(req));
  check(mp::read_browse(req));
  check(mp::read_promote(req));
  check(mp::read_groups(req));
  check(mp::read_delete_group(req));
  check(mp::read_dlq_query(req));
  check(mp::read_dlq_delete(req));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string_view in{reinterpret_cast<const char*>(data), size};
  for (int frames = 0; frames < 16; ++frames) {
    auto cut = spool::mp::cut_frame(in, 1u << 20);
    if (cut.kind == spool::mp::frame_cut::too_large) {
      if (cut.length <= (1u << 20))
        std::abort();
      return 0;
    }
    if (cut.kind == spool::mp::frame_cut::need_more) {
      // A bare body (no prefix) is decoded too: most inputs are one.
      if (frames == 0) {
        std::uint64_t id = 0;
        auto f = spool::mp::decode_request(in, id);
        check(f);
        if (f)
          read_every_op(*f->root);
      }
      return 0;
    }
    std::uint64_t id = 0;
    auto f = spool::mp::decode_request(in.substr(4, cut.length), id);
    check(f);
    if (f)
      read_every_op(*f->root);
    in.remove_prefix(4 + cut.length);
  }
  return 0;
}
