#pragma once

/// Writing through the store writer, and the error of an actor that did not
/// answer: one piece for every actor of the broker core.

#include <caf/error.hpp>

#include <caf/actor_cast.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "actors/interfaces.hpp"

namespace spool::actors {

/// The error for a request no actor answered (it exited, or the request
/// failed in CAF): `internal`, "<who> unreachable: <CAF's reason>".
inline api_error unreachable(const caf::error& err, const char* who = "actor") {
  return make_error(errc::internal, who, " unreachable: ", caf::to_string(err));
}

/// The term of a write no slot's leadership fences: a barrier, or any
/// write on one node (docs/cluster.md, "Serving").
constexpr std::uint64_t no_term = 0;

/// Writes `batch` through `writer` and calls `done` once with the outcome:
/// none when it is durable, else the write's error, or `unreachable` when
/// the writer did not answer. `term`: the epoch of the slot's leadership
/// the batch was made in (`node_context::term`); a cluster refuses it
/// under any other.
template <class Self, class Done>
void write_then(Self* self, const writer_actor& writer, std::uint64_t term,
                storage::write_batch batch, Done done) {
  batch.term = term;
  // Shared by both handlers, never copied: `done` may hold a whole reply.
  auto k = std::make_shared<Done>(std::move(done));
  self->request(writer, caf::infinite, write_atom::value, std::move(batch))
      .then([k](write_result& r) { (*k)(std::move(r.failure)); },
            [k](caf::error& err) { (*k)(unreachable(err, "writer")); });
}

/// Tells `writer` that `self` holds part `key` (sent before the reply that
/// hands the part to its submitter) and returns its reference.
template <class Self>
part_ref hold_part(Self* self, const writer_actor& writer, core::part_key key) {
  part_ref part{self->address(), std::move(key)};
  self->send(writer, hold_atom::value, part);
  return part;
}

/// Sends each part's holder the outcome of its batch.
template <class Self>
void settle_parts(Self* self, const std::vector<part_ref>& parts,
                  core::part_outcome outcome) {
  for (auto& p : parts)
    if (auto h = caf::actor_cast<part_holder>(p.holder))
      self->send(h, settled_atom::value, p.key, outcome);
}

/// Gives `parts` up before submitting them: the writer forgets them, then
/// each holder hears `failed` (before anything the caller sends it next).
/// In that order: a holder that reuses a key after its settle (a partition
/// gives a failed seal's offsets back) holds the new part after the writer
/// dropped the old one.
template <class Self>
void abort_parts(Self* self, const writer_actor& writer,
                 std::vector<part_ref> parts) {
  if (parts.empty())
    return;
  self->send(writer, abort_atom::value, parts);
  settle_parts(self, parts, core::part_outcome::failed);
}

/// Submits `s` and calls `done` once with the outcome, as `write_then`.
/// The writer settles the parts before it answers; if it does not answer
/// at all, they are settled here as of unknown outcome.
template <class Self, class Done>
void propose_then(Self* self, const writer_actor& writer, std::uint64_t term,
                  submission s, Done done) {
  s.batch.term = term;
  auto k = std::make_shared<Done>(std::move(done));
  auto parts = s.parts;
  self->request(writer, caf::infinite, propose_atom::value, std::move(s))
      .then([k](write_result& r) { (*k)(std::move(r.failure)); },
            [self, k, parts = std::move(parts)](caf::error& err) {
              settle_parts(self, parts, core::part_outcome::unknown);
              (*k)(unreachable(err, "writer"));
            });
}

} // namespace spool::actors
