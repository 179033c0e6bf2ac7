#pragma once

/// Writing through the store writer, and the error of an actor that did not
/// answer: one piece for every actor of the broker core.

#include <caf/error.hpp>

#include <memory>
#include <optional>
#include <utility>

#include "actors/interfaces.hpp"

namespace spool::actors {

/// The error for a request no actor answered (it exited, or the request
/// failed in CAF): `internal`, "<who> unreachable: <CAF's reason>".
inline api_error unreachable(const caf::error& err, const char* who = "actor") {
  return make_error(errc::internal, who, " unreachable: ", caf::to_string(err));
}

/// Writes `batch` through `writer` and calls `done` once with the outcome:
/// none when it is durable, else the write's error, or `unreachable` when
/// the writer did not answer.
template <class Self, class Done>
void write_then(Self* self, const writer_actor& writer,
                storage::write_batch batch, Done done) {
  // Shared by both handlers, never copied: `done` may hold a whole reply.
  auto k = std::make_shared<Done>(std::move(done));
  self->request(writer, caf::infinite, write_atom::value, std::move(batch))
      .then([k](write_result& r) { (*k)(std::move(r.failure)); },
            [k](caf::error& err) { (*k)(unreachable(err, "writer")); });
}

} // namespace spool::actors
