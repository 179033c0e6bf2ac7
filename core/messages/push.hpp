#pragma once

/// The messages of a push: what a queue or the broker takes and answers,
/// and the outcome of any write batch. Plain structs of the actor layer's
/// protocol (namespace `spool::actors`, as `core/writer/`), defined here
/// beside the cores so the shells hold no data definitions.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/error.hpp"
#include "storage/log.hpp"
#include "storage/records.hpp"
#include "vocab/errors.hpp"

namespace spool::actors {

/// The outcome of a write batch: durable, or the error that kept it out.
struct write_result {
  std::optional<api_error> failure;
  bool ok() const noexcept {
    return !failure;
  }
};

/// One item of a queue push.
struct push_item {
  std::string partition; ///< name; "Default" when the client named none
  storage::frame frame;
};

/// A partition a push stored items in, named once per reply.
struct push_target {
  std::string queue;
  std::string partition;
  std::string partition_uuid;
  storage::queue_id queue_id = {};
};

/// The outcome of one push item: where it went (an index into the reply's
/// `targets`) and its offset, or its original's for a duplicate.
struct push_item_result {
  std::uint32_t target = 0;
  storage::frame_result result;
};

struct queue_push_reply {
  std::vector<push_item_result> results; ///< in input order
  storage::micros created_at = 0;
  std::optional<api_error> failure;
  /// One per partition the push touched (items of one partition share it:
  /// a push of 1000 items to one partition names it once).
  std::vector<push_target> targets;

  const push_target& target_of(std::size_t item) const {
    return targets[results[item].target];
  }
};

/// A reply that carries only `failure` (every reply type has one).
template <class Reply>
Reply failed(std::optional<api_error> failure) {
  Reply r;
  r.failure = std::move(failure);
  return r;
}

/// A push that stored nothing.
inline queue_push_reply push_failed(std::optional<api_error> failure) {
  return failed<queue_push_reply>(std::move(failure));
}

/// One item of a broker push: any queue.
struct broker_push_item {
  std::string queue;
  push_item item;
};

} // namespace spool::actors
