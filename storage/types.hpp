#pragma once

/// Vocabulary types of the storage layer: strong ids and offsets, frames.

#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spool::storage {

/// A distinct integer type per kind of id, so a partition id cannot be passed
/// where a queue id is expected.
template <class Tag, class Rep>
struct strong_id {
  using rep = Rep;
  Rep value{};

  constexpr strong_id() = default;
  constexpr explicit strong_id(Rep v) : value(v) {
  }
  friend constexpr auto operator<=>(const strong_id&, const strong_id&)
      = default;

  template <class F>
  friend auto fields(F& f, strong_id& x) {
    return f(x.value);
  }
};

/// Internal id of a queue (never reused, also after deletion).
using queue_id = strong_id<struct queue_id_tag, std::uint64_t>;
/// Internal id of a partition, unique across all queues, never reused.
using partition_id = strong_id<struct partition_id_tag, std::uint64_t>;

/// A position in a partition's log. -1 is "before offset 0".
struct offset {
  std::int64_t value = 0;

  constexpr offset() = default;
  constexpr explicit offset(std::int64_t v) : value(v) {
  }
  friend constexpr auto operator<=>(const offset&, const offset&) = default;
  friend constexpr offset operator+(offset o, std::int64_t n) {
    return offset{o.value + n};
  }
  friend constexpr offset operator-(offset o, std::int64_t n) {
    return offset{o.value - n};
  }
  friend constexpr std::int64_t operator-(offset a, offset b) {
    return a.value - b.value;
  }

  template <class F>
  friend auto fields(F& f, offset& x) {
    return f(x.value);
  }
};

/// "partition <queue>/<partition>", the prefix of storage error messages.
inline std::string describe_partition(queue_id q, partition_id p) {
  return "partition " + std::to_string(q.value) + "/" + std::to_string(p.value);
}

/// Wall-clock time in microseconds since the Unix epoch (UTC).
using micros = std::int64_t;

/// How a payload is to be presented to consumers.
enum class payload_encoding : std::uint8_t { json = 0, binary = 1 };

/// Where a frame's transaction id came from. Only client-given ids are
/// indexed for deduplication.
enum class txid_origin : std::uint8_t { generated = 0, client = 1 };

/// The highest value of each serialized enum (the decoder rejects others).
constexpr payload_encoding enum_limit(payload_encoding) {
  return payload_encoding::binary;
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
