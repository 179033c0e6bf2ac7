#pragma once

// What the benchmarks share besides clocks: failing loudly, and a scratch
// directory (with a store in it) removed afterwards.

#include <errno.h> // program_invocation_short_name (glibc)
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "storage/store.hpp"

namespace spool::bench {

/// Prints "<program>: <what>" and exits with status 1.
[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::exit(1);
}

/// A fresh directory under `parent`, removed with its contents.
struct temp_dir {
  std::filesystem::path path;
  explicit temp_dir(const std::filesystem::path& parent) {
    std::string tmpl = (parent / "spool-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      die("mkdtemp " + tmpl + ": " + std::strerror(errno));
    path = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// A store with default options in `dir`/db (dies if it cannot open).
inline std::unique_ptr<storage::store>
open_store(const std::filesystem::path& dir) {
  storage::store_options so;
  so.env.dir = dir / "db";
  auto opened = storage::store::open(so);
  if (!opened)
    die(storage::to_string(opened.err()));
  return std::move(*opened);
}

/// Creates queue `name` (default options) in `store` through its own
/// writer, then stops that writer: from here on the writer actor writes.
inline storage::queue_record create_queue(storage::store& store,
                                          const std::string& name) {
  storage::queue_record q;
  q.id = store.next_queue_id(name);
  q.name = name;
  if (auto r
      = store.writer()
            .submit(storage::write_batch{{storage::mut::create_queue{q}}})
            .get();
      !r)
    die(storage::to_string(r.err()));
  store.writer().stop();
  return q;
}

} // namespace spool::bench
