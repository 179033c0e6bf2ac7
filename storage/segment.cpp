#include "storage/segment.hpp"

#define XXH_STATIC_LINKING_ONLY // stack-allocated XXH64 state
#include <xxhash.h>
#include <zstd.h>

#include <cstring>

#include "cipher/envelope.hpp"
#include "storage/keys.hpp"
#include "storage/serial.hpp"
#include "vocab/message_id.hpp"

namespace spool::storage {

namespace {

constexpr std::uint8_t magic = 'S';
constexpr std::uint8_t frame_flag_binary = 1;
constexpr std::uint8_t frame_flag_client_id = 2;
constexpr std::uint8_t frame_flag_encrypted = 4;
/// Checksummed part of the header: everything before the checksum field.
constexpr std::size_t checksummed_header = 32;

void put_u32(char* out, std::uint32_t x) {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<char>((x >> (24 - 8 * i)) & 0xff);
}

std::uint32_t get_u32(const char* in) {
  std::uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x = (x << 8) | static_cast<std::uint8_t>(in[i]);
  return x;
}

void put_u64(char* out, std::uint64_t x) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((x >> (56 - 8 * i)) & 0xff);
}

void put_str(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

bool get_str(std::string_view& in, std::string_view& s) {
  std::uint64_t n = 0;
  if (!get_varint(in, n) || n > in.size())
    return false;
  s = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

std::uint64_t checksum_of(std::string_view header, std::string_view body) {
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  XXH64_update(&state, header.data(), checksummed_header);
  XXH64_update(&state, body.data(), body.size());
  return XXH64_digest(&state);
}

struct dctx_deleter {
  void operator()(ZSTD_DCtx* p) const {
    ZSTD_freeDCtx(p);
  }
};

/// Per-thread decompression context (pure cache; no shared state).
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, dctx_deleter> ctx{ZSTD_createDCtx()};
  return ctx.get();
}

/// One parsed frame, as views into the raw body.
struct frame_view {
  std::uint8_t flags = 0;
  std::string_view txid, trace, sub, payload;
  std::vector<std::pair<std::string_view, std::string_view>> headers;
};

bool parse_frame(std::string_view& in, frame_view& f) {
  if (in.empty())
    return false;
  f.flags = static_cast<std::uint8_t>(in.front());
  in.remove_prefix(1);
  if (!get_str(in, f.txid) || !get_str(in, f.trace) || !get_str(in, f.sub))
    return false;
  std::uint64_t n = 0;
  if (!get_varint(in, n) || n > in.size())
    return false;
  f.headers.clear();
  for (std::uint64_t i = 0; i < n; ++i) {
    auto& [k, v] = f.headers.emplace_back();
    if (!get_str(in, k) || !get_str(in, v))
      return false;
  }
  return get_str(in, f.payload);
}

/// Verifies the checksum and yields the raw (decompressed) frame bytes.
error corrupt(const segment_location& at, std::string_view problem) {
  return make_error(ec::corrupt_segment, at.partition, ": segment at offset ",
                    at.base.value, ": ", problem);
}

expected<void> verify_checksum(std::string_view bytes, const segment_header& h,
                               const segment_location& at) {
  if (checksum_of(bytes, bytes.substr(segment_header_size)) != h.checksum)
    return corrupt(at, "checksum mismatch");
  return {};
}

expected<std::string_view> verified_body(std::string_view bytes,
                                         const segment_header& h,
                                         const segment_location& at,
                                         std::string& scratch) {
  auto body = bytes.substr(segment_header_size);
  SPOOL_TRY(verify_checksum(bytes, h, at));
  if (h.codec == segment_codec::none)
    return body;
  scratch.resize(h.raw_size);
  auto n = ZSTD_decompressDCtx(thread_dctx(), scratch.data(), scratch.size(),
                               body.data(), body.size());
  if (ZSTD_isError(n) || n != h.raw_size)
    return corrupt(at, "decompression failed");
  return std::string_view{scratch};
}

} // namespace

expected<void> check_frame(const frame& f, const frame_limits& limits) {
  // A frame already encrypted (given back to an encoder) carries its
  // envelope.
  auto overhead = is_encrypted(f.encoding) ? cipher::envelope_overhead : 0;
  if (f.payload.size() > limits.max_payload_bytes + overhead)
    return make_error(ec::frame_too_large, "payload exceeds ",
                      limits.max_payload_bytes, " bytes");
  if (f.transaction_id.size() > limits.max_id_bytes)
    return make_error(ec::frame_too_large, "transactionId exceeds ",
                      limits.max_id_bytes, " bytes");
  if (f.origin == txid_origin::client && f.transaction_id.empty())
    return make_error(ec::invalid_argument,
                      "client-given transactionId is empty");
  if (f.trace_id.size() > limits.max_id_bytes)
    return make_error(ec::frame_too_large, "traceId exceeds ",
                      limits.max_id_bytes, " bytes");
  if (f.producer_sub.size() > limits.max_id_bytes)
    return make_error(ec::frame_too_large, "producerSub exceeds ",
                      limits.max_id_bytes, " bytes");
  if (f.headers.size() > limits.max_headers)
    return make_error(ec::frame_too_large, "headers exceed ",
                      limits.max_headers, " entries");
  std::size_t header_bytes = 0;
  for (auto& [k, v] : f.headers)
    header_bytes += k.size() + v.size();
  if (header_bytes > limits.max_header_bytes)
    return make_error(ec::frame_too_large, "headers exceed ",
                      limits.max_header_bytes, " bytes");
  if (f.encoding > enum_limit(payload_encoding{}))
    return make_error(ec::invalid_argument, "unknown payload encoding");
  return {};
}

// -- encoder ------------------------------------------------------------------

struct segment_encoder::impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  cipher::encryptor crypt;
  std::string compressed;
  ~impl() {
    ZSTD_freeCCtx(cctx);
  }
};

segment_encoder::segment_encoder(compression mode) :
    mode_(mode), impl_(std::make_unique<impl>()) {
}

segment_encoder::~segment_encoder() = default;

segment_encoder& thread_encoder(compression mode) {
  thread_local segment_encoder off{compression::off};
  thread_local segment_encoder zstd{compression::zstd_when_smaller};
  return mode == compression::off ? off : zstd;
}

void segment_encoder::encrypt_with(
    std::shared_ptr<const cipher::keyring> keys) noexcept {
  keys_ = std::move(keys);
}

std::size_t segment_encoder::added_per_payload(const frame& f) const noexcept {
  return keys_ && !is_encrypted(f.encoding) ? cipher::envelope_overhead : 0;
}

expected<std::string> segment_encoder::encode(offset base, micros created_at,
                                              std::span<const frame> frames,
                                              std::string_view id_space) {
  std::vector<const frame*> ptrs;
  ptrs.reserve(frames.size());
  for (auto& f : frames)
    ptrs.push_back(&f);
  return encode(base, created_at, ptrs, id_space);
}

expected<std::string>
segment_encoder::encode(offset base, micros created_at,
                        std::span<const frame* const> frames,
                        std::string_view id_space) {
  if (frames.empty())
    return make_error(ec::invalid_argument, "a segment needs at least a frame");
  if (frames.size() > UINT32_MAX)
    return make_error(ec::frame_too_large, "too many frames for one segment");
  raw_.clear();
  std::uint8_t seg_flags = 0;
  bool any_encrypted = false;
  auto at = base;
  for (const frame* fp : frames) {
    const frame& f = *fp;
    auto off = at;
    at = at + 1;
    std::uint8_t flags = 0;
    bool encrypt = added_per_payload(f) > 0;
    if (is_binary(f.encoding))
      flags |= frame_flag_binary;
    if (encrypt || is_encrypted(f.encoding)) {
      flags |= frame_flag_encrypted;
      any_encrypted = true;
    }
    if (f.origin == txid_origin::client) {
      flags |= frame_flag_client_id;
      seg_flags |= segment_flag_client_ids;
    }
    raw_.push_back(static_cast<char>(flags));
    if (f.origin == txid_origin::generated && f.transaction_id.empty()
        && !id_space.empty())
      put_str(raw_, message_uuid(id_space, off.value));
    else
      put_str(raw_, f.transaction_id);
    put_str(raw_, f.trace_id);
    put_str(raw_, f.producer_sub);
    put_varint(raw_, f.headers.size());
    for (auto& [k, v] : f.headers) {
      put_str(raw_, k);
      put_str(raw_, v);
    }
    if (!encrypt) {
      put_str(raw_, f.payload);
      continue;
    }
    put_varint(raw_, f.payload.size() + cipher::envelope_overhead);
    if (auto ok = impl_->crypt.encrypt(*keys_, f.payload, raw_); !ok)
      return make_error(ok.err().code == errc::too_large ? ec::frame_too_large
                                                         : ec::encryption_error,
                        ok.err().message);
  }
  if (raw_.size() > UINT32_MAX)
    return make_error(ec::frame_too_large, "segment body of ", raw_.size(),
                      " bytes exceeds 4 GiB");
  std::string_view body = raw_;
  auto codec = segment_codec::none;
  if (mode_ == compression::zstd_when_smaller && raw_.size() >= 64) {
    auto& out = impl_->compressed;
    out.resize(ZSTD_compressBound(raw_.size()));
    auto n = ZSTD_compressCCtx(impl_->cctx, out.data(), out.size(), raw_.data(),
                               raw_.size(), 1);
    if (ZSTD_isError(n))
      return make_error(ec::compression_error, "zstd: ", ZSTD_getErrorName(n));
    if (n < raw_.size()) {
      body = std::string_view{out.data(), n};
      codec = segment_codec::zstd;
    }
  }
  std::string seg;
  seg.resize(segment_header_size + body.size());
  char* h = seg.data();
  h[0] = static_cast<char>(magic);
  h[1] = static_cast<char>(any_encrypted ? segment_format_encrypted
                                         : segment_format_version);
  h[2] = static_cast<char>(codec);
  h[3] = static_cast<char>(seg_flags);
  put_u32(h + 4, static_cast<std::uint32_t>(frames.size()));
  put_u64(h + 8, static_cast<std::uint64_t>(base.value));
  put_u64(h + 16, static_cast<std::uint64_t>(created_at));
  put_u32(h + 24, static_cast<std::uint32_t>(raw_.size()));
  put_u32(h + 28, static_cast<std::uint32_t>(body.size()));
  std::memcpy(h + segment_header_size, body.data(), body.size());
  put_u64(h + 32, checksum_of(seg, body));
  return seg;
}

// -- decoding -----------------------------------------------------------------

expected<segment_header> peek_segment_header(std::string_view bytes,
                                             const segment_location& at) {
  if (bytes.size() < segment_header_size)
    return corrupt(at, "truncated header (" + std::to_string(bytes.size())
                           + " bytes)");
  segment_header h;
  const char* p = bytes.data();
  if (static_cast<std::uint8_t>(p[0]) != magic)
    return corrupt(at, "bad magic");
  h.version = static_cast<std::uint8_t>(p[1]);
  if (h.version != segment_format_version
      && h.version != segment_format_encrypted)
    return corrupt(at, "unknown format version " + std::to_string(h.version));
  auto codec = static_cast<std::uint8_t>(p[2]);
  if (codec > 1)
    return corrupt(at, "unknown codec " + std::to_string(codec));
  h.codec = static_cast<segment_codec>(codec);
  h.flags = static_cast<std::uint8_t>(p[3]);
  h.frame_count = get_u32(p + 4);
  h.base = offset{static_cast<std::int64_t>(keys::get_u64(bytes, 8))};
  h.created_at = static_cast<micros>(keys::get_u64(bytes, 16));
  h.raw_size = get_u32(p + 24);
  h.stored_size = get_u32(p + 28);
  h.checksum = keys::get_u64(bytes, 32);
  if (h.frame_count == 0)
    return corrupt(at, "no frames");
  if (h.base.value < 0 || h.base.value > INT64_MAX - h.frame_count)
    return corrupt(at, "base offset out of range");
  if (h.base != at.base)
    return corrupt(at, "header names offset " + std::to_string(h.base.value));
  if (bytes.size() != segment_header_size + h.stored_size)
    return corrupt(at, "truncated body (" + std::to_string(bytes.size())
                           + " of "
                           + std::to_string(segment_header_size + h.stored_size)
                           + " bytes)");
  if (h.codec == segment_codec::none && h.raw_size != h.stored_size)
    return corrupt(at, "size mismatch");
  return h;
}

expected<segment_header> verify_segment(std::string_view bytes,
                                        const segment_location& at) {
  auto h = peek_segment_header(bytes, at);
  if (!h)
    return h;
  SPOOL_TRY(verify_checksum(bytes, *h, at));
  return h;
}

expected<segment_header> decode_segment(std::string_view bytes,
                                        const segment_location& at,
                                        std::vector<stored_frame>& out,
                                        offset from, std::size_t max_frames,
                                        std::size_t max_bytes) {
  auto h = peek_segment_header(bytes, at);
  if (!h)
    return h;
  // Per-thread: the frames below are copied out of it before returning. A
  // huge segment's buffer is not kept for the thread's lifetime.
  thread_local std::string scratch;
  struct trim {
    std::string& s;
    ~trim() {
      if (s.capacity() > (std::size_t{16} << 20))
        std::string().swap(s);
    }
  } trim_scratch{scratch};
  auto raw = verified_body(bytes, *h, at, scratch);
  if (!raw)
    return std::move(raw).err();
  std::string_view in = *raw;
  auto bad_frame = [&](std::uint32_t i) {
    return corrupt(at, "frame at offset " + std::to_string(h->base.value + i)
                           + " malformed");
  };
  frame_view fv;
  std::size_t taken = 0;
  std::size_t bytes_taken = 0;
  for (std::uint32_t i = 0; i < h->frame_count; ++i) {
    if (!parse_frame(in, fv))
      return bad_frame(i);
    auto off = h->base + i;
    if (off < from || taken >= max_frames)
      continue;
    if (!out.empty() && bytes_taken + fv.payload.size() > max_bytes) {
      taken = max_frames; // stop taking, keep validating the rest
      continue;
    }
    auto& sf = out.emplace_back();
    sf.off = off;
    sf.created_at = h->created_at;
    auto& f = sf.data;
    f.encoding = with_encryption((fv.flags & frame_flag_binary)
                                     ? payload_encoding::binary
                                     : payload_encoding::json,
                                 (fv.flags & frame_flag_encrypted) != 0);
    f.origin = (fv.flags & frame_flag_client_id) ? txid_origin::client
                                                 : txid_origin::generated;
    f.transaction_id = fv.txid;
    f.trace_id = fv.trace;
    f.producer_sub = fv.sub;
    f.headers.reserve(fv.headers.size());
    for (auto& [k, v] : fv.headers)
      f.headers.emplace_back(std::string{k}, std::string{v});
    f.payload = fv.payload;
    ++taken;
    bytes_taken += fv.payload.size();
  }
  if (!in.empty())
    return corrupt(at, "trailing bytes after the frames");
  return h;
}

expected<std::vector<std::pair<std::string, offset>>>
segment_client_ids(std::string_view bytes, const segment_location& at) {
  auto h = peek_segment_header(bytes, at);
  if (!h)
    return std::move(h).err();
  std::vector<std::pair<std::string, offset>> ids;
  // Trust the flag only once the checksum says the header is intact.
  SPOOL_TRY(verify_checksum(bytes, *h, at));
  if ((h->flags & segment_flag_client_ids) == 0)
    return ids;
  std::string scratch;
  auto raw = verified_body(bytes, *h, at, scratch);
  if (!raw)
    return std::move(raw).err();
  std::string_view in = *raw;
  frame_view fv;
  for (std::uint32_t i = 0; i < h->frame_count; ++i) {
    if (!parse_frame(in, fv))
      return corrupt(at, "frame at offset " + std::to_string(h->base.value + i)
                             + " malformed");
    if (fv.flags & frame_flag_client_id)
      ids.emplace_back(std::string{fv.txid}, h->base + i);
  }
  return ids;
}

} // namespace spool::storage
