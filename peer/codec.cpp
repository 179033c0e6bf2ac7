#include "peer/codec.hpp"

#include <msgpack.hpp>

#include <algorithm>
#include <optional>

namespace spool::peer {

using namespace spool::cluster;

namespace {

enum class frame_kind : std::uint8_t { hello = 1, proof = 2, slot = 3 };
enum class msg_kind : std::uint8_t {
  fence_req = 1,
  fence_rep = 2,
  lead_req = 3,
  append_req = 4,
  append_rep = 5,
  snapshot_req = 6,
  snapshot_rep = 7,
};

struct sink {
  std::string s;
  void write(const char* p, std::size_t n) {
    s.append(p, n);
  }
};
using packer = msgpack::packer<sink>;

void bin(packer& pk, std::string_view v) {
  pk.pack_bin(static_cast<std::uint32_t>(v.size()));
  pk.pack_bin_body(v.data(), static_cast<std::uint32_t>(v.size()));
}

void str(packer& pk, std::string_view v) {
  pk.pack_str(static_cast<std::uint32_t>(v.size()));
  pk.pack_str_body(v.data(), static_cast<std::uint32_t>(v.size()));
}

template <class T>
void opt(packer& pk, const std::optional<T>& v) {
  if (v)
    pk.pack_uint64(static_cast<std::uint64_t>(*v));
  else
    pk.pack_nil();
}

void pack_msg(packer& pk, slot_t slot, const envelope& e) {
  auto head = [&](msg_kind k, std::uint32_t fields) {
    pk.pack_array(5 + fields);
    pk.pack_uint8(static_cast<std::uint8_t>(frame_kind::slot));
    pk.pack_uint16(slot);
    pk.pack_uint32(index_of(e.from));
    pk.pack_uint32(index_of(e.to));
    pk.pack_uint8(static_cast<std::uint8_t>(k));
  };
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, fence_req>) {
          head(msg_kind::fence_req, 2);
          pk.pack_uint64(m.epoch);
          opt(pk, m.expect);
        } else if constexpr (std::is_same_v<T, fence_rep>) {
          head(msg_kind::fence_rep, 7);
          pk.pack_uint64(m.asked);
          pk.pack(m.granted);
          pk.pack_uint64(m.epoch);
          if (m.leader)
            pk.pack_uint32(index_of(*m.leader));
          else
            pk.pack_nil();
          pk.pack_uint64(m.log_end.epoch);
          pk.pack_uint64(m.log_end.seq);
          pk.pack(m.damaged);
        } else if constexpr (std::is_same_v<T, lead_req>) {
          head(msg_kind::lead_req, 1);
          pk.pack_uint64(m.epoch);
        } else if constexpr (std::is_same_v<T, append_req>) {
          head(msg_kind::append_req, 5);
          pk.pack_uint64(m.epoch);
          pk.pack_uint64(m.prev.epoch);
          pk.pack_uint64(m.prev.seq);
          pk.pack_uint64(m.commit);
          pk.pack_array(static_cast<std::uint32_t>(m.entries.size()));
          for (const auto& x : m.entries) {
            pk.pack_array(5);
            pk.pack_uint64(x.epoch);
            pk.pack_uint64(x.seq);
            pk.pack_uint8(static_cast<std::uint8_t>(x.kind));
            bin(pk, x.payload);
            pk.pack_uint64(x.checksum);
          }
        } else if constexpr (std::is_same_v<T, append_rep>) {
          head(msg_kind::append_rep, 6);
          pk.pack_uint64(m.epoch);
          pk.pack_uint8(static_cast<std::uint8_t>(m.refused));
          pk.pack_uint64(m.match);
          pk.pack_uint64(m.hint.epoch);
          pk.pack_uint64(m.hint.seq);
          pk.pack_uint64(m.asked);
        } else if constexpr (std::is_same_v<T, snapshot_req>) {
          head(msg_kind::snapshot_req, 9);
          pk.pack_uint64(m.epoch);
          pk.pack_uint64(m.commit);
          pk.pack_uint64(m.piece.copy);
          pk.pack_uint64(m.piece.through.epoch);
          pk.pack_uint64(m.piece.through.seq);
          pk.pack_uint32(m.piece.index);
          pk.pack(m.piece.last);
          bin(pk, m.piece.data);
          pk.pack_uint64(m.piece.checksum);
        } else {
          static_assert(std::is_same_v<T, snapshot_rep>);
          head(msg_kind::snapshot_rep, 3);
          pk.pack_uint64(m.epoch);
          pk.pack_uint64(m.copy);
          pk.pack_uint32(m.taken);
        }
      },
      e.msg);
}

// --- reading ---------------------------------------------------------------

/// Reads the elements of one array in order, checking each one's type; the
/// first error names the element.
class fields {
public:
  fields(const msgpack::object& a, std::string what) : what_(std::move(what)) {
    items_ = a.via.array.ptr;
    size_ = a.via.array.size;
  }
  std::size_t size() const noexcept {
    return size_;
  }
  bool ok() const noexcept {
    return error_.empty();
  }
  const std::string& error() const noexcept {
    return error_;
  }

  std::uint64_t u64(const char* name, std::uint64_t max = UINT64_MAX) {
    auto* o = next(name);
    if (!o)
      return 0;
    if (o->type != msgpack::type::POSITIVE_INTEGER || o->via.u64 > max) {
      fail(name, "must be an unsigned integer up to " + std::to_string(max));
      return 0;
    }
    return o->via.u64;
  }
  std::optional<std::uint64_t> opt_u64(const char* name,
                                       std::uint64_t max = UINT64_MAX) {
    auto* o = peek();
    if (o && o->type == msgpack::type::NIL) {
      ++at_;
      return std::nullopt;
    }
    auto v = u64(name, max);
    return ok() ? std::optional(v) : std::nullopt;
  }
  bool boolean(const char* name) {
    auto* o = next(name);
    if (!o)
      return false;
    if (o->type != msgpack::type::BOOLEAN) {
      fail(name, "must be a boolean");
      return false;
    }
    return o->via.boolean;
  }
  std::string bytes(const char* name, bool text = false) {
    auto* o = next(name);
    if (!o)
      return {};
    if (!text && o->type == msgpack::type::BIN)
      return {o->via.bin.ptr, o->via.bin.size};
    if (text && o->type == msgpack::type::STR)
      return {o->via.str.ptr, o->via.str.size};
    fail(name, text ? "must be a string" : "must be bin");
    return {};
  }
  const msgpack::object* array(const char* name) {
    auto* o = next(name);
    if (o && o->type != msgpack::type::ARRAY) {
      fail(name, "must be an array");
      return nullptr;
    }
    return o;
  }
  void fail(const char* name, const std::string& why) {
    if (error_.empty())
      error_ = what_ + ": " + name + " " + why;
  }

private:
  const msgpack::object* peek() const {
    return ok() && at_ < size_ ? &items_[at_] : nullptr;
  }
  const msgpack::object* next(const char* name) {
    if (!ok())
      return nullptr;
    if (at_ >= size_) {
      fail(name, "is missing");
      return nullptr;
    }
    return &items_[at_++];
  }

  std::string what_;
  const msgpack::object* items_ = nullptr;
  std::size_t size_ = 0;
  std::size_t at_ = 0;
  std::string error_;
};

constexpr std::uint64_t max_node = UINT32_MAX;

expected<frame> read_slot(fields& f) {
  slot_message out;
  out.slot = static_cast<slot_t>(f.u64("slot", UINT16_MAX));
  out.env.from = node_id{static_cast<std::uint32_t>(f.u64("from", max_node))};
  out.env.to = node_id{static_cast<std::uint32_t>(f.u64("to", max_node))};
  auto kind = f.u64("message kind", 255);
  std::size_t want = 0;
  switch (static_cast<msg_kind>(kind)) {
  case msg_kind::fence_req: {
    want = 7;
    fence_req m;
    m.epoch = f.u64("epoch");
    m.expect = f.opt_u64("expect");
    out.env.msg = m;
    break;
  }
  case msg_kind::fence_rep: {
    want = 12;
    fence_rep m;
    m.asked = f.u64("asked");
    m.granted = f.boolean("granted");
    m.epoch = f.u64("epoch");
    if (auto l = f.opt_u64("leader", max_node))
      m.leader = node_id{static_cast<std::uint32_t>(*l)};
    m.log_end.epoch = f.u64("log end epoch");
    m.log_end.seq = f.u64("log end seq");
    m.damaged = f.boolean("damaged");
    out.env.msg = m;
    break;
  }
  case msg_kind::lead_req:
    want = 6;
    out.env.msg = lead_req{f.u64("epoch")};
    break;
  case msg_kind::append_req: {
    want = 10;
    append_req m;
    m.epoch = f.u64("epoch");
    m.prev.epoch = f.u64("prev epoch");
    m.prev.seq = f.u64("prev seq");
    m.commit = f.u64("commit");
    if (auto* list = f.array("entries")) {
      m.entries.reserve(list->via.array.size);
      for (std::uint32_t i = 0; i < list->via.array.size && f.ok(); ++i) {
        const auto& item = list->via.array.ptr[i];
        auto at = "entries[" + std::to_string(i) + "]";
        if (item.type != msgpack::type::ARRAY) {
          f.fail(at.c_str(), "must be an array");
          break;
        }
        fields e(item, at);
        entry x;
        x.epoch = e.u64("epoch");
        x.seq = e.u64("seq");
        auto k = e.u64("kind", 1);
        x.kind = static_cast<entry_kind>(k);
        x.payload = e.bytes("payload");
        x.checksum = e.u64("checksum");
        if (e.ok() && e.size() != 5)
          e.fail("entry",
                 "has " + std::to_string(e.size()) + " elements, not 5");
        if (!e.ok())
          return make_error(errc::bad_request, "peer frame: ", e.error());
        m.entries.push_back(std::move(x));
      }
    }
    out.env.msg = std::move(m);
    break;
  }
  case msg_kind::append_rep: {
    want = 11;
    append_rep m;
    m.epoch = f.u64("epoch");
    auto r
        = f.u64("refusal", static_cast<std::uint64_t>(refusal::needs_snapshot));
    m.refused = static_cast<refusal>(r);
    m.match = f.u64("match");
    m.hint.epoch = f.u64("hint epoch");
    m.hint.seq = f.u64("hint seq");
    m.asked = f.u64("asked");
    out.env.msg = m;
    break;
  }
  case msg_kind::snapshot_req: {
    want = 14;
    snapshot_req m;
    m.epoch = f.u64("epoch");
    m.commit = f.u64("commit");
    m.piece.copy = f.u64("copy");
    m.piece.through.epoch = f.u64("through epoch");
    m.piece.through.seq = f.u64("through seq");
    m.piece.index = static_cast<std::uint32_t>(f.u64("index", UINT32_MAX));
    m.piece.last = f.boolean("last");
    m.piece.data = f.bytes("data");
    m.piece.checksum = f.u64("checksum");
    out.env.msg = std::move(m);
    break;
  }
  case msg_kind::snapshot_rep: {
    want = 8;
    snapshot_rep m;
    m.epoch = f.u64("epoch");
    m.copy = f.u64("copy");
    m.taken = static_cast<std::uint32_t>(f.u64("taken", UINT32_MAX));
    out.env.msg = m;
    break;
  }
  default:
    if (f.ok())
      f.fail("message kind", std::to_string(kind) + " is unknown");
  }
  if (f.ok() && f.size() != want)
    f.fail("frame", "has " + std::to_string(f.size()) + " elements, not "
                        + std::to_string(want));
  if (!f.ok())
    return make_error(errc::bad_request, "peer frame: ", f.error());
  return frame{std::move(out)};
}

bool reference_bytes(msgpack::type::object_type t, std::size_t, void*) {
  return t == msgpack::type::STR || t == msgpack::type::BIN;
}

} // namespace

std::string encode(const frame& f) {
  sink out;
  packer pk(out);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, hello>) {
          pk.pack_array(7);
          pk.pack_uint8(static_cast<std::uint8_t>(frame_kind::hello));
          pk.pack_uint32(x.version);
          pk.pack_uint32(index_of(x.node));
          str(pk, x.cluster_id);
          bin(pk, x.nonce);
          str(pk, x.http);
          str(pk, x.msgpack);
        } else if constexpr (std::is_same_v<T, proof>) {
          pk.pack_array(2);
          pk.pack_uint8(static_cast<std::uint8_t>(frame_kind::proof));
          bin(pk, x.mac);
        } else {
          pack_msg(pk, x.slot, x.env);
        }
      },
      f);
  return std::move(out.s);
}

std::string encode_frame(const frame& f) {
  auto body = encode(f);
  auto n = static_cast<std::uint32_t>(body.size());
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                  static_cast<char>(n >> 8), static_cast<char>(n)};
  return out + body;
}

expected<frame> decode(std::string_view body) {
  // Every element takes a byte at least: a count past the body's size is a
  // lie, refused before anything is allocated for it.
  auto n = body.size();
  msgpack::unpack_limit limits{
      std::min<std::size_t>(n, 1 << 20), 0, n, n, 0, 4};
  msgpack::zone zone;
  msgpack::object root;
  std::size_t off = 0;
  try {
    bool referenced = false;
    root = msgpack::unpack(zone, body.data(), n, off, referenced,
                           &reference_bytes, nullptr, limits);
  } catch (const msgpack::insufficient_bytes&) {
    return make_error(errc::bad_request, "peer frame: it ends inside a value");
  } catch (const msgpack::unpack_error& e) {
    return make_error(errc::bad_request, "peer frame: not msgpack (", e.what(),
                      ")");
  } catch (const std::bad_alloc&) {
    return make_error(errc::too_large, "peer frame: does not fit in memory");
  }
  if (off != n)
    return make_error(errc::bad_request,
                      "peer frame: it holds more than one value");
  if (root.type != msgpack::type::ARRAY)
    return make_error(errc::bad_request, "peer frame: must be an array");
  fields f(root, "frame");
  auto kind = f.u64("kind", 255);
  switch (static_cast<frame_kind>(kind)) {
  case frame_kind::hello: {
    hello h;
    h.version = static_cast<std::uint32_t>(f.u64("version", UINT32_MAX));
    h.node = node_id{static_cast<std::uint32_t>(f.u64("node", max_node))};
    h.cluster_id = f.bytes("cluster", true);
    h.nonce = f.bytes("nonce");
    // Another version: what the handshake needs to refuse it by version.
    if (f.ok() && h.version != protocol_version)
      return frame{std::move(h)};
    h.http = f.bytes("http", true);
    h.msgpack = f.bytes("msgpack", true);
    if (f.ok() && f.size() != 7)
      f.fail("hello", "has " + std::to_string(f.size()) + " elements, not 7");
    if (!f.ok())
      return make_error(errc::bad_request, "peer frame: ", f.error());
    return frame{std::move(h)};
  }
  case frame_kind::proof: {
    proof p{f.bytes("mac")};
    if (f.ok() && f.size() != 2)
      f.fail("proof", "has " + std::to_string(f.size()) + " elements, not 2");
    if (!f.ok())
      return make_error(errc::bad_request, "peer frame: ", f.error());
    return frame{std::move(p)};
  }
  case frame_kind::slot:
    return read_slot(f);
  default:
    if (f.ok())
      return make_error(errc::bad_request, "peer frame: kind ", kind,
                        " is unknown");
    return make_error(errc::bad_request, "peer frame: ", f.error());
  }
}

} // namespace spool::peer
