#pragma once

/// The actor protocol of Spool, readable in one place: every typed actor
/// handle with a doc line per handler, the atoms, the message types. Kept
/// lean: it is included widely. Messages carry storage and core types; they
/// never leave the process (node-to-node traffic uses Spool's msgpack
/// protocol), so they are allowed as local-only message types instead of
/// being given CAF inspectors.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "actors/cursor/cursor_core.hpp"
#include "storage/error.hpp"
#include "storage/log.hpp"
#include "storage/mutation.hpp"

namespace spool::actors {

// -- atoms (at most 10 characters) --------------------------------------------

using write_atom = caf::atom_constant<caf::atom("write")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using pop_atom = caf::atom_constant<caf::atom("pop")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using extend_atom = caf::atom_constant<caf::atom("extend")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;

// -- message types ------------------------------------------------------------

/// The outcome of a write batch: durable, or the error that kept it out.
struct write_result {
  std::optional<storage::error> failure;
  bool ok() const noexcept {
    return !failure;
  }
};

/// The answer to a push: one result per frame, in input order.
struct push_reply {
  std::vector<storage::frame_result> results;
  storage::micros created_at = 0;
  std::optional<storage::error> failure;
};

/// A pop on one partition for one group.
struct pop_request {
  std::string group;
  std::size_t batch = 1;
  std::size_t max_bytes = SIZE_MAX;
  /// Chosen by the caller: one wildcard pop shares it across partitions.
  std::string lease_id;
  bool auto_ack = false;
};

/// A message as a pop delivers it.
struct delivered_frame {
  storage::stored_frame frame;
  std::uint32_t delivery_count = 0;
};

struct pop_reply {
  std::vector<delivered_frame> messages;
  /// The lease taken (none for autoAck or an empty answer).
  std::optional<core::lease_info> lease;
  /// Offsets below the watermark the cursor jumped over.
  std::optional<core::offset_range> skipped;
  /// Why `messages` is empty.
  core::empty_reason reason = core::empty_reason::empty;
  std::optional<storage::error> failure;
};

struct ack_reply {
  core::ack_error error = core::ack_error::none;
  bool lease_released = false;
  bool dead_lettered = false;
  std::optional<storage::error> failure;
};

struct extend_reply {
  core::extend_error error = core::extend_error::none;
  std::optional<core::mono_time> expires;
};

/// What a cursor needs to know of its partition with each request.
struct partition_view {
  storage::offset watermark;
  /// The readable end: next offset after the settled prefix of seals.
  storage::offset readable_end;
  storage::micros newest_created_at = 0;
};

// -- actors -------------------------------------------------------------------

/// The store writer (one per node): applies write batches with group commit.
/// Batches that arrive while a commit runs are committed together in the next
/// one; each reply comes after the commit that made its batch durable.
using writer_actor = caf::typed_actor<
    /// Applies the batch all or nothing; replies once it is durable.
    caf::replies_to<write_atom, storage::write_batch>::with<write_result>,
    /// Internal: commit everything pending (the writer sends it to itself).
    caf::reacts_to<flush_atom>>;

/// One consumer group's cursor on one partition (a child of the partition,
/// spawned on first contact). Owns a `core::cursor_core`; persists its record
/// through the writer before answering.
using cursor_actor = caf::typed_actor<
    /// Delivers up to `batch` frames under a new lease (or settles them at
    /// once with autoAck); empty answers carry a reason.
    caf::replies_to<pop_atom, pop_request, partition_view>::with<pop_reply>,
    /// Settles one frame of the live lease (semantics.md §4).
    caf::replies_to<ack_atom, core::ack_request,
                    partition_view>::with<ack_reply>,
    /// Moves the live lease's expiry to max(current, now + by).
    caf::replies_to<extend_atom, std::string,
                    std::chrono::milliseconds>::with<extend_reply>,
    /// Internal: the actor's one timer (lease expiry, retry delay), by id.
    caf::reacts_to<expire_atom, std::uint64_t>>;

/// One partition: owns its log (append, seal, dedup) and its cursors.
using partition_actor = caf::typed_actor<
    /// Appends frames (one commit, one or more segments); replies when durable.
    caf::replies_to<push_atom, std::vector<storage::frame>>::with<push_reply>,
    /// Pops for a group (forwarded to the group's cursor).
    caf::replies_to<pop_atom, pop_request>::with<pop_reply>,
    /// Acks one frame for a group (forwarded to the group's cursor).
    caf::replies_to<ack_atom, std::string, core::ack_request>::with<ack_reply>,
    /// Extends a group's lease (forwarded to the group's cursor).
    caf::replies_to<extend_atom, std::string, std::string,
                    std::chrono::milliseconds>::with<extend_reply>>;

} // namespace spool::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::write_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<spool::storage::frame>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::push_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::pop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::ack_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::extend_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::partition_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::core::ack_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::chrono::milliseconds)
