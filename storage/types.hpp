#pragma once

/// Vocabulary types of the storage layer: frames, and the ids and offsets of
/// the shared vocabulary under their storage names.

#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vocab/ids.hpp"
#include "vocab/slot.hpp"
#include "vocab/time.hpp"

namespace spool::storage {

// The ids, offsets and wall time are the shared vocabulary's (vocab/).
using spool::micros;
using spool::offset;
using spool::partition_id;
using spool::queue_id;
using spool::slot_t;
using spool::strong_id;

/// "partition <queue>/<partition>", the prefix of storage error messages.
inline std::string describe_partition(queue_id q, partition_id p) {
  return "partition " + std::to_string(q.value) + "/" + std::to_string(p.value);
}

/// How a payload is to be presented to consumers, and whether it is stored
/// encrypted (cipher/envelope.hpp; docs/security.md "Encryption at rest").
/// One byte in every record that holds a frame, so an encrypted frame keeps
/// its mark through DLQ entries and requeues, and records stored before
/// encryption existed read unchanged.
enum class payload_encoding : std::uint8_t {
  json = 0,
  binary = 1,
  json_encrypted = 2,
  binary_encrypted = 3,
};

constexpr bool is_binary(payload_encoding e) {
  return (static_cast<std::uint8_t>(e) & 1) != 0;
}
constexpr bool is_encrypted(payload_encoding e) {
  return (static_cast<std::uint8_t>(e) & 2) != 0;
}
/// `e` with its encrypted mark set or cleared.
constexpr payload_encoding with_encryption(payload_encoding e, bool on) {
  return static_cast<payload_encoding>((static_cast<std::uint8_t>(e) & 1)
                                       | (on ? 2 : 0));
}

/// Where a frame's transaction id came from. Only client-given ids are
/// indexed for deduplication.
enum class txid_origin : std::uint8_t { generated = 0, client = 1 };

/// The highest value of each serialized enum (the decoder rejects others).
constexpr payload_encoding enum_limit(payload_encoding) {
  return payload_encoding::binary_encrypted;
}
constexpr txid_origin enum_limit(txid_origin) {
  return txid_origin::client;
}

/// One message as a producer hands it to storage.
struct frame {
  std::string transaction_id;
  txid_origin origin = txid_origin::generated;
  std::string trace_id;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string producer_sub;
  payload_encoding encoding = payload_encoding::json;
  std::string payload;

  friend bool operator==(const frame&, const frame&) = default;

  template <class F>
  friend auto fields(F& f, frame& x) {
    return f(x.transaction_id, x.origin, x.trace_id, x.headers, x.producer_sub,
             x.encoding, x.payload);
  }
};

/// A frame as stored: with its offset and its segment's commit time.
struct stored_frame {
  offset off;
  micros created_at = 0;
  frame data;

  friend bool operator==(const stored_frame&, const stored_frame&) = default;

  template <class F>
  friend auto fields(F& f, stored_frame& x) {
    return f(x.off, x.created_at, x.data);
  }
};

/// Size limits a frame must respect (semantics.md §1).
struct frame_limits {
  std::size_t max_payload_bytes = 8u << 20;
  std::size_t max_id_bytes = 255;
  std::size_t max_headers = 64;
  std::size_t max_header_bytes = 16u << 10;
};

} // namespace spool::storage
