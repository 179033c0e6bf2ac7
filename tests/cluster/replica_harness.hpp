#pragma once

// One replica over the simulation's disk, driven step by step as its shell
// would (tests/cluster/replica_core_test.cpp, snapshot_core_test.cpp).

#include <catch2/catch.hpp>

#include <new>

#include "cluster/replica_core.hpp"
#include "sim_disk.hpp"

namespace spool::cluster::test {

using sim::sim_disk;

inline const node_id n1{0}, n2{1}, n3{2};

struct replica {
  explicit replica(node_id self, std::size_t keep = 1000) :
      replica(config(self), keep) {
  }
  explicit replica(const replica_config& c, std::size_t keep = 1000,
                   std::size_t copies = 2) :
      disk(keep, copies), config_self(c.self), cfg(c), core(c, disk) {
    run(core.start(0));
  }
  static replica_config config(node_id self) {
    replica_config c;
    c.self = self;
    c.replicas = {n1, n2, n3};
    c.max_batch_entries = 16;
    return c;
  }
  /// Carries out `r` as the shell does; keeps what it sends.
  ready run(ready r) {
    if (!r.write.empty()) {
      auto res = disk.write(r.write);
      REQUIRE(res == write_result::ok);
    }
    disk.sync();
    last = r;
    return r;
  }
  ready in(node_id from, message m, millis now = 1) {
    return run(core.on_message({from, core_id(), std::move(m)}, now));
  }
  node_id core_id() const {
    return config_self;
  }
  void make_leader(epoch_t e) {
    in(n3, fence_req{e, std::nullopt});
    in(n3, lead_req{e});
  }
  /// Appends entries at `epoch` as a writer does.
  void write(epoch_t epoch, std::initializer_list<const char*> payloads) {
    writes w;
    auto seq = disk.last().seq;
    for (auto p : payloads)
      w.append.push_back(make_entry(epoch, ++seq, entry_kind::data, p));
    REQUIRE(disk.write(w) == write_result::ok);
    disk.sync();
  }
  /// A crash and a restart: what was not synced is gone, and a new core
  /// starts from the disk.
  void restart() {
    disk.crash();
    core.~replica_core();
    new (&core) replica_core(cfg, disk);
    run(core.start(0));
  }
  sim_disk disk;
  node_id config_self{};
  replica_config cfg;
  replica_core core;
  ready last;
};

/// `d`'s whole state in one piece of copy 1, as a leader would send it.
inline snapshot_piece one_piece(const sim_disk& d) {
  auto at = d.open_copy(1);
  REQUIRE(at);
  auto r = d.read_copy(1, "", SIZE_MAX);
  REQUIRE(r);
  REQUIRE(r->last);
  d.close_copy(1);
  return make_piece(1, *at, 0, true, r->data);
}

template <class T>
const T* sent(const std::vector<envelope>& v, node_id to) {
  for (auto& e : v)
    if (e.to == to)
      if (auto* m = std::get_if<T>(&e.msg))
        return m;
  return nullptr;
}

} // namespace spool::cluster::test
