#pragma once

/// The messages of message traces (storage/traces.hpp): attaching one to a
/// message, and the three reads (by message, by name, the names).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/broker/trace_reads.hpp"
#include "storage/records.hpp"
#include "storage/traces.hpp"
#include "storage/types.hpp"
#include "vocab/errors.hpp"

namespace spool::actors {

/// A trace for the message with this transactionId in the partition with
/// this uuid; the broker gives it its id and creation time.
struct trace_put_request {
  std::string partition_uuid;
  std::string transaction_id;
  storage::trace_record rec;
};

struct trace_put_reply {
  std::string id;
  std::optional<api_error> failure;
};

/// The traces of one message (request: a `find_request`), oldest first.
struct trace_list_reply {
  std::vector<storage::trace_record> traces;
  std::optional<api_error> failure;
};

struct trace_named_request {
  std::string name;
  std::size_t limit = 100;
  std::size_t skip = 0;
};

struct trace_named_reply {
  std::vector<core::trace_hit> hits; ///< newest first
  std::uint64_t total = 0;
  std::optional<api_error> failure;
};

struct trace_names_request {
  std::size_t limit = 50;
  std::size_t skip = 0;
};

struct trace_names_reply {
  std::vector<storage::traces::name_stats> names;
  std::uint64_t total = 0;
  std::optional<api_error> failure;
};

} // namespace spool::actors
