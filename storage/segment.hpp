#pragma once

/// The segment format (semantics.md §1): one segment is written by exactly one
/// commit and never appended to. Layout:
///
///   header, 40 bytes, big-endian:
///     u8 magic 'S' | u8 format version | u8 codec | u8 flags
///     u32 frame count | i64 base offset | i64 created_at µs
///     u32 raw size | u32 stored size | u64 xxh64(header[0..32) + body)
///   body: `stored size` bytes; the frames, zstd-compressed when codec = 1.
///   frame: u8 flags (bit0 binary payload, bit1 client-given id, bit2
///          payload encrypted at rest: an envelope of cipher/envelope.hpp)
///          varint-length-prefixed transaction id, trace id, producer sub,
///          varint header count + (key, value) pairs, payload.
///
/// Decoding verifies sizes and the checksum before looking at the frames, so
/// corrupt or truncated bytes are reported, never returned as data.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/error.hpp"

namespace spool::cipher {
class keyring;
}
#include "storage/types.hpp"

namespace spool::storage {

inline constexpr std::uint8_t segment_format_version = 1;
/// The version of a segment holding an encrypted frame: a build that knows
/// only version 1 refuses it as corrupt instead of giving an envelope out
/// as a payload (there is no downgrade once a queue encrypts).
inline constexpr std::uint8_t segment_format_encrypted = 2;
inline constexpr std::size_t segment_header_size = 40;

enum class segment_codec : std::uint8_t { none = 0, zstd = 1 };

/// Header flag: at least one frame carries a client-given (indexed) id.
inline constexpr std::uint8_t segment_flag_client_ids = 1;

/// Whether the encoder may compress.
enum class compression : std::uint8_t {
  off,               ///< store frames raw
  zstd_when_smaller, ///< zstd level 1, kept only when it shrinks the body
};

struct segment_header {
  std::uint8_t version = segment_format_version;
  segment_codec codec = segment_codec::none;
  std::uint8_t flags = 0;
  std::uint32_t frame_count = 0;
  offset base;
  micros created_at = 0;
  std::uint32_t raw_size = 0;
  std::uint32_t stored_size = 0;
  std::uint64_t checksum = 0;

  offset last() const noexcept {
    return base + (static_cast<std::int64_t>(frame_count) - 1);
  }
  offset end() const noexcept {
    return base + static_cast<std::int64_t>(frame_count);
  }
};

/// Where a segment is stored: names it in errors and is checked against the
/// header, so a segment under the wrong key is corrupt too.
struct segment_location {
  std::string_view partition; ///< e.g. "partition 3/7"
  offset base;                ///< the base offset of its key
};

/// Checks one frame against the limits; the error names the field.
expected<void> check_frame(const frame& f, const frame_limits& limits);

/// Builds segments. Owns a zstd context; one per thread/actor.
class segment_encoder {
public:
  explicit segment_encoder(compression mode = compression::zstd_when_smaller);
  ~segment_encoder();
  segment_encoder(const segment_encoder&) = delete;
  segment_encoder& operator=(const segment_encoder&) = delete;

  /// Encodes `frames` (1..n, already validated) as one segment. A frame
  /// with a generated, empty transactionId is stored with its message id
  /// (vocab/message_id.hpp) in `id_space`, its partition's uuid, when given.
  expected<std::string> encode(offset base, micros created_at,
                               std::span<const frame> frames,
                               std::string_view id_space = {});
  expected<std::string> encode(offset base, micros created_at,
                               std::span<const frame* const> frames,
                               std::string_view id_space = {});

  /// While set, every payload not yet encrypted is encrypted under
  /// `keys->current()` (its frame's encoding gains the mark); none: payloads
  /// are stored as given. Set where the write is proposed (the partition's
  /// seal, from its queue's `encryptionEnabled`): apply never encrypts.
  void encrypt_with(std::shared_ptr<const cipher::keyring> keys) noexcept;

  /// The bytes `encode` adds to `f`'s payload: the envelope while
  /// encrypting a payload not yet encrypted, else 0. Segment cuts count it.
  std::size_t added_per_payload(const frame& f) const noexcept;

private:
  struct impl;
  compression mode_;
  std::shared_ptr<const cipher::keyring> keys_;
  std::unique_ptr<impl> impl_;
  std::string raw_;
};

/// This thread's encoder for `mode`: one zstd context and its buffers per
/// worker thread, not per partition (an encoder holds what its largest
/// segment needed). Whoever uses it sets `encrypt_with` before each
/// encode, and keeps it no longer than one synchronous call.
segment_encoder& thread_encoder(compression mode);

/// Reads and validates the fixed header (sizes, magic, version, base offset)
/// without verifying the checksum. Errors read "<partition>: segment at offset
/// <base>: <problem>".
expected<segment_header> peek_segment_header(std::string_view bytes,
                                             const segment_location& at);

/// Checks the header and the checksum of the stored bytes, without
/// decompressing: what the writer checks before storing a segment.
expected<segment_header> verify_segment(std::string_view bytes,
                                        const segment_location& at);

/// Fully verifies the segment and appends frames with offset >= `from` to
/// `out`, at most `max_frames`, stopping before `max_bytes` of payload is
/// exceeded; a frame is always taken while `out` is empty, so a read across
/// segments into one vector returns at least one frame. Returns the header.
expected<segment_header> decode_segment(std::string_view bytes,
                                        const segment_location& at,
                                        std::vector<stored_frame>& out,
                                        offset from = offset{0},
                                        std::size_t max_frames = SIZE_MAX,
                                        std::size_t max_bytes = SIZE_MAX);

/// The client-given transaction ids in a segment, with their offsets.
expected<std::vector<std::pair<std::string, offset>>>
segment_client_ids(std::string_view bytes, const segment_location& at);

} // namespace spool::storage
