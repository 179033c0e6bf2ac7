#pragma once

/// Creating what a request needs and the directory lacks (queues in the
/// broker, partitions in a queue): one durable write, one creation at a time
/// through the owner's `async_mutex`, so two concurrent first pushes to a
/// new name create it once. The one piece of code behind both.

#include <caf/error.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "actors/interfaces.hpp"
#include "actors/write.hpp"
#include "core/queue/async_mutex.hpp"

namespace spool::actors {

using core::async_mutex;

inline storage::mutation creation_of(const storage::queue_record& rec) {
  return storage::mut::create_queue{rec};
}

inline storage::mutation creation_of(const storage::partition_record& rec) {
  return storage::mut::create_partition{rec};
}

/// Creates the entries of `names` that `exists` does not find: records from
/// `make`, written in one batch, then registered with `add`; then calls `k`
/// (with the first error, if any). `gate` lives in the owner's state.
/// `refuse`, if given, is asked once the gate is passed, for each entry to
/// create: an error there ends it all before anything is made. `term_of`
/// gives the batch its term from the first record made
/// (`write_batch::term`).
template <class Self, class Record>
void create_missing(
    Self* self, async_mutex* gate, writer_actor writer,
    std::function<std::uint64_t(const Record&)> term_of,
    std::vector<std::string> names,
    std::function<bool(const std::string&)> exists,
    std::function<Record(const std::string&)> make,
    std::function<expected<void>(const Record&)> add,
    std::function<void(std::optional<api_error>)> k,
    std::function<std::optional<api_error>(const std::string&)> refuse = {}) {
  if (std::all_of(names.begin(), names.end(), exists))
    return k(std::nullopt); // the usual case: nothing to create
  gate->wait([self, gate, writer, term_of = std::move(term_of),
              names = std::move(names), exists = std::move(exists),
              make = std::move(make), add = std::move(add), k = std::move(k),
              refuse = std::move(refuse)]() mutable {
    if (refuse)
      for (auto& name : names)
        if (!exists(name))
          if (auto why = refuse(name))
            return k(std::move(why));
    storage::write_batch create;
    std::vector<Record> fresh;
    for (auto& name : names)
      if (!exists(name)
          && std::none_of(fresh.begin(), fresh.end(),
                          [&](auto& r) { return r.name == name; })) {
        fresh.push_back(make(name));
        create.mutations.push_back(creation_of(fresh.back()));
      }
    if (fresh.empty())
      return k(std::nullopt);
    gate->enter();
    auto term = term_of(fresh.front());
    write_then(self, writer, term, std::move(create),
               [gate, fresh = std::move(fresh), add = std::move(add),
                k = std::move(k)](std::optional<api_error> failure) {
                 if (!failure)
                   for (auto& rec : fresh)
                     if (auto ok = add(rec); !ok && !failure)
                       failure = ok.err();
                 gate->leave();
                 k(std::move(failure));
               });
  });
}

} // namespace spool::actors
