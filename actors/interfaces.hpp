#pragma once

/// The actor protocol of Spool, readable in one place: every typed actor
/// handle with a doc line per handler, and the atoms. Kept lean: it is
/// included widely. Messages carry storage types; they never leave the
/// process (node-to-node traffic uses Spool's msgpack protocol), so they are
/// allowed as local-only message types instead of being given inspectors.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <optional>

#include "storage/error.hpp"
#include "storage/mutation.hpp"

namespace spool::actors {

// -- atoms (at most 10 characters)
// ---------------------------------------------

using write_atom = caf::atom_constant<caf::atom("write")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;

// -- message types
// --------------------------------------------------------------

/// The outcome of a write batch: durable, or the error that kept it out.
struct write_result {
  std::optional<storage::error> failure;

  bool ok() const noexcept {
    return !failure;
  }
};

// -- actors
// ---------------------------------------------------------------------

/// The store writer (one per node): applies write batches with group commit.
/// Batches that arrive while a commit runs are committed together in the next
/// one; each reply comes after the commit that made its batch durable.
using writer_actor = caf::typed_actor<
    /// Applies the batch all or nothing; replies once it is durable.
    caf::replies_to<write_atom, storage::write_batch>::with<write_result>,
    /// Internal: commit everything pending (the writer sends it to itself).
    caf::reacts_to<flush_atom>>;

} // namespace spool::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::storage::write_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spool::actors::write_result)
